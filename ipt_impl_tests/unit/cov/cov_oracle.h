/* cov_oracle.h - the coverage tests' reference: edges from the block
 * decoder.
 *
 * oracle_edges() decodes a trace with a plain block decoder, the way the
 * pt_blk_next man page does (sync, drain events, next block; on an error,
 * sync forward to the next PSB), and derives the edges from the sequence
 * of blocks and events alone: a block that ends in a branch needing trace
 * leads to where the next block starts (or where an event says the flow
 * went), with the branch classified from its bytes by Zydis.  It is
 * written from the rules in ipt.h's >>api-cov comment, not from the
 * coverage layer's code, so that the two can disagree.
 *
 * Also: code memory behind a read callback (struct omem), edge lists, and
 * the bitmap the documented index function makes of an edge list. */
#ifndef COV_ORACLE_H
#define COV_ORACLE_H

#include "ipt.h"

#include <Zydis/Zydis.h>

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define ORACLE_FN static __attribute__((unused))
#else
#define ORACLE_FN static
#endif

/* ---- code memory ---- */

struct oseg {
	uint64_t vaddr;
	uint64_t size;
	uint8_t *bytes;
	/* Pages that read as unmapped: bit i for page i of the segment. */
	uint8_t *withheld;
};

struct omem {
	struct oseg seg[512];
	int nseg;
};

ORACLE_FN const struct oseg *omem_find(const struct omem *mem, uint64_t ip)
{
	int i;

	for (i = mem->nseg - 1; i >= 0; --i)
		if (ip - mem->seg[i].vaddr < mem->seg[i].size)
			return &mem->seg[i];
	return NULL;
}

ORACLE_FN int omem_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	const struct omem *mem = (const struct omem *) context;
	const struct oseg *seg = omem_find(mem, ip);
	uint64_t left;

	(void) asid;
	if (!seg)
		return -pte_nomap;
	left = seg->size - (ip - seg->vaddr);
	if (left < size)
		size = (size_t) left;
	memcpy(buffer, seg->bytes + (ip - seg->vaddr), size);
	return (int) size;
}

ORACLE_FN int omem_add(struct omem *mem, const uint8_t *bytes, uint64_t size,
		    uint64_t vaddr)
{
	struct oseg *seg;

	if (mem->nseg == (int) (sizeof(mem->seg) / sizeof(mem->seg[0])) ||
	    !size)
		return -1;
	seg = &mem->seg[mem->nseg++];
	seg->vaddr = vaddr;
	seg->size = size;
	seg->bytes = (uint8_t *) malloc((size_t) size);
	seg->withheld = NULL;
	if (!seg->bytes)
		return -1;
	memcpy(seg->bytes, bytes, (size_t) size);
	return 0;
}

ORACLE_FN void omem_fini(struct omem *mem)
{
	int i;

	for (i = 0; i < mem->nseg; ++i)
		free(mem->seg[i].bytes);
	mem->nseg = 0;
}

/* ---- edges ---- */

struct oedge {
	uint64_t from;
	uint64_t to;
	uint32_t kind;
};

struct olist {
	struct oedge *e;
	size_t n;
	size_t cap;
};

ORACLE_FN void olist_add(struct olist *list, uint64_t from, uint64_t to,
		      uint32_t kind)
{
	if (list->n == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 256;
		struct oedge *e;

		e = (struct oedge *) realloc(list->e, cap * sizeof(*e));
		if (!e)
			abort();
		list->e = e;
		list->cap = cap;
	}
	list->e[list->n].from = from;
	list->e[list->n].to = to;
	list->e[list->n].kind = kind;
	list->n += 1;
}

ORACLE_FN void olist_on_edge(void *context, uint64_t from, uint64_t to,
			  enum ipt_cov_kind kind)
{
	olist_add((struct olist *) context, from, to, (uint32_t) kind);
}

/* The edges of @list whose kind is in @kinds, in order. */
ORACLE_FN void olist_filter(struct olist *out, const struct olist *list,
			 uint32_t kinds)
{
	size_t i;

	out->n = 0;
	for (i = 0; i < list->n; ++i)
		if (list->e[i].kind & kinds)
			olist_add(out, list->e[i].from, list->e[i].to,
				  list->e[i].kind);
}

/* Index of the first difference, or -1 if @a and @b are the same. */
ORACLE_FN long olist_diff(const struct olist *a, const struct olist *b)
{
	size_t i;

	for (i = 0; i < a->n && i < b->n; ++i)
		if (a->e[i].from != b->e[i].from || a->e[i].to != b->e[i].to ||
		    a->e[i].kind != b->e[i].kind)
			return (long) i;
	return a->n == b->n ? -1 : (long) i;
}

/* The bitmap as documented: counter (mix(to) ^ (mix(from) >> 1)) mod size
 * per edge, wrapping, or stopping at 255 with @saturate. */
ORACLE_FN uint64_t omix(uint64_t v)
{
	return (v ^ (v >> 31)) * 0x7fb5d329728ea185ull;
}

ORACLE_FN void olist_bitmap(uint8_t *map, size_t size, const struct olist *list,
			 int saturate)
{
	size_t i;

	for (i = 0; i < list->n; ++i) {
		uint8_t *c = &map[(omix(list->e[i].to) ^
				   (omix(list->e[i].from) >> 1)) & (size - 1)];

		if (!saturate || *c != 0xff)
			*c = (uint8_t) (*c + 1);
	}
}

/* ---- the reference ---- */

typedef int (*oracle_read_fn)(uint8_t *buffer, size_t size,
			      const struct pt_asid *asid, uint64_t ip,
			      void *context);

struct oracle {
	oracle_read_fn read;
	void *context;
	struct olist *out;
	/* The branch the last block ended with, until we know where it went:
	 * its IP, kind (0: none, ipt_cov_taken: any conditional branch) and
	 * the IP after it. */
	uint64_t from;
	uint32_t kind;
	uint64_t next;
	/* Walks given up on code that loops without trace. */
	unsigned stuck;
};

/* A branch went to @to. */
ORACLE_FN void oracle_to(struct oracle *o, uint64_t to)
{
	if (!o->kind)
		return;
	olist_add(o->out, o->from, to,
		  o->kind == ipt_cov_taken && to == o->next ?
		  (uint32_t) ipt_cov_not_taken : o->kind);
	o->kind = 0;
}

/* What the last instruction of @b needs from the trace, by its bytes. */
ORACLE_FN void oracle_block(struct oracle *o, const struct pt_block *b)
{
	ZydisDecoder dec;
	ZydisDecodedInstruction zi;
	uint8_t raw[16];
	int size, relative;

	if (!b->ninsn)
		return;
	oracle_to(o, b->ip);
	o->from = b->end_ip;

	switch (b->iclass) {
	case ptic_return:
		o->kind = ipt_cov_return;
		return;
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
		o->kind = ipt_cov_far;
		return;
	case ptic_indirect:
		o->kind = ipt_cov_jump;
		return;
	case ptic_cond_jump:
	case ptic_call:
	case ptic_jump:
		break;
	default:
		return;
	}

	memset(raw, 0, sizeof(raw));
	if (b->truncated) {
		memcpy(raw, b->raw, b->size);
		size = b->size;
	} else {
		/* The callback may return fewer bytes than asked for. */
		for (size = 0; size < 15;) {
			int got = o->read(raw + size, (size_t) (15 - size),
					  NULL, b->end_ip + (uint64_t) size,
					  o->context);

			if (got <= 0)
				break;
			size += got;
		}
		if (!size)
			return;
	}
	/* An unknown mode decodes with 16-bit defaults, as the block decoder
	 * does (see ipt.h's >>ild). */
	switch (b->mode) {
	case ptem_unknown:
	case ptem_16bit:
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LEGACY_16,
				 ZYDIS_STACK_WIDTH_16);
		break;
	case ptem_32bit:
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LEGACY_32,
				 ZYDIS_STACK_WIDTH_32);
		break;
	default:
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
				 ZYDIS_STACK_WIDTH_64);
		break;
	}
	ZydisDecoderEnableMode(&dec, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, raw,
							(ZyanUSize) size,
							&zi))) {
		/* Zydis 4 lacks JMPABS (REX2 D5 with W0, A1, imm64): a jump
		 * whose target the trace gives.  Segment, LOCK and REP
		 * prefixes may come first, and REX before one of those;
		 * REX right before REX2 is #UD. */
		int i = 0;

		while (i + 3 < size &&
		       (raw[i] == 0x26 || raw[i] == 0x2e || raw[i] == 0x36 ||
			raw[i] == 0x3e || raw[i] == 0x64 || raw[i] == 0x65 ||
			raw[i] == 0xf0 || raw[i] == 0xf2 || raw[i] == 0xf3 ||
			(raw[i] & 0xf0) == 0x40))
			++i;
		if (b->iclass == ptic_jump && i + 3 < size &&
		    raw[i] == 0xd5 && !(i && (raw[i - 1] & 0xf0) == 0x40) &&
		    !(raw[i + 1] & 0x88) && raw[i + 2] == 0xa1)
			o->kind = ipt_cov_jump;
		return;
	}
	/* A direct branch has a relative immediate; a RIP-relative memory
	 * operand does not count. */
	relative = zi.raw.imm[0].is_relative || zi.raw.imm[1].is_relative;

	if (b->iclass == ptic_cond_jump) {
		o->kind = ipt_cov_taken;
		o->next = b->end_ip + zi.length;
		if (b->mode != ptem_64bit)
			o->next &= 0xffffffffull;
	} else if (!relative) {
		o->kind = b->iclass == ptic_call ? ipt_cov_call : ipt_cov_jump;
	}
}

ORACLE_FN void oracle_event(struct oracle *o, const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_enabled:
		if (ev->status_update)
			break;
		o->kind = 0;
		olist_add(o->out, 0, ev->variant.enabled.ip, ipt_cov_enable);
		break;
	case ptev_disabled:
		if (ev->ip_suppressed) {
			o->kind = 0;
			if (!ev->status_update)
				olist_add(o->out, 0, 0, ipt_cov_disable);
			break;
		}
		oracle_to(o, ev->variant.disabled.ip);
		if (!ev->status_update)
			olist_add(o->out, ev->variant.disabled.ip, 0,
				  ipt_cov_disable);
		break;
	case ptev_async_disabled:
		oracle_to(o, ev->variant.async_disabled.at);
		olist_add(o->out, ev->variant.async_disabled.at, 0,
			  ipt_cov_disable);
		break;
	case ptev_async_branch:
		oracle_to(o, ev->variant.async_branch.from);
		olist_add(o->out, ev->variant.async_branch.from,
			  ev->variant.async_branch.to, ipt_cov_async);
		break;
	case ptev_overflow:
		o->kind = 0;
		break;
	default:
		break;
	}
}

/* Decode from the sync point with @status until an error or the end;
 * give up on code that runs without trace as IPT_COV_IDLE_MAX says (the
 * fuzzing builds lower it), counted as stuck. */
ORACLE_FN int oracle_walk(struct oracle *o, struct pt_block_decoder *dec,
		       int status)
{
	uint64_t idle = 0;

	for (;;) {
		struct pt_block b;

		while (status & pts_event_pending) {
			struct pt_event ev;

			idle = 0;
			status = pt_blk_event(dec, &ev, sizeof(ev));
			if (status < 0)
				return status;
			oracle_event(o, &ev);
		}
		if (status & pts_eos)
			return -pte_eos;

		status = pt_blk_next(dec, &b, sizeof(b));
		if (status < 0) {
			/* A block cut short by an error still shows where
			 * the flow went. */
			if (b.ninsn)
				oracle_to(o, b.ip);
			return status;
		}
		oracle_block(o, &b);

		idle += b.ninsn;
		if (idle > IPT_COV_IDLE_MAX) {
			o->stuck += 1;
			return -pte_bad_query;
		}
		/* The block's last instruction used trace: it leaves an edge
		 * pending. */
		if (o->kind)
			idle = 0;
	}
}

/* All edges of the trace in @config over @image into @out, of the address
 * space with CR3 @cr3 (ipt_blk_set_cr3_filter; pt_asid_no_cr3: all);
 * returns the number of errors, and in *@stuck (if not NULL) how many of
 * them gave up on code that loops without trace. */
ORACLE_FN int oracle_edges_stuck(struct olist *out,
				 const struct pt_config *config,
				 struct pt_image *image, oracle_read_fn read,
				 void *context, uint64_t cr3, unsigned *stuck)
{
	struct pt_block_decoder *dec;
	struct pt_config c = *config;
	struct oracle o;
	uint64_t last = 0;
	int errors = 0, synced = 0;

	memset(&o, 0, sizeof(o));
	o.read = read;
	o.context = context;
	o.out = out;
	out->n = 0;

	memset(&c.flags, 0, sizeof(c.flags));
	dec = pt_blk_alloc_decoder(&c);
	if (!dec)
		return -1;
	pt_blk_set_image(dec, image);
	ipt_blk_set_cr3_filter(dec, cr3);

	for (;;) {
		uint64_t at;
		int status = pt_blk_sync_forward(dec);

		if (status == -pte_eos)
			break;
		if (pt_blk_get_sync_offset(dec, &at) < 0)
			at = (uint64_t) (c.end - c.begin);
		if (synced && at <= last)
			break;
		synced = 1;
		last = at;
		o.kind = 0;
		if (status >= 0)
			status = oracle_walk(&o, dec, status);
		if (status == -pte_eos)
			break;
		errors += 1;
	}
	pt_blk_free_decoder(dec);
	if (stuck)
		*stuck = o.stuck;
	return errors;
}

ORACLE_FN int oracle_edges_cr3(struct olist *out,
			       const struct pt_config *config,
			       struct pt_image *image, oracle_read_fn read,
			       void *context, uint64_t cr3)
{
	return oracle_edges_stuck(out, config, image, read, context, cr3,
				  NULL);
}

ORACLE_FN int oracle_edges(struct olist *out, const struct pt_config *config,
			struct pt_image *image, oracle_read_fn read,
			void *context)
{
	return oracle_edges_cr3(out, config, image, read, context,
				pt_asid_no_cr3);
}

#endif

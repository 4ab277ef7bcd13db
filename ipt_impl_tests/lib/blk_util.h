/* Helpers for the block and instruction decoder tests: a trace builder on
 * top of the packet encoder, code memory behind a read callback, and
 * drivers that log what the decoders report as text, one line each:
 *
 *     b IP END NINSN [s][t]     a block (speculative, truncated)
 *     i IP SIZE [s]             an instruction
 *     e TYPE IP                 an event (IP 0 if it has none)
 *     x ERROR                   an error that stopped decoding
 */
#ifndef T_BLK_UTIL_H
#define T_BLK_UTIL_H

#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

#include <stdio.h>
#include <string.h>
#include <stdarg.h>

#if defined(__GNUC__)
#define T_UNUSED __attribute__((unused))
#else
#define T_UNUSED
#endif

/* ---- traces ---- */

struct tb {
	uint8_t buf[8192];
	struct pt_config config;
	struct pt_encoder *enc;
	int errors;
};

static T_UNUSED void tb_init(struct tb *t)
{
	memset(t, 0, sizeof(*t));
	pt_config_init(&t->config);
	t->config.begin = t->buf;
	t->config.end = t->buf + sizeof(t->buf);
	t->enc = pt_alloc_encoder(&t->config);
	if (!t->enc)
		t->errors += 1;
}

static T_UNUSED void tb_put(struct tb *t, const struct pt_packet *p)
{
	if (!t->enc || pt_enc_next(t->enc, p) < 0)
		t->errors += 1;
}

static T_UNUSED void tb_simple(struct tb *t, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	tb_put(t, &p);
}

static T_UNUSED void tb_ip(struct tb *t, enum pt_packet_type type,
		  enum pt_ip_compression ipc, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	tb_put(t, &p);
}

static T_UNUSED void tb_tnt(struct tb *t, uint64_t bits, uint8_t n)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = n;
	p.payload.tnt.payload = bits;
	tb_put(t, &p);
}

static T_UNUSED void tb_mode_exec(struct tb *t, enum pt_exec_mode mode)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(mode);
	tb_put(t, &p);
}

static T_UNUSED void tb_mode_tsx(struct tb *t, int intx, int abrt)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_tsx;
	p.payload.mode.bits.tsx.intx = intx ? 1 : 0;
	p.payload.mode.bits.tsx.abrt = abrt ? 1 : 0;
	tb_put(t, &p);
}

/* PIP with its NR bit: @nr set, the CR3 of a guest (VMX non-root). */
static T_UNUSED void tb_pip_nr(struct tb *t, uint64_t cr3, int nr)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_pip;
	p.payload.pip.cr3 = cr3;
	p.payload.pip.nr = nr ? 1 : 0;
	tb_put(t, &p);
}

static T_UNUSED void tb_pip(struct tb *t, uint64_t cr3)
{
	tb_pip_nr(t, cr3, 0);
}

static T_UNUSED void tb_tsc(struct tb *t, uint64_t tsc)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_tsc;
	p.payload.tsc.tsc = tsc;
	tb_put(t, &p);
}

static T_UNUSED void tb_cbr(struct tb *t, uint8_t ratio)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_cbr;
	p.payload.cbr.ratio = ratio;
	tb_put(t, &p);
}

static T_UNUSED void tb_ptw(struct tb *t, uint64_t payload, int ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_ptw;
	p.payload.ptw.plc = 1;
	p.payload.ptw.payload = payload;
	p.payload.ptw.ip = ip ? 1 : 0;
	tb_put(t, &p);
}

/* PSB, MODE.EXEC 64-bit, FUP @ip (enabled), PSBEND. */
static T_UNUSED void tb_start64(struct tb *t, uint64_t ip)
{
	tb_simple(t, ppt_psb);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, ip);
	tb_simple(t, ppt_psbend);
}

/* PSB, MODE.EXEC 64-bit, FUP @ip (enabled), PIP @cr3 with NR @nr,
 * PSBEND. */
static T_UNUSED void tb_start64_pip(struct tb *t, uint64_t ip, uint64_t cr3,
				   int nr)
{
	tb_simple(t, ppt_psb);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, ip);
	tb_pip_nr(t, cr3, nr);
	tb_simple(t, ppt_psbend);
}

/* Close the trace: the config now covers exactly what was written. */
static T_UNUSED struct pt_config *tb_done(struct tb *t)
{
	uint64_t offset = 0;

	if (!t->enc || pt_enc_get_offset(t->enc, &offset) < 0)
		t->errors += 1;
	pt_free_encoder(t->enc);
	t->enc = NULL;
	t->config.end = t->buf + offset;
	return &t->config;
}

/* ---- code memory ---- */

struct mem {
	uint64_t base;
	uint8_t bytes[0x400];
	size_t size;
	/* Only answer for this cr3, unless it is pt_asid_no_cr3. */
	uint64_t cr3;
	/* At most this many bytes per read, if not zero. */
	size_t chunk;
	unsigned long reads;
};

static T_UNUSED void mem_init(struct mem *m, uint64_t base, const uint8_t *code,
		     size_t size)
{
	memset(m, 0, sizeof(*m));
	m->base = base;
	m->cr3 = pt_asid_no_cr3;
	if (size > sizeof(m->bytes))
		size = sizeof(m->bytes);
	memcpy(m->bytes, code, size);
	m->size = size;
}

static T_UNUSED int mem_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context)
{
	struct mem *m = (struct mem *) context;
	uint64_t off;

	m->reads += 1;
	if (m->cr3 != pt_asid_no_cr3 && (!asid || asid->cr3 != m->cr3))
		return -pte_nomap;
	if (ip < m->base || ip >= m->base + m->size)
		return -pte_nomap;

	off = ip - m->base;
	if (size > m->size - off)
		size = (size_t) (m->size - off);
	if (m->chunk && size > m->chunk)
		size = m->chunk;
	memcpy(buffer, m->bytes + off, size);
	return (int) size;
}

/* An image that reads @m through mem_read; NULL if out of memory. */
static T_UNUSED struct pt_image *mem_image(struct mem *m, const char *name)
{
	struct pt_image *image = pt_image_alloc(name);

	if (image)
		pt_image_set_callback(image, mem_read, m);
	return image;
}

/* ---- logs ---- */

struct log {
	char text[16384];
	size_t len;
};

static T_UNUSED void log_init(struct log *l)
{
	l->text[0] = 0;
	l->len = 0;
}

static T_UNUSED void log_add(struct log *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->len >= sizeof(l->text) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->text + l->len, sizeof(l->text) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t) n;
	if (l->len > sizeof(l->text) - 1)
		l->len = sizeof(l->text) - 1;
}

static const char *ev_name(enum pt_event_type type)
{
	static const char *const names[] = {
		"enabled", "disabled", "async_disabled", "async_branch",
		"paging", "async_paging", "overflow", "exec_mode", "tsx",
		"stop", "vmcs", "async_vmcs", "exstop", "mwait", "pwre",
		"pwrx", "ptwrite", "tick", "cbr", "mnt", "tip", "tnt",
		"iflags", "interrupt", "iret", "smi", "rsm", "sipi", "init",
		"vmentry", "vmexit", "shutdown", "uintr", "uiret", "trig",
		"swintr", "syscall"
	};

	if ((size_t) type < sizeof(names) / sizeof(names[0]))
		return names[type];
	return "?";
}

/* The IP an event reports, for the log. */
static uint64_t ev_ip(const struct pt_event *ev)
{
	if (ev->ip_suppressed)
		return 0;
	switch (ev->type) {
	case ptev_enabled: return ev->variant.enabled.ip;
	case ptev_disabled: return ev->variant.disabled.ip;
	case ptev_async_disabled: return ev->variant.async_disabled.at;
	case ptev_async_branch: return ev->variant.async_branch.from;
	case ptev_async_paging: return ev->variant.async_paging.ip;
	case ptev_overflow: return ev->variant.overflow.ip;
	case ptev_exec_mode: return ev->variant.exec_mode.ip;
	case ptev_tsx: return ev->variant.tsx.ip;
	case ptev_ptwrite: return ev->variant.ptwrite.ip;
	case ptev_tick: return ev->variant.tick.ip;
	default: return 0;
	}
}

static T_UNUSED void log_event(struct log *l, const struct pt_event *ev)
{
	log_add(l, "e %s %llx\n", ev_name(ev->type),
		(unsigned long long) ev_ip(ev));
}

/* A block with instructions, for the log. */
static T_UNUSED void log_block(struct log *l, const struct pt_block *b)
{
	if (b->ninsn)
		log_add(l, "b %llx %llx %u%s%s\n",
			(unsigned long long) b->ip,
			(unsigned long long) b->end_ip, b->ninsn,
			b->speculative ? " s" : "",
			b->truncated ? " t" : "");
}

/* Decode all the trace of @d from the PSB at offset zero. */
static T_UNUSED void run_blk_on(struct log *l, struct pt_block_decoder *d)
{
	int status;

	log_init(l);
	status = pt_blk_sync_set(d, 0);
	while (status >= 0) {
		struct pt_block b;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_blk_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
			log_event(l, &ev);
		}
		if (status < 0)
			break;

		status = pt_blk_next(d, &b, sizeof(b));
		log_block(l, &b);
	}
	if (status != -pte_eos)
		log_add(l, "x %s\n", pt_errstr(pt_errcode(status)));
}

/* Decode all of @config with a block decoder over @image. */
static T_UNUSED void run_blk(struct log *l, const struct pt_config *config,
			     struct pt_image *image)
{
	struct pt_block_decoder *d;

	log_init(l);
	d = pt_blk_alloc_decoder(config);
	if (!d) {
		log_add(l, "x alloc\n");
		return;
	}
	pt_blk_set_image(d, image);
	run_blk_on(l, d);
	pt_blk_free_decoder(d);
}

#ifndef USE_LIBIPT
/* run_blk_stream's decoder @d needs more trace: its end moves to @end,
 * once (*@moved). */
static T_UNUSED void blk_stream_move(struct log *l,
				     struct pt_block_decoder *d, uint8_t *end,
				     int *moved)
{
	*moved = 1;
	if (ipt_blk_extend(d, end, 0) < 0)
		log_add(l, "x extend\n");
}

/* What a block decoder over @image reports of the trace of @config, its
 * end first at @cut, more to come (ipt_blk_extend), moved to the end the
 * first time a call needs more (@cut at the end: all at once); after an
 * error, it synchronizes forward again.  A call that needs more is
 * undone and made again once the end has moved. */
static T_UNUSED void run_blk_stream(struct log *l,
				    const struct pt_config *config,
				    struct pt_image *image, uint8_t *cut)
{
	struct pt_config part = *config;
	struct pt_block_decoder *d;
	uint8_t *end = config->end;
	int status, steps = 0, moved = 0;

	log_init(l);
	/* A decoder's end moves on only: it starts at @cut. */
	part.end = cut;
	d = pt_blk_alloc_decoder(&part);
	if (!d || pt_blk_set_image(d, image) < 0 ||
	    (cut < end && ipt_blk_extend(d, cut, 1) < 0)) {
		log_add(l, "x decoder\n");
		pt_blk_free_decoder(d);
		return;
	}
	status = pt_blk_sync_forward(d);
	while (steps++ < 10000) {
		struct pt_block block;
		struct pt_event ev;

		/* Here only a sync needs more, or finds no PSB before the
		 * end (the other calls say need-more then). */
		if ((status == -ipt_pte_need_more || status == -pte_eos) &&
		    !moved) {
			blk_stream_move(l, d, end, &moved);
			status = pt_blk_sync_forward(d);
			continue;
		}
		if (status < 0) {
			log_add(l, "x %s\n", pt_errstr(pt_errcode(status)));
			if (status == -pte_eos)
				break;
			status = pt_blk_sync_forward(d);
			continue;
		}
		if (status & pts_event_pending) {
			memset(&ev, 0, sizeof(ev));
			status = pt_blk_event(d, &ev, sizeof(ev));
			if (status == -ipt_pte_need_more && !moved) {
				blk_stream_move(l, d, end, &moved);
				status = pts_event_pending;
				continue;
			}
			if (status >= 0)
				log_event(l, &ev);
			continue;
		}
		if (status & pts_eos)
			break;
		memset(&block, 0, sizeof(block));
		status = pt_blk_next(d, &block, sizeof(block));
		if (status == -ipt_pte_need_more && !moved) {
			blk_stream_move(l, d, end, &moved);
			status = 0;
			continue;
		}
		log_block(l, &block);
	}
	pt_blk_free_decoder(d);
}

/* How many cuts of the trace of @config (run_blk_stream at each byte)
 * report otherwise than the whole of it; the first is printed, as @name. */
static T_UNUSED int blk_stream_bad(const struct pt_config *config,
				   struct pt_image *image, const char *name)
{
	static struct log whole, piece;
	uint8_t *cut;
	int bad = 0;

	run_blk_stream(&whole, config, image, config->end);
	for (cut = config->begin + 1; cut < config->end; ++cut) {
		run_blk_stream(&piece, config, image, cut);
		if (strcmp(whole.text, piece.text)) {
			if (!bad)
				printf("%s: cut at %ld:\n%s---\n%s", name,
				       (long) (cut - config->begin),
				       whole.text, piece.text);
			bad += 1;
		}
	}
	return bad;
}
#endif

/* Called after each line run_insn_with() logs: @insn is the instruction
 * just logged, NULL after an event. */
typedef void (*run_hook)(struct log *l, struct pt_insn_decoder *d,
			 const struct pt_insn *insn, void *context);

/* Decode all the trace of @d from the PSB at offset zero, calling @hook
 * (if not NULL) after each line. */
static T_UNUSED void run_insn_with(struct log *l, struct pt_insn_decoder *d,
				   run_hook hook, void *context)
{
	int status;

	log_init(l);
	status = pt_insn_sync_set(d, 0);
	while (status >= 0) {
		struct pt_insn insn;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
			log_event(l, &ev);
			if (hook)
				hook(l, d, NULL, context);
		}
		if (status < 0)
			break;

		/* An event the last call did not announce comes now (libipt's
		 * ptxed fetches it). */
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (status == -pte_event_ignored)
			status = pts_event_pending;
		else if (status >= 0) {
			log_add(l, "i %llx %u%s\n",
				(unsigned long long) insn.ip, insn.size,
				insn.speculative ? " s" : "");
			if (hook)
				hook(l, d, &insn, context);
		}
	}
	if (status != -pte_eos)
		log_add(l, "x %s\n", pt_errstr(pt_errcode(status)));
}

static T_UNUSED void run_insn_on(struct log *l, struct pt_insn_decoder *d)
{
	run_insn_with(l, d, NULL, NULL);
}

/* Decode all of @config with an instruction decoder over @image. */
static T_UNUSED void run_insn(struct log *l, const struct pt_config *config,
			      struct pt_image *image)
{
	struct pt_insn_decoder *d;

	log_init(l);
	d = pt_insn_alloc_decoder(config);
	if (!d) {
		log_add(l, "x alloc\n");
		return;
	}
	pt_insn_set_image(d, image);
	run_insn_on(l, d);
	pt_insn_free_decoder(d);
}

/* Compare a log with what we expect; print both if they differ. */
static T_UNUSED int log_is(const struct log *l, const char *expected, const char *name)
{
	if (strcmp(l->text, expected) == 0)
		return 1;
	printf("-- %s: got\n%s-- expected\n%s", name, l->text, expected);
	return 0;
}

#endif

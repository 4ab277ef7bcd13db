/* fault_util.h - guest memory with pages that are not there yet, and
 * decode loops that fetch them on demand, for the fault/resume tests.
 *
 * struct gmem holds regions of code at guest addresses (later regions lie
 * over earlier ones, as ptxed's --raw images do).  With a withholding rate,
 * each page is missing at first with that probability; the read callback
 * answers -pte_nomap for it and, like a view of memory, stops short of it.
 * gmem_release makes a missing page readable, as an agent that copies it
 * out of the guest would.
 *
 * The decode loops reduce what a decoder reports to one 64-bit hash per
 * item (block, instruction, event, error), so that long traces compare
 * cheaply and a difference is found by its index:
 *
 *     hv_run_blk / hv_run_insn   decode all of config over an image whose
 *                                callback reads gmem; on -pte_nomap with a
 *                                fault on a withheld page, release the
 *                                page and call *_next again; otherwise
 *                                resynchronize forward as ptxed does
 *
 * A block cut short by a fault is joined to the block that continues it,
 * so that both decodes give the same items. */
#ifndef HV_FAULT_UTIL_H
#define HV_FAULT_UTIL_H

#include "ipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define HV_UNUSED __attribute__((unused))
#else
#define HV_UNUSED
#endif

enum { GMEM_REGIONS = 64 };

struct gmem {
	struct {
		uint64_t vaddr;
		const uint8_t *bytes;
		uint64_t size;
	} r[GMEM_REGIONS];
	int n;
	/* Percent of pages missing at first, and which: a hash of the page
	 * with @seed decides. */
	unsigned pct;
	uint64_t seed;
	/* Pages made readable since, sorted. */
	uint64_t *released;
	size_t nreleased, cap;
	/* Release calls ipt_image_invalidate on every other page. */
	struct pt_image *image;
	unsigned long faults;
	/* Of those, the ones pt_*_resync stopped at. */
	unsigned long resync_faults;
};

static HV_UNUSED uint64_t hv_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static HV_UNUSED int gmem_add(struct gmem *m, uint64_t vaddr,
			      const uint8_t *bytes, uint64_t size)
{
	if (m->n == GMEM_REGIONS)
		return 0;
	m->r[m->n].vaddr = vaddr;
	m->r[m->n].bytes = bytes;
	m->r[m->n].size = size;
	m->n += 1;
	return 1;
}

static HV_UNUSED size_t gmem_find_released(const struct gmem *m, uint64_t page)
{
	size_t lo = 0, hi = m->nreleased;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->released[mid] < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static HV_UNUSED int gmem_missing(const struct gmem *m, uint64_t addr)
{
	uint64_t page = addr >> 12;
	size_t at;

	if (!m->pct || hv_mix(page ^ m->seed) % 100 >= m->pct)
		return 0;
	at = gmem_find_released(m, page);
	return at == m->nreleased || m->released[at] != page;
}

/* Make the page at @addr readable.  Returns 1 if it was missing. */
static HV_UNUSED int gmem_release(struct gmem *m, uint64_t addr)
{
	uint64_t page = addr >> 12;
	size_t at;

	if (!gmem_missing(m, addr))
		return 0;
	if (m->nreleased == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		uint64_t *v = (uint64_t *) realloc(m->released,
						   cap * sizeof(*v));

		if (!v)
			return 0;
		m->released = v;
		m->cap = cap;
	}
	at = gmem_find_released(m, page);
	memmove(&m->released[at + 1], &m->released[at],
		(m->nreleased - at) * sizeof(*m->released));
	m->released[at] = page;
	m->nreleased += 1;
	m->faults += 1;
	if (m->image && (m->faults & 1))
		(void) ipt_image_invalidate(m->image, NULL, page << 12,
					    (page + 1) << 12);
	return 1;
}

static HV_UNUSED int gmem_read(uint8_t *buffer, size_t size,
			       const struct pt_asid *asid, uint64_t ip,
			       void *context)
{
	const struct gmem *m = (const struct gmem *) context;
	uint64_t n, page;
	int i, j;

	(void) asid;
	for (i = m->n - 1; i >= 0; --i)
		if (m->r[i].vaddr <= ip && ip - m->r[i].vaddr < m->r[i].size)
			break;
	if (i < 0 || gmem_missing(m, ip))
		return -pte_nomap;

	n = m->r[i].size - (ip - m->r[i].vaddr);
	if (n > size)
		n = size;
	/* A region above this one, or a missing page, ends the read. */
	for (j = i + 1; j < m->n; ++j)
		if (m->r[j].vaddr > ip && m->r[j].vaddr - ip < n)
			n = m->r[j].vaddr - ip;
	for (page = (ip >> 12) + 1; (page << 12) - ip < n; ++page)
		if (gmem_missing(m, page << 12)) {
			n = (page << 12) - ip;
			break;
		}
	memcpy(buffer, m->r[i].bytes + (ip - m->r[i].vaddr), (size_t) n);
	return (int) n;
}

/* ---- what the decoders report ---- */

struct hv_out {
	uint64_t *h;
	size_t n, cap;
	int overflow;
	/* Stop after @limit instructions, if not zero; @capped says it did. */
	uint64_t insns, limit;
	int capped;
	/* After an error, go on with pt_*_resync, as ptxed does, instead of
	 * synchronizing forward. */
	int resync;
};

static HV_UNUSED int hv_out_full(struct hv_out *o, uint64_t ninsn)
{
	o->insns += ninsn;
	if (o->limit && o->insns >= o->limit)
		o->capped = 1;
	return o->overflow || o->capped;
}

static HV_UNUSED void hv_out_add(struct hv_out *o, uint64_t a, uint64_t b,
				 uint64_t c)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 1024;
		uint64_t *v;

		if (cap > (1u << 24)) {
			o->overflow = 1;
			return;
		}
		v = (uint64_t *) realloc(o->h, cap * sizeof(*v));
		if (!v) {
			o->overflow = 1;
			return;
		}
		o->h = v;
		o->cap = cap;
	}
	o->h[o->n++] = hv_mix(hv_mix(hv_mix(a) ^ b) ^ c);
}

/* A packet at @offset: its type, its size and its IP payload. */
static HV_UNUSED void hv_out_packet(struct hv_out *o,
				    const struct pt_packet *p, uint64_t offset)
{
	hv_out_add(o, 'p' | ((uint64_t) p->type << 8), offset,
		   p->payload.ip.ip ^ p->size);
}

static HV_UNUSED void hv_out_event(struct hv_out *o, const struct pt_event *ev)
{
	struct pt_event e = *ev;
	const uint8_t *p = (const uint8_t *) &e.variant;
	uint64_t h = 0;
	size_t i;

	for (i = 0; i < sizeof(e.variant); ++i)
		h = h * 131 + p[i];
	hv_out_add(o, 'e' | ((uint64_t) e.type << 8) |
		   ((uint64_t) e.ip_suppressed << 16) |
		   ((uint64_t) e.status_update << 17) |
		   ((uint64_t) e.has_tsc << 18), e.has_tsc ? e.tsc : 0, h);
}

/* The first index where @a and @b differ; -1 if they are the same.  A
 * decode that stopped at its instruction limit may have cut its last
 * item short: then only what both have before it counts. */
static HV_UNUSED long hv_out_diff(const struct hv_out *a,
				  const struct hv_out *b)
{
	size_t i, n = a->n < b->n ? a->n : b->n;

	if (a->overflow || b->overflow)
		return 0;
	if (a->capped || b->capped)
		n = n ? n - 1 : 0;
	for (i = 0; i < n; ++i)
		if (a->h[i] != b->h[i])
			return (long) i;
	if (a->capped || b->capped || a->n == b->n)
		return -1;
	return (long) i;
}

/* Did the call that returned @status stop at a page @m withholds?  Then
 * the page is released. */
static HV_UNUSED int hv_fetch(struct gmem *m, int status, int have,
			      const struct ipt_fault *fault)
{
	if (status >= 0 || have <= 0)
		return 0;
	if (status != -pte_nomap && status != -pte_bad_insn)
		return -1;
	return gmem_release(m, fault->addr) ? 1 : 0;
}

/* The part of a decode loop that is the same for both decoders: on an
 * error (and at first, with @status -pte_nosync), note it and synchronize
 * forward (or resynchronize, with @o->resync, and synchronize forward if
 * that fails); on a pending event, take it.  A sync that stops at missing
 * code starts over at the same PSB once the page is there, a resync or an
 * event call is made again. */
#define HV_SYNC_OR_EVENT(P)                                                  \
	if (status < 0) {                                                    \
		if (status == -pte_eos)                                      \
			break;                                               \
		if (status != -pte_nosync)                                   \
			hv_out_add(o, 'x', (uint64_t) -status, 0);           \
		if (o->resync && status != -pte_nosync) {                    \
			while (status = pt_##P##_resync(d),                  \
			       hv_fetch(m, status, ipt_##P##_get_fault(d,    \
					&fault, sizeof(fault)), &fault) > 0) \
				m->resync_faults += 1;                       \
			/* Code that never comes: on to the next PSB. */     \
			if (status >= 0 || status == -pte_eos)               \
				continue;                                    \
			hv_out_add(o, 'x', (uint64_t) -status, 1);           \
		}                                                            \
		status = pt_##P##_sync_forward(d);                           \
		while (hv_fetch(m, status, ipt_##P##_get_fault(d, &fault,    \
				sizeof(fault)), &fault) > 0) {               \
			uint64_t sync = 0;                                   \
									     \
			(void) pt_##P##_get_sync_offset(d, &sync);           \
			status = pt_##P##_sync_set(d, sync);                 \
		}                                                            \
		continue;                                                    \
	}                                                                    \
	if (status & pts_event_pending) {                                    \
		int pending = status;                                        \
									     \
		status = pt_##P##_event(d, &ev, sizeof(ev));                 \
		if (hv_fetch(m, status, ipt_##P##_get_fault(d, &fault,       \
				sizeof(fault)), &fault) > 0)                 \
			status = pending;                                    \
		else if (status >= 0)                                        \
			hv_out_event(o, &ev);                                \
		continue;                                                    \
	}

static HV_UNUSED void hv_out_block(struct hv_out *o, const struct pt_block *b,
				   uint64_t ip, uint32_t ninsn)
{
	hv_out_add(o, 'b' | ((uint64_t) b->mode << 8) |
		   ((uint64_t) b->speculative << 16) |
		   ((uint64_t) b->truncated << 17), ip ^ ((uint64_t) ninsn << 40),
		   b->end_ip);
}

static HV_UNUSED void hv_decode_blk(struct hv_out *o,
				    struct pt_block_decoder *d, struct gmem *m)
{
	/* The instructions of blocks cut short, by a fault or because they
	 * were full, from @held_ip on. */
	uint64_t held_ip = 0;
	uint32_t held = 0;
	struct pt_block last;
	int status;

	ipt_blk_set_wait_for_code(d, 1);
	memset(&last, 0, sizeof(last));
	status = -pte_nosync;
	while (!o->overflow) {
		struct ipt_fault fault;
		struct pt_block b;
		struct pt_event ev;
		int fetched;

		HV_SYNC_OR_EVENT(blk);

		status = pt_blk_next(d, &b, sizeof(b));
		fetched = hv_fetch(m, status, ipt_blk_get_fault(d, &fault,
							     sizeof(fault)),
				   &fault);
		if (fetched < 0)
			hv_out_add(o, 'x', 2, 0);
		if (b.ninsn) {
			if (!held)
				held_ip = b.ip;
			held += b.ninsn;
			last = b;
		}
		if (fetched > 0) {
			status = 0;
			continue;
		}
		if (!held || (b.ninsn == UINT16_MAX && !status &&
			      (!o->limit || o->insns + held < o->limit)))
			continue;
		hv_out_block(o, &last, held_ip, held);
		if (hv_out_full(o, held))
			break;
		held = 0;
	}
}

static HV_UNUSED void hv_run_blk(struct hv_out *o, const struct pt_config *c,
				 struct pt_image *image, struct gmem *m)
{
	struct pt_block_decoder *d = pt_blk_alloc_decoder(c);

	if (!d) {
		hv_out_add(o, 'x', 1, 0);
		return;
	}
	pt_blk_set_image(d, image);
	hv_decode_blk(o, d, m);
	pt_blk_free_decoder(d);
}

static HV_UNUSED void hv_decode_insn(struct hv_out *o,
				     struct pt_insn_decoder *d, struct gmem *m)
{
	int status;

	ipt_insn_set_wait_for_code(d, 1);
	status = -pte_nosync;
	while (!o->overflow) {
		struct ipt_fault fault;
		struct pt_insn insn;
		struct pt_event ev;
		int fetched;

		HV_SYNC_OR_EVENT(insn);

		status = pt_insn_next(d, &insn, sizeof(insn));
		/* The last instruction of a block may come with its error. */
		if (insn.iclass != ptic_error) {
			hv_out_add(o, 'i' | ((uint64_t) insn.mode << 8) |
				   ((uint64_t) insn.speculative << 16) |
				   ((uint64_t) insn.size << 24), insn.ip,
				   insn.iclass);
			if (hv_out_full(o, 1))
				break;
		}
		fetched = hv_fetch(m, status, ipt_insn_get_fault(d, &fault,
							      sizeof(fault)),
				   &fault);
		if (fetched < 0)
			hv_out_add(o, 'x', 2, 0);
		if (fetched > 0)
			status = 0;
	}
}

static HV_UNUSED void hv_run_insn(struct hv_out *o, const struct pt_config *c,
				  struct pt_image *image, struct gmem *m)
{
	struct pt_insn_decoder *d = pt_insn_alloc_decoder(c);

	if (!d) {
		hv_out_add(o, 'x', 1, 0);
		return;
	}
	pt_insn_set_image(d, image);
	hv_decode_insn(o, d, m);
	pt_insn_free_decoder(d);
}

#endif

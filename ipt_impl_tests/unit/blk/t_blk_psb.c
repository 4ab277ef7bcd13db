/* The short way through a PSB+'s status events against the general one,
 * from a translation unit with its own static copy of the implementation:
 *
 *   - ipt__evt_next_status against pt_evt_next(), step by step on a copy
 *     of the event decoder: the same event and the same decoder state
 *     after it (and nothing moved while more trace may come);
 *   - ipt__blk_take_events (the coverage decoder's way) against
 *     pt_blk_event() one call at a time, on two block decoders in
 *     lockstep: the same events, statuses, blocks and decoder state;
 *   - a PSB+ with tracing off that only restates the state, taken whole
 *     (ipt__blk_set_quiet_psb, the coverage decoder's way), and a PIP
 *     with tracing off, taken without its paging event, against their
 *     events taken one by one: between blocks the same decoder state,
 *     the same events but those, the same blocks;
 *   - and so the coverage decoder's edges against cov_oracle.h's from
 *     the block decoder, first pass and warm;
 *   - the block decoder with its trace arriving in two pieces, cut at
 *     every byte (ipt_blk_extend), against the whole trace at once.
 *
 * On traces of PSB+s that restate what the decoder knows, and of PSB+s
 * that change the mode, the CR3, the VMCS or the IP, that say tracing is
 * off, follow one another, end in an OVF or follow one, or hold time
 * packets; of a PSB+ taken whole again by its bytes (ipt__evt_psb_peek's
 * memo) after the mode changed, or right behind the same bytes
 * (ipt__evt_psb_again, also with the PSB after it known), or after one
 * too long for the memo; on random
 * traces of PSB+s with tracing off, of every packet a PSB+ may hold, in
 * any order, with PADs between, some twice, some disagreeing with the
 * state, some errors, with and without a CR3 filter and iflags events;
 * and on every trace of the conformance suites given as arguments (their
 * libipt and real folders) at the event level.  Built
 * with IPT_BLK_GENERAL_PATH the short ways are off, and the counts of
 * what they took say so: the checks that they took something fail. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "blk_util.h"
#include "files.h"
#include "../cov/cov_oracle.h"

#include <dirent.h>
#include <stdlib.h>

/* 1000: jz 1000 (74 fe); 1002: nop (90); 1003: jmp *%rax (ff e0). */
static const uint8_t code[] = { 0x74, 0xfe, 0x90, 0xff, 0xe0 };

/* How often each short way took something; PSB+s taken whole. */
static unsigned long evt_short, blk_short, blk_quiet;

/* ---- the event decoder ---- */

/* Step through the trace of @config with pt_evt_next(), trying
 * ipt__evt_next_status on a copy first at each step; with @more, the
 * trace's end is said to move (the short way must do nothing). */
static void evt_compare(const struct pt_config *config, int more,
			const char *name)
{
	struct pt_event_decoder *d = pt_evt_alloc_decoder(config);
	int status, steps = 0, bad = 0;

	CHECK(d != NULL);
	if (!d)
		return;
	if (more)
		CHECK_EQ(ipt_evt_extend(d, config->end, 1), 0);

	status = pt_evt_sync_forward(d);
	while (status >= 0 && steps++ < 100000) {
		struct pt_event_decoder copy;
		struct pt_event ea, eb;
		int sa, sb;

		memcpy(&copy, d, sizeof(copy));
		memset(&ea, 0xa5, sizeof(ea));
		memset(&eb, 0x5a, sizeof(eb));
		sa = ipt__evt_next_status(&copy, &ea);
		if (more && (sa != 0 || !ipt__evt_same(&copy, d)))
			bad += 1;
		sb = pt_evt_next(d, &eb, sizeof(eb));
		if (sa > 0) {
			evt_short += 1;
			if (sb != 0 || memcmp(&ea, &eb, sizeof(ea)) ||
			    !ipt__evt_same(&copy, d))
				bad += 1;
		} else if (!sa) {
			sa = pt_evt_next(&copy, &ea, sizeof(ea));
			if (sa != sb || (sb >= 0 &&
					 (memcmp(&ea, &eb, sizeof(ea)) ||
					  !ipt__evt_same(&copy, d))))
				bad += 1;
		} else if (sa != sb) {
			bad += 1;
		}
		if (sb < 0) {
			if (sb == -pte_eos || sb == -ipt_pte_need_more)
				break;
			status = pt_evt_sync_forward(d);
		}
	}
	if (bad)
		printf("%s%s: %d steps differ\n", name, more ? " (more)" : "",
		       bad);
	CHECK_EQ(bad, 0);
	pt_evt_free_decoder(d);
}

/* ---- the block decoder ---- */

struct evlog {
	struct pt_event ev[64];
	int n;
};

static void evlog_take(void *context, const struct pt_event *ev)
{
	struct evlog *l = (struct evlog *) context;

	if (l->n < 64)
		memcpy(&l->ev[l->n], ev, sizeof(*ev));
	l->n += 1;
}

/* pt_blk_event() while events are pending. */
static int blk_events_general(struct pt_block_decoder *d, int status,
			      struct evlog *l)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		memset(&ev, 0, sizeof(ev));
		status = pt_blk_event(d, &ev, sizeof(ev));
		if (status >= 0)
			evlog_take(l, &ev);
	}
	return status;
}

/* The same as the coverage decoder takes them. */
static int blk_events_short(struct pt_block_decoder *d, int status,
			    struct evlog *l)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;
		int before = l->n;

		if (ipt__blk_take_events(d, evlog_take, l, &status)) {
			if (l->n > before)
				blk_short += 1;
			continue;
		}
		memset(&ev, 0, sizeof(ev));
		status = pt_blk_event(d, &ev, sizeof(ev));
		if (status >= 0)
			evlog_take(l, &ev);
	}
	return status;
}

static struct pt_block_decoder *blk_new(const struct pt_config *config,
					struct pt_image *image, uint64_t cr3)
{
	struct pt_block_decoder *d = pt_blk_alloc_decoder(config);

	if (d && (pt_blk_set_image(d, image) < 0 ||
		  ipt_blk_set_cr3_filter(d, cr3) < 0)) {
		pt_blk_free_decoder(d);
		d = NULL;
	}
	return d;
}

/* Whether @lc holds the events of @la but the status updates of PSB+s
 * with tracing off and the paging events of PIPs with tracing off, in
 * order; tracing is off before them if @off. */
static int evlog_quiet_of(const struct evlog *la, const struct evlog *lc,
			  int off)
{
	int i, j = 0;

	if (la->n > 64 || lc->n > la->n)
		return 0;
	for (i = 0; i < la->n; ++i) {
		const struct pt_event *ev = &la->ev[i];

		if (ev->type == ptev_enabled)
			off = 0;
		else if (ev->type == ptev_disabled ||
			 ev->type == ptev_async_disabled)
			off = 1;
		if (j < lc->n && !memcmp(ev, &lc->ev[j], sizeof(*ev))) {
			j += 1;
			continue;
		}
		if (!ev->status_update && !(off && ev->type == ptev_paging))
			return 0;
	}
	return j == lc->n;
}

/* Three block decoders in lockstep: events the general way on one, the
 * short way on the other two, the third taking PSB+s with tracing off
 * whole; with the CR3 filter @cr3 (pt_asid_no_cr3: none). */
static void blk_compare_cr3(const struct pt_config *config,
			    struct pt_image *image, uint64_t cr3,
			    const char *name)
{
	struct pt_block_decoder *a = blk_new(config, image, cr3);
	struct pt_block_decoder *b = blk_new(config, image, cr3);
	struct pt_block_decoder *c = blk_new(config, image, cr3);
	int sa, sb, sc, steps = 0, bad = 0, off;

	CHECK(a != NULL && b != NULL && c != NULL);
	if (!a || !b || !c) {
		pt_blk_free_decoder(a);
		pt_blk_free_decoder(b);
		pt_blk_free_decoder(c);
		return;
	}
	ipt__blk_set_quiet_psb(c, 1);
	sa = pt_blk_sync_forward(a);
	sb = pt_blk_sync_forward(b);
	sc = pt_blk_sync_forward(c);
	while (steps++ < 10000) {
		struct evlog la, lb, lc;
		struct pt_block ba, bb, bc;

		if (sa != sb || sa != sc) {
			bad += 1;
			break;
		}
		if (sa < 0) {
			if (sa == -pte_eos)
				break;
			sa = pt_blk_sync_forward(a);
			sb = pt_blk_sync_forward(b);
			sc = pt_blk_sync_forward(c);
			continue;
		}
		la.n = lb.n = lc.n = 0;
		off = !a->enabled;
		sa = blk_events_general(a, sa, &la);
		sb = blk_events_short(b, sb, &lb);
		sc = blk_events_short(c, sc, &lc);
		if (sa != sb || la.n != lb.n ||
		    memcmp(la.ev, lb.ev,
			   (size_t) (la.n < 64 ? la.n : 64) * sizeof(la.ev[0])) ||
		    ipt__blk_same(a, b) != 1)
			bad += 1;
		if (sa != sc || !evlog_quiet_of(&la, &lc, off) ||
		    ipt__blk_same(a, c) != 1 ||
		    a->vm.known != c->vm.known ||
		    a->vm.non_root != c->vm.non_root)
			bad += 1;
		if (sa < 0 || (sa & pts_eos))
			continue;
		memset(&ba, 0, sizeof(ba));
		memset(&bb, 0, sizeof(bb));
		memset(&bc, 0, sizeof(bc));
		sa = pt_blk_next(a, &ba, sizeof(ba));
		sb = pt_blk_next(b, &bb, sizeof(bb));
		sc = pt_blk_next(c, &bc, sizeof(bc));
		if (memcmp(&ba, &bb, sizeof(ba)) || memcmp(&ba, &bc, sizeof(ba)))
			bad += 1;
	}
	if (bad)
		printf("%s: %d steps differ\n", name, bad);
	CHECK_EQ(bad, 0);
	blk_quiet += (unsigned long) c->quiet_psbs;
	pt_blk_free_decoder(a);
	pt_blk_free_decoder(b);
	pt_blk_free_decoder(c);
}

static void blk_compare(const struct pt_config *config,
			struct pt_image *image, const char *name)
{
	blk_compare_cr3(config, image, pt_asid_no_cr3, name);
}

/* The coverage decoder's edges against the block decoder's, with the
 * CR3 filter @cr3. */
static void cov_compare(const struct pt_config *config,
			struct pt_image *image, struct mem *m, uint64_t cr3,
			const char *name)
{
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	int pass;

	(void) oracle_edges_cr3(&want, config, image, mem_read, m, cr3);
	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	cov = ipt_cov_alloc_decoder(config, &cc);
	if (CHECK(cov != NULL)) {
		CHECK_EQ(ipt_cov_set_image(cov, image), 0);
		CHECK_EQ(ipt_cov_set_cr3_filter(cov, cr3), 0);
		for (pass = 0; pass < 2; ++pass) {
			long at;

			got.n = 0;
			CHECK_EQ(ipt_cov_set_trace(cov, config->begin,
						   config->end, 1), 0);
			CHECK_EQ(ipt_cov_decode(cov), 0);
			at = olist_diff(&got, &want);
			if (!CHECK(at < 0))
				printf("%s, pass %d: edge %ld of %zu/%zu\n",
				       name, pass, at, got.n, want.n);
		}
	}
	ipt_cov_free_decoder(cov);
	free(want.e);
	free(got.e);
}

/* ---- the traces ---- */

/* A PSB+ at @ip (none: tracing off) with @mode, @cr3, and extras; a long
 * one has more bytes (PADs) than ipt__evt_psb_peek's memo keeps. */
enum { psb_tsx = 1, psb_vmcs = 2, psb_time = 4, psb_ovf = 8, psb_long = 16 };

static void tb_psb(struct tb *t, uint64_t ip, enum pt_exec_mode mode,
		   uint64_t cr3, unsigned int extra)
{
	struct pt_packet p;

	tb_simple(t, ppt_psb);
	if (extra & psb_time) {
		tb_tsc(t, 0x100000);
		tb_cbr(t, 0x20);
	}
	if (extra & psb_tsx)
		tb_mode_tsx(t, 1, 0);
	tb_mode_exec(t, mode);
	if (ip)
		tb_ip(t, ppt_fup, pt_ipc_sext_48, ip);
	tb_pip(t, cr3);
	if (extra & psb_vmcs) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_vmcs;
		p.payload.vmcs.base = 0x12345000;
		tb_put(t, &p);
	}
	if (extra & psb_long) {
		int i;

		for (i = 0; i < IPT__EVT_PSB_MEMO_BYTES; ++i)
			tb_simple(t, ppt_pad);
	}
	tb_simple(t, (extra & psb_ovf) ? ppt_ovf : ppt_psbend);
}

/* Loop at 1000 taking @n TNT bits (taken), in TNT-8s. */
static void tb_loop(struct tb *t, int n)
{
	for (; n > 0; n -= 6)
		tb_tnt(t, 0x3f >> (n < 6 ? 6 - n : 0), (uint8_t) (n < 6 ? n : 6));
}

static int scenario(struct tb *t, int which)
{
	tb_init(t);
	tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
	tb_loop(t, 7);
	switch (which) {
	case 0:
		/* Restating what the decoder knows, three in a row. */
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, psb_vmcs | psb_time);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, psb_tsx);
		tb_loop(t, 5);
		break;
	case 1:
		/* Another CR3, then another VMCS. */
		tb_psb(t, 0x1000, ptem_64bit, 0x5000, 0);
		tb_loop(t, 3);
		tb_psb(t, 0x1000, ptem_64bit, 0x5000, psb_vmcs);
		tb_loop(t, 3);
		break;
	case 2:
		/* Another mode: a bad status update. */
		tb_psb(t, 0x1000, ptem_32bit, 0x4000, 0);
		tb_loop(t, 3);
		break;
	case 3:
		/* Another IP: its events wait for the flow to get there,
		 * which the trace then contradicts (an error either way). */
		tb_psb(t, 0x1002, ptem_64bit, 0x4000, 0);
		tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 3);
		break;
	case 4:
		/* Tracing off, PSB+s saying so, then on again. */
		tb_tnt(t, 0x0, 1);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, psb_time | psb_tsx);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 4);
		break;
	case 5:
		/* Tracing off in a PSB+ while it is on: a bad status update,
		 * then the decoder goes on from the next PSB. */
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_loop(t, 2);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
		tb_loop(t, 2);
		break;
	case 6:
		/* An overflow, a PSB+ after it; a PSB+ that an OVF ends. */
		tb_simple(t, ppt_ovf);
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1000);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
		tb_loop(t, 2);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, psb_ovf);
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 2);
		tb_psb(t, 0, ptem_64bit, 0x4000, psb_ovf);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 2);
		break;
	case 7:
		/* A PSB+ the trace ends in. */
		tb_simple(t, ppt_psb);
		tb_mode_exec(t, ptem_64bit);
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1000);
		break;
	case 8:
		/* Run with BDM70: tracing off asynchronously, PSB+s with a
		 * FUP that says nothing as a TIP.PGE follows (PADs aside),
		 * the first taken whole. */
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1000);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
		tb_simple(t, ppt_pad);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 3);
		tb_tnt(t, 0x0, 1);
		tb_ip(t, ppt_tip_pgd, pt_ipc_sext_48, 0x1000);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
		tb_tsc(t, 0x200000);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 2);
		break;
	case 9:
		/* Tracing off, the same PSB+ twice (the second known by its
		 * bytes), tracing on in another mode and off again, and that
		 * PSB+ once more: it now disagrees with the mode, a bad
		 * status update. */
		tb_tnt(t, 0x0, 1);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_mode_exec(t, ptem_32bit);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 2);
		tb_tnt(t, 0x0, 1);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
		tb_loop(t, 2);
		break;
	case 10:
		/* Tracing off, the same PSB+ twice (the second right behind
		 * the first, taken by its bytes alone), one too long to keep
		 * with another CR3, then the first one's bytes again: they
		 * restate a CR3 the decoder no longer has. */
		tb_tnt(t, 0x0, 1);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0, ptem_64bit, 0x5000, psb_long);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 60);
		break;
	case 11:
	case 12:
		/* Tracing off, the same PSB+ four times, one right behind
		 * the other (the second's PSB and the third's known with
		 * the PSB+ before them: the decoder is synchronized at the
		 * last when tracing is on again); or three, then PADs
		 * before a fourth. */
		tb_tnt(t, 0x0, 1);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		if (which == 12) {
			tb_simple(t, ppt_pad);
			tb_simple(t, ppt_pad);
		}
		tb_psb(t, 0, ptem_64bit, 0x4000, 0);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
		tb_loop(t, 60);
		break;
	default:
		return 0;
	}
	return 1;
}

/* ---- random PSB+s with tracing off ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) ((rng >> 11) % n);
}

static void tb_pads(struct tb *t)
{
	uint32_t n = rnd(4) ? 0 : rnd(12);

	while (n--)
		tb_simple(t, ppt_pad);
}

/* A PSB+ of the packets a PSB+ may hold, in random order, mostly what
 * one with tracing off holds. */
static void tb_psb_random(struct tb *t)
{
	struct pt_packet p;
	uint32_t order[8], i, n = 8;

	for (i = 0; i < n; ++i)
		order[i] = i;
	for (i = n - 1; i > 0; --i) {
		uint32_t j = rnd(i + 1), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	tb_simple(t, ppt_psb);
	for (i = 0; i < n; ++i) {
		uint32_t twice = rnd(12) == 0;

		do {
			tb_pads(t);
			memset(&p, 0, sizeof(p));
			switch (order[i]) {
			case 0:
				if (rnd(2))
					tb_mode_tsx(t, (int) rnd(2), 0);
				break;
			case 1:
				if (rnd(3))
					tb_mode_exec(t, rnd(12) ? ptem_64bit :
								  ptem_32bit);
				break;
			case 2:
				if (rnd(4))
					tb_pip_nr(t, rnd(2) ? 0x4000 : 0x5000,
						  (int) rnd(2));
				break;
			case 3:
				if (rnd(2)) {
					p.type = ppt_vmcs;
					p.payload.vmcs.base =
						rnd(2) ? 0x12345000 : 0x6000;
					tb_put(t, &p);
				}
				break;
			case 4:
				if (rnd(4))
					tb_cbr(t, (uint8_t) (rnd(12) ?
							     1 + rnd(60) : 0));
				break;
			case 5:
				if (!rnd(8))
					tb_tsc(t, 0x100000 + rnd(0x10000));
				break;
			case 6:
				if (!rnd(12)) {
					p.type = ppt_mnt;
					p.payload.mnt.payload = rnd(100);
					tb_put(t, &p);
				}
				break;
			default:
				if (!rnd(16))
					tb_ip(t, ppt_fup, pt_ipc_sext_48,
					      0x1000);
				break;
			}
		} while (twice--);
	}
	tb_pads(t);
	tb_simple(t, rnd(16) ? ppt_psbend : ppt_ovf);
}

/* Tracing on and off @rounds times, PSB+s while it is off. */
static void tb_random(struct tb *t, int rounds)
{
	tb_init(t);
	tb_psb(t, 0x1000, ptem_64bit, 0x4000, 0);
	while (rounds--) {
		uint32_t n;

		tb_loop(t, 1 + (int) rnd(8));
		/* Off at the jump, with or without its destination, or
		 * asynchronously at the loop. */
		switch (rnd(3)) {
		case 0:
			tb_tnt(t, 0x0, 1);
			tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
			break;
		case 1:
			tb_tnt(t, 0x0, 1);
			tb_ip(t, ppt_tip_pgd, pt_ipc_sext_48, 0x1000);
			break;
		default:
			tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1000);
			tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
			break;
		}
		for (n = rnd(4); n > 0; --n) {
			tb_pads(t);
			tb_psb_random(t);
		}
		/* A PIP with tracing off, maybe at a time of its own. */
		if (!rnd(4)) {
			if (rnd(2))
				tb_tsc(t, 0x180000 + rnd(0x10000));
			tb_pip_nr(t, rnd(2) ? 0x4000 : 0x5000, (int) rnd(2));
		}
		if (!rnd(8))
			tb_tsc(t, 0x200000 + rnd(0x10000));
		tb_pads(t);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
	}
	tb_loop(t, 3);
}

/* Every conformance trace in @dir/cases/x/trace.pt, at the event
 * level. */
static int corpus(const char *dir)
{
	char path[4096];
	struct dirent *e;
	DIR *cases;
	int n = 0;

	snprintf(path, sizeof(path), "%s/cases", dir);
	cases = opendir(path);
	CHECK(cases != NULL);
	if (!cases)
		return 0;
	while ((e = readdir(cases))) {
		struct pt_config config;
		uint8_t *trace;
		size_t size;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/cases/%s/trace.pt", dir,
			 e->d_name);
		trace = read_file(path, &size);
		if (!trace)
			continue;
		pt_config_init(&config);
		config.begin = trace;
		config.end = trace + size;
		evt_compare(&config, 0, e->d_name);
		evt_compare(&config, 1, e->d_name);
		free(trace);
		n += 1;
	}
	closedir(cases);
	return n;
}

int main(int argc, char **argv)
{
	struct pt_image *image;
	struct mem m;
	int which, i, traces = 0;
	unsigned long quiet;

	mem_init(&m, 0x1000, code, sizeof(code));
	image = mem_image(&m, "psb");
	CHECK(image != NULL);
	if (!image)
		return check_done();

	for (which = 0;; ++which) {
		struct pt_config *config;
		struct tb t;
		char name[32];

		if (!scenario(&t, which)) {
			pt_free_encoder(t.enc);
			break;
		}
		config = tb_done(&t);
		CHECK_EQ(t.errors, 0);
		if (which == 8)
			config->errata.bdm70 = 1;
		snprintf(name, sizeof(name), "scenario %d", which);
		evt_compare(config, 0, name);
		evt_compare(config, 1, name);
		quiet = blk_quiet;
		blk_compare(config, image, name);
		CHECK_EQ(blk_stream_bad(config, image, name), 0);
		cov_compare(config, image, &m, pt_asid_no_cr3, name);
		if (which == 8)
			CHECK_EQ(blk_quiet - quiet, 1);
		if (which == 9)
			CHECK(blk_quiet - quiet >= 2);
		if (which == 10)
			CHECK_EQ(blk_quiet - quiet, 4);
		if (which == 11 || which == 12)
			CHECK_EQ(blk_quiet - quiet, 4);
	}
	CHECK(evt_short > 0);
	CHECK(blk_short > 0);

	for (i = 0; i < 200; ++i) {
		struct pt_config *config;
		struct tb t;
		char name[32];

		tb_random(&t, 1 + (int) rnd(6));
		config = tb_done(&t);
		CHECK_EQ(t.errors, 0);
		if (i & 1)
			config->nom_freq = 4;
		if (i & 2)
			config->flags.variant.block.enable_iflags_events = 1;
		if (i & 4)
			config->errata.bdm70 = 1;
		snprintf(name, sizeof(name), "random %d", i);
		evt_compare(config, 0, name);
		blk_compare(config, image, name);
		blk_compare_cr3(config, image, 0x4000, name);
		cov_compare(config, image, &m, pt_asid_no_cr3, name);
		cov_compare(config, image, &m, 0x4000, name);
	}
	CHECK(blk_quiet > 0);

	for (i = 1; i < argc; ++i)
		traces += corpus(argv[i]);
	CHECK(argc < 2 || traces > 0);
	printf("%lu status events the short way in the event decoder, %lu "
	       "runs of events in the block decoder, %lu PSB+s taken whole; "
	       "%d corpus traces\n",
	       evt_short, blk_short, blk_quiet, traces);
	pt_image_free(image);
	return check_done();
}

/* Synchronizing again, with the block and instruction decoders.
 *
 * Walking a trace backwards, PSB by PSB, with every decoder that can:
 * sync_backward, decode a little, sync_set back to the sync point,
 * sync_backward again.  On random traces (PSB+ with and without an IP, cut
 * short, overflows, enables and disables) the sync offsets must fall
 * strictly, each must be a PSB, and the walk must end: starting at a PSB
 * may read on into the next one (an overflow without an IP, a PSB+ that
 * never ends), and such a PSB is no place to go back to.
 *
 * Resynchronizing after an error, as the man page's loop does (decode
 * until an error, pt_*_resync, again): an error inside PSB+ sends the
 * decoder back to the PSB's start once, and a second error there no
 * further on moves it to the next PSB - never round and round. */
#include "blk_util.h"
#include "check.h"

#include <stdlib.h>

#define BASE 0x1000u

/* Each instruction is a "jz next" (74 00): every step takes a TNT bit. */
static struct mem code;

static uint32_t rng;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

static uint64_t rnd_ip(void)
{
	return BASE + 2u * rnd((uint32_t) (sizeof(code.bytes) / 2));
}

struct trace {
	struct tb tb;
	uint64_t psb[64];
	int npsb;
};

static void add_psb(struct trace *t)
{
	uint64_t offset = 0;

	if (t->tb.enc && pt_enc_get_offset(t->tb.enc, &offset) >= 0 &&
	    t->npsb < 64)
		t->psb[t->npsb++] = offset;
	tb_simple(&t->tb, ppt_psb);
}

static void random_trace(struct trace *t, uint32_t seed)
{
	int seg, nseg, i, n;

	rng = seed;
	memset(t->psb, 0, sizeof(t->psb));
	t->npsb = 0;
	tb_init(&t->tb);
	nseg = 2 + (int) rnd(6);
	for (seg = 0; seg < nseg; seg++) {
		add_psb(t);
		if (rnd(4))
			tb_mode_exec(&t->tb, ptem_64bit);
		if (rnd(3))
			tb_ip(&t->tb, ppt_fup, pt_ipc_sext_48, rnd_ip());
		if (!rnd(8))
			tb_simple(&t->tb, ppt_ovf);
		if (rnd(6))
			tb_simple(&t->tb, ppt_psbend);
		n = (int) rnd(6);
		for (i = 0; i < n; i++) {
			switch (rnd(9)) {
			case 0: case 1: case 2: {
				uint8_t bits = (uint8_t) (1 + rnd(6));

				tb_tnt(&t->tb, rnd(64) & ((1u << bits) - 1),
				       bits);
				break;
			}
			case 3:
				tb_ip(&t->tb, ppt_tip, pt_ipc_sext_48, rnd_ip());
				break;
			case 4:
				tb_simple(&t->tb, ppt_ovf);
				break;
			case 5:
				tb_ip(&t->tb, ppt_fup, pt_ipc_sext_48, rnd_ip());
				break;
			case 6:
				tb_ip(&t->tb, ppt_tip_pgd, pt_ipc_suppressed, 0);
				break;
			case 7:
				tb_ip(&t->tb, ppt_tip_pge, pt_ipc_sext_48,
				      rnd_ip());
				break;
			default:
				tb_simple(&t->tb, ppt_pad);
				break;
			}
		}
	}
	(void) tb_done(&t->tb);
}

static int is_psb(const struct trace *t, uint64_t offset)
{
	int i;

	for (i = 0; i < t->npsb; i++)
		if (t->psb[i] == offset)
			return 1;
	return 0;
}

/* One walk's bookkeeping, the same for every decoder.  A walk is one
 * check: it passes when none of its steps went wrong. */
struct walk {
	const struct trace *t;
	const char *who;
	uint32_t seed;
	uint64_t prev;
	int steps, bad;
};

/* Counts @ok against the walk; prints what went wrong. */
static int walk_check(struct walk *w, int ok, const char *what)
{
	if (!ok) {
		w->bad++;
		printf("     %s, seed %u: %s\n", w->who, w->seed, what);
	}
	return ok;
}

/* Checks the sync offset @s the walk has just reached; zero ends it. */
static int walk_step(struct walk *w, uint64_t s)
{
	int ok = walk_check(w, s < w->prev, "sync offset did not fall") &&
		 walk_check(w, is_psb(w->t, s), "sync offset not a PSB") &&
		 walk_check(w, ++w->steps <= w->t->npsb, "walk too long");

	if (!ok)
		printf("     sync offset %llu after %llu\n",
		       (unsigned long long) s, (unsigned long long) w->prev);
	w->prev = s;
	return ok;
}

static void walk_init(struct walk *w, const struct trace *t, const char *who,
		      uint32_t seed)
{
	w->t = t;
	w->who = who;
	w->seed = seed;
	w->prev = UINT64_MAX;
	w->steps = 0;
	w->bad = 0;
}

/* Decoding a few steps before going back is part of the walk: it moves the
 * decoder on, and sync_set must undo that.  @items: how many. */
static void walk_evt(const struct trace *t, uint32_t seed, int items)
{
	struct pt_event_decoder *d = pt_evt_alloc_decoder(&t->tb.config);
	struct walk w;
	uint64_t s;
	int i;

	walk_init(&w, t, "evt", seed);
	while (d && pt_evt_sync_backward(d) >= 0) {
		struct pt_event ev;

		if (!walk_check(&w, pt_evt_get_sync_offset(d, &s) == 0,
				"no sync offset") ||
		    !walk_step(&w, s))
			break;
		for (i = 0; i < items; i++)
			if (pt_evt_next(d, &ev, sizeof(ev)) < 0)
				break;
		if (!walk_check(&w, pt_evt_sync_set(d, s) >= 0,
				"cannot go back to the sync point"))
			break;
	}
	pt_evt_free_decoder(d);
	CHECK(w.bad == 0);
}

static void walk_qry(const struct trace *t, uint32_t seed, int items)
{
	struct pt_query_decoder *d = pt_qry_alloc_decoder(&t->tb.config);
	struct walk w;
	uint64_t s, ip;
	int i;

	walk_init(&w, t, "qry", seed);
	while (d && pt_qry_sync_backward(d, &ip) >= 0) {
		struct pt_event ev;

		if (!walk_check(&w, pt_qry_get_sync_offset(d, &s) == 0,
				"no sync offset") ||
		    !walk_step(&w, s))
			break;
		for (i = 0; i < items; i++)
			if (pt_qry_event(d, &ev, sizeof(ev)) < 0)
				break;
		if (!walk_check(&w, pt_qry_sync_set(d, &ip, s) >= 0,
				"cannot go back to the sync point"))
			break;
	}
	pt_qry_free_decoder(d);
	CHECK(w.bad == 0);
}

/* The block and instruction decoders take the same steps through their own
 * API: step_blk() and step_insn() fetch the pending event or the next block
 * (instruction) and return the new status; walk_blk() and walk_insn() walk
 * back as walk_evt() does. */
#define CODE_DECODER(prefix, decoder_type, item_type)                       \
	static int step_##prefix(decoder_type *d, int status)               \
	{                                                                    \
		struct pt_event ev;                                          \
		item_type item;                                              \
                                                                             \
		if (status & pts_event_pending)                              \
			return pt_##prefix##_event(d, &ev, sizeof(ev));      \
		return pt_##prefix##_next(d, &item, sizeof(item));           \
	}                                                                    \
                                                                             \
	static void walk_##prefix(const struct trace *t, uint32_t seed,     \
				  int items)                                 \
	{                                                                    \
		decoder_type *d = pt_##prefix##_alloc_decoder(&t->tb.config);\
		struct walk w;                                               \
		uint64_t s;                                                  \
		int status, i;                                               \
                                                                             \
		walk_init(&w, t, #prefix, seed);                             \
		if (d)                                                       \
			pt_image_set_callback(pt_##prefix##_get_image(d),    \
					      mem_read, &code);              \
		while (d && (status = pt_##prefix##_sync_backward(d)) >= 0) {\
			if (!walk_check(&w,                                  \
					pt_##prefix##_get_sync_offset(d, &s) \
						== 0,                        \
					"no sync offset") ||                 \
			    !walk_step(&w, s))                               \
				break;                                       \
			for (i = 0; i < items && status >= 0; i++)           \
				status = step_##prefix(d, status);           \
			if (!walk_check(&w, pt_##prefix##_sync_set(d, s) >= 0,\
					"cannot go back to the sync point")) \
				break;                                       \
		}                                                            \
		pt_##prefix##_free_decoder(d);                               \
		CHECK(w.bad == 0);                                           \
	}

CODE_DECODER(blk, struct pt_block_decoder, struct pt_block)
CODE_DECODER(insn, struct pt_insn_decoder, struct pt_insn)

/* PSB+ without an IP, an overflow without one either, then a PSB+ with an
 * IP: starting at the first PSB reads into the second. */
static void test_overflow_readahead(void)
{
	struct trace t;
	struct pt_query_decoder *q;
	uint64_t s, ip;

	memset(t.psb, 0, sizeof(t.psb));
	t.npsb = 0;
	tb_init(&t.tb);
	add_psb(&t);
	tb_mode_exec(&t.tb, ptem_64bit);
	tb_simple(&t.tb, ppt_psbend);
	tb_simple(&t.tb, ppt_ovf);
	add_psb(&t);
	tb_mode_exec(&t.tb, ptem_64bit);
	tb_ip(&t.tb, ppt_fup, pt_ipc_sext_48, BASE);
	tb_simple(&t.tb, ppt_psbend);
	tb_tnt(&t.tb, 0x5, 3);
	(void) tb_done(&t.tb);
	CHECK_EQ(t.tb.errors, 0);

	walk_evt(&t, 0, 0);
	walk_evt(&t, 0, 4);
	walk_qry(&t, 0, 0);
	walk_qry(&t, 0, 4);
	walk_blk(&t, 0, 0);
	walk_blk(&t, 0, 4);
	walk_insn(&t, 0, 0);
	walk_insn(&t, 0, 4);

	/* From the end, the last PSB is where to start. */
	q = pt_qry_alloc_decoder(&t.tb.config);
	CHECK(q != NULL);
	CHECK(pt_qry_sync_backward(q, &ip) >= 0);
	CHECK_EQ(pt_qry_get_sync_offset(q, &s), 0);
	CHECK_EQ(s, t.psb[1]);
	pt_qry_free_decoder(q);
}

/* Decode as the man page's loop does: sync forward; decode until an error;
 * resync and decode again while that works; when it does not, sync forward
 * again.  Every step must take the decoder further along the trace, so
 * the number of resyncs is bounded by the trace: returns -1 when it is
 * not, else how many there were. */
#define RESYNC_LOOP(prefix, decoder_type)                                   \
	static int resync_##prefix(const struct pt_config *config)          \
	{                                                                    \
		decoder_type *d = pt_##prefix##_alloc_decoder(config);       \
		int status, n = 0;                                           \
		int limit = 4 * (int) (config->end - config->begin) + 16;    \
                                                                             \
		if (!d)                                                      \
			return -1;                                           \
		pt_image_set_callback(pt_##prefix##_get_image(d), mem_read,  \
				      &code);                                \
		while (n <= limit && pt_##prefix##_sync_forward(d) >= 0) {   \
			do {                                                 \
				status = 0;                                  \
				while (status >= 0)                          \
					status = step_##prefix(d, status);   \
				status = pt_##prefix##_resync(d);            \
			} while (status >= 0 && ++n <= limit);               \
		}                                                            \
		pt_##prefix##_free_decoder(d);                               \
		return n > limit ? -1 : n;                                   \
	}

RESYNC_LOOP(blk, struct pt_block_decoder)
RESYNC_LOOP(insn, struct pt_insn_decoder)

static void resync_both(struct trace *t, uint32_t seed)
{
	struct pt_errata *errata = &t->tb.config.errata;

	/* Errata change what the decoders make of PSB+. */
	memset(errata, 0, sizeof(*errata));
	if (seed & 1) {
		errata->bdm70 = 1;
		errata->bdm64 = 1;
		errata->skd007 = 1;
		errata->skd022 = 1;
		errata->skd010 = 1;
		errata->skl014 = 1;
		errata->apl12 = 1;
		errata->apl11 = 1;
	}
	if (!CHECK(resync_blk(&t->tb.config) >= 0) ||
	    !CHECK(resync_insn(&t->tb.config) >= 0))
		printf("     resync, seed %u: no end\n", seed);
	memset(errata, 0, sizeof(*errata));
}

int main(int argc, char **argv)
{
	uint32_t seed, seeds = argc > 1 ? (uint32_t) atoi(argv[1]) : 3000;
	static struct trace t;
	size_t i;

	for (i = 0; i + 1 < sizeof(code.bytes); i += 2) {
		code.bytes[i] = 0x74;
		code.bytes[i + 1] = 0x00;
	}
	code.base = BASE;
	code.size = sizeof(code.bytes);
	code.cr3 = pt_asid_no_cr3;

	test_overflow_readahead();
	for (seed = 1; seed <= seeds; seed++) {
		random_trace(&t, seed);
		if (!CHECK(t.tb.errors == 0))
			continue;
		walk_evt(&t, seed, (int) (seed % 5));
		walk_qry(&t, seed, (int) (seed % 5));
		walk_blk(&t, seed, (int) (seed % 7));
		walk_insn(&t, seed, (int) (seed % 7));
		resync_both(&t, seed);
	}
	return check_done();
}

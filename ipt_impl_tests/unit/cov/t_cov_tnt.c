/* t_cov_tnt - the coverage decoder's TNT memo across TNT packets.
 *
 * The memo takes TNT bits from the packet in hand and the TNT packets
 * behind it, read straight from the trace.  Here the code is a loop of
 * conditional branches with a direct call and a compressed return in it,
 * ending in a direct jump back (a trace of nothing but TNT after the
 * enable) or an indirect one (each time round a TIP, a TIP.PGD, TIP.PGE
 * pair at its target, also with a PIP or a PSB+ between them, or at the
 * jump itself, or two TIPs through a stub that jumps on, or a TIP that a
 * MODE.EXEC before the last TNT packet binds to, to the same mode or, with
 * the code low, to 32-bit code that 64-bit mode would read otherwise and
 * back; their IPs in any compression; the code low, or in the upper half,
 * where sext-48 takes the sign of bit 47); the traces split the bits into
 * TNT-8 and TNT-64 packets of random sizes, one bit each, with PADs and
 * timing packets (MTC, CYC, TSC) between them, or into TNT-64s of 40 to 47
 * bits.  On each: the edges (edge callback) equal cov_oracle.h's edges
 * from the block decoder, and the bitmap without a callback (the plain
 * counters, and saturating ones on a bitmap of 8 bytes, where they do
 * saturate) equals the documented function of those edges; on a fresh
 * decoder and warm, with the default memo, one of 16 entries (with the
 * edge callback, 39 without) and none.  With one-bit packets only, the
 * memo can take bits only across packets: it must, with the small memo
 * too.
 *
 * A function calls itself deeper than the return stack holds, and the
 * compressed returns it still holds come back: the stack wraps, full,
 * through the memo entries' pushes.
 *
 * A memo entry may end with a compressed return whose address was pushed
 * before it began, read off the return stack when the entry is applied.
 * With the stack empty, that return is the walk's to report: a trace that
 * enables tracing inside f after rounds of the loop, its return with
 * nothing to return to, then a PSB and more rounds gives the block
 * decoder's edges and one error, first pass and warm. */

#include "check.h"
#include "count_alloc.h"
#include "blk_util.h"
#include "cov_oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	/* Conditional branches in a row at the start of the loop. */
	NCOND = 40,
	/* NOPs before each of them in the loop of long runs: 21 of them
	 * are more instructions than a memo entry counts. */
	LONG_PAD = 3200
};

/* Where the code is: low, or in the upper half, where a TIP's sext-48 IP
 * takes the sign of bit 47. */
static uint64_t code_base;

/* The CR3 of the PIPs while tracing is off (the image has the code in
 * every address space). */
#define LONE_CR3 0x1000ull

/* With @indirect: where the loop's "jmp rax" is, and a "jmp rax" of its
 * own after f (a TIP to it and one from it make two TIPs in a row); then
 * "dec eax; jz +2; xchg ax, ax; dec eax; jmp eax" for 32-bit mode, which
 * 64-bit mode reads as a "jz" and a "jmp rax" with REX.W, its edges from
 * elsewhere. */
static uint64_t jmp_ip, stub_ip, stub32_ip;

/* The loop: NCOND times @pad NOPs and "jz +2; xchg ax, ax", a call to f,
 * one more conditional branch, then "jmp start" (@indirect zero) or "jmp
 * rax"; f is one conditional branch and a ret. */
static size_t make_code(uint8_t *code, int indirect, size_t pad,
			uint64_t *f_at)
{
	size_t n = 0, call_at, f;
	int i;

	for (i = 0; i < NCOND; ++i) {
		memset(&code[n], 0x90, pad);
		n += pad;
		code[n++] = 0x74;
		code[n++] = 0x02;
		code[n++] = 0x66;
		code[n++] = 0x90;
	}
	call_at = n;
	n += 5;
	code[n++] = 0x74;
	code[n++] = 0x02;
	code[n++] = 0x66;
	code[n++] = 0x90;
	if (indirect) {
		jmp_ip = code_base + n;
		code[n++] = 0xff;
		code[n++] = 0xe0;
	} else {
		int32_t rel = -(int32_t) (n + 5);

		code[n++] = 0xe9;
		memcpy(&code[n], &rel, 4);
		n += 4;
	}
	f = n;
	code[n++] = 0x74;
	code[n++] = 0x02;
	code[n++] = 0x66;
	code[n++] = 0x90;
	code[n++] = 0xc3;
	stub_ip = code_base + n;
	code[n++] = 0xff;
	code[n++] = 0xe0;
	stub32_ip = code_base + n;
	code[n++] = 0x48;
	code[n++] = 0x74;
	code[n++] = 0x02;
	code[n++] = 0x66;
	code[n++] = 0x90;
	code[n++] = 0x48;
	code[n++] = 0xff;
	code[n++] = 0xe0;

	code[call_at] = 0xe8;
	{
		int32_t rel = (int32_t) (f - (call_at + 5));

		memcpy(&code[call_at + 1], &rel, 4);
	}
	*f_at = code_base + f;
	return n;
}

static uint64_t rng;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 11);
}

/* The IP compressions a TIP, TIP.PGD or TIP.PGE in the loop may have:
 * sext-48 only (@nipc 1), or any (5) where all its IPs share their upper
 * 48 bits. */
static uint32_t nipc;

static enum pt_ip_compression any_ipc(void)
{
	static const enum pt_ip_compression ipc[] = {
		pt_ipc_sext_48, pt_ipc_update_16, pt_ipc_update_32,
		pt_ipc_update_48, pt_ipc_full
	};

	return ipc[next_rand() % nipc];
}

/* How the bits are split into packets. */
enum split {
	split_random,
	split_one_bit,
	split_timing,
	/* TNT-64s of 40 to 47 bits: more than the memo's window has room
	 * for behind the bits it holds. */
	split_long
};

struct gen {
	struct tb *t;
	enum split split;
	/* Bits not yet written, the first in bit nbits - 1. */
	uint64_t bits;
	uint32_t nbits;
	uint64_t tsc;
};

/* Maybe PADs and timing packets between two packets. */
static void put_between(struct gen *g)
{
	struct pt_packet p;

	if (g->split != split_timing)
		return;
	memset(&p, 0, sizeof(p));
	switch (next_rand() % 6) {
	case 0:
		p.type = ppt_pad;
		break;
	case 1:
		p.type = ppt_mtc;
		p.payload.mtc.ctc = (uint8_t) next_rand();
		break;
	case 2:
		p.type = ppt_cyc;
		p.payload.cyc.value = 1 + next_rand() % 100;
		break;
	case 3:
		g->tsc += 1000 + next_rand() % 1000;
		p.type = ppt_tsc;
		p.payload.tsc.tsc = g->tsc;
		break;
	default:
		return;
	}
	tb_put(g->t, &p);
}

/* Write TNT packets while at least @keep bits would be left. */
static void put_tnt(struct gen *g, uint32_t keep)
{
	while (g->nbits > keep) {
		struct pt_packet p;
		uint32_t n;

		memset(&p, 0, sizeof(p));
		if (g->split == split_one_bit) {
			n = 1;
			p.type = ppt_tnt_8;
		} else if (g->split == split_long) {
			n = 40 + next_rand() % 8;
			if (keep && n > g->nbits - keep)
				n = g->nbits - keep;
			p.type = ppt_tnt_64;
		} else if (next_rand() % 8 == 0) {
			n = 1 + next_rand() % 47;
			p.type = ppt_tnt_64;
		} else {
			n = 1 + next_rand() % 6;
			p.type = ppt_tnt_8;
		}
		if (n > g->nbits - keep) {
			if (keep)
				return;
			n = g->nbits;
			if (n > 6)
				p.type = ppt_tnt_64;
		}
		p.payload.tnt.bit_size = (uint8_t) n;
		p.payload.tnt.payload = (g->bits >> (g->nbits - n)) &
					((1ull << n) - 1);
		g->nbits -= n;
		g->bits &= g->nbits ? (1ull << g->nbits) - 1 : 0;
		tb_put(g->t, &p);
		put_between(g);
	}
}

static void add_bit(struct gen *g, uint32_t bit)
{
	g->bits = (g->bits << 1) | bit;
	g->nbits += 1;
	/* Keep room: 64 bits at most. */
	if (g->split != split_long)
		put_tnt(g, 48);
	else if (g->nbits == 56)
		put_tnt(g, 8);
}

/* Start a trace in @t, its bits split as @split says, by @g: a PSB+ in
 * 64-bit mode, tracing off. */
static void start_trace(struct gen *g, struct tb *t, enum split split)
{
	tb_init(t);
	memset(g, 0, sizeof(*g));
	g->t = t;
	g->split = split;
	tb_simple(t, ppt_psb);
	tb_simple(t, ppt_psbend);
	tb_mode_exec(t, ptem_64bit);
}

/* A trace of @rounds times round the loop, in @t. */
static void make_trace(struct tb *t, int indirect, enum split split,
		       int rounds)
{
	struct gen g;
	uint32_t how;
	int r, i;

	start_trace(&g, t, split);
	tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, code_base);

	for (r = 0; r < rounds; ++r) {
		for (i = 0; i < NCOND; ++i)
			add_bit(&g, next_rand() & 1);
		/* f's branch, its compressed return, the branch after. */
		add_bit(&g, next_rand() & 1);
		add_bit(&g, 1);
		/* With the code low, a round may go through 32-bit
		 * code (where its IPs stay below 4 GiB). */
		how = indirect ? next_rand() % (code_base >> 32 ? 5 : 6) : 0;
		if (how >= 4) {
			/* A MODE.EXEC before the last TNT binds to the TIP
			 * after it: not one for the memo's steps to take. */
			put_tnt(&g, 0);
			tb_mode_exec(t, how == 4 ? ptem_64bit : ptem_32bit);
		}
		add_bit(&g, next_rand() & 1);
		if (indirect) {
			put_tnt(&g, 0);
			switch (how) {
			case 0:
				tb_ip(t, ppt_tip, any_ipc(), code_base);
				break;
			case 1:
				/* Tracing off at the jump's target and on
				 * again there; or, a time in three each, a
				 * PIP or a PSB+ while it is off: a TIP.PGD
				 * alone behind the TNTs, which the memo's
				 * steps leave to the block decoder once they
				 * have taken every bit before it. */
				tb_ip(t, ppt_tip_pgd, any_ipc(), code_base);
				switch (next_rand() % 3) {
				case 0:
					tb_ip(t, ppt_tip_pge, any_ipc(),
					      code_base);
					break;
				case 1:
					tb_pip(t, LONE_CR3);
					tb_ip(t, ppt_tip_pge, any_ipc(),
					      code_base);
					break;
				default:
					tb_simple(t, ppt_psb);
					tb_mode_exec(t, ptem_64bit);
					tb_simple(t, ppt_psbend);
					tb_ip(t, ppt_tip_pge, pt_ipc_sext_48,
					      code_base);
					break;
				}
				break;
			case 2:
				/* Through the stub: two TIPs in a row. */
				tb_ip(t, ppt_tip, any_ipc(), stub_ip);
				tb_ip(t, ppt_tip, any_ipc(), code_base);
				break;
			case 3:
				/* Tracing off at the jump itself, before it
				 * is taken: in the code a memo entry walks
				 * to it. */
				tb_ip(t, ppt_tip_pgd, any_ipc(), jmp_ip);
				tb_ip(t, ppt_tip_pge, any_ipc(), code_base);
				break;
			case 4:
				tb_ip(t, ppt_tip, any_ipc(), code_base);
				break;
			default:
				/* To the 32-bit stub, which jumps back to
				 * 64-bit code after its branch. */
				tb_ip(t, ppt_tip, any_ipc(), stub32_ip);
				add_bit(&g, next_rand() & 1);
				put_tnt(&g, 0);
				tb_mode_exec(t, ptem_64bit);
				tb_ip(t, ppt_tip, any_ipc(), code_base);
				break;
			}
			put_between(&g);
		}
	}
	put_tnt(&g, 0);
	tb_done(t);
}

static unsigned long traces, edges_seen;

/* Rounds of the loop (with its "jmp rax"), tracing off at its end and on
 * again inside f (at @f_at) with the return stack empty, f's branch and
 * its return with nothing to return to; then a PSB and more rounds. */
static void make_empty_return(struct tb *t, enum split split, uint64_t f_at)
{
	struct gen g;
	int part, r, i;

	tb_init(t);
	memset(&g, 0, sizeof(g));
	g.t = t;
	g.split = split;
	for (part = 0; part < 2; ++part) {
		tb_simple(t, ppt_psb);
		tb_simple(t, ppt_psbend);
		tb_mode_exec(t, ptem_64bit);
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, code_base);
		for (r = 0; r < 8; ++r) {
			for (i = 0; i < NCOND; ++i)
				add_bit(&g, next_rand() & 1);
			add_bit(&g, next_rand() & 1);
			add_bit(&g, 1);
			add_bit(&g, next_rand() & 1);
			put_tnt(&g, 0);
			if (part == 0 && r == 7) {
				tb_ip(t, ppt_tip_pgd, pt_ipc_sext_48,
				      code_base);
				tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, f_at);
				for (i = 0; i < 8; ++i)
					add_bit(&g, i == 1 ? 1 :
							     next_rand() & 1);
				put_tnt(&g, 0);
			} else
				tb_ip(t, ppt_tip, pt_ipc_sext_48, code_base);
		}
	}
	tb_done(t);
}

/* A function that calls itself while its conditional branch is not
 * taken: "jz +5; call itself; ret".  It goes REC_DEPTH calls deep, more
 * than the return stack holds: the oldest return addresses are dropped,
 * the stack stays full, and its REC_RETURNS newest come back in
 * compressed returns; then tracing is off at the next return, and on
 * again at the function, REC_ROUNDS times. */
enum { REC_DEPTH = 70, REC_RETURNS = 64, REC_ROUNDS = 4 };

static size_t make_recursion_code(uint8_t *code)
{
	static const uint8_t rec[] = { 0x74, 0x05, 0xe8, 0xf9, 0xff, 0xff,
				       0xff, 0xc3 };

	memcpy(code, rec, sizeof(rec));
	return sizeof(rec);
}

static void make_recursion(struct tb *t, enum split split)
{
	struct gen g;
	int r, i;

	start_trace(&g, t, split);
	for (r = 0; r < REC_ROUNDS; ++r) {
		tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, code_base);
		for (i = 0; i < REC_DEPTH; ++i)
			add_bit(&g, 0);
		add_bit(&g, 1);
		for (i = 0; i < REC_RETURNS; ++i)
			add_bit(&g, 1);
		put_tnt(&g, 0);
		tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	}
	tb_done(t);
}

/* The edges and the errors of the trace in @t: the block decoder's, first
 * pass and warm, with the default memo and with a small one. */
static void check_errors(const char *name, struct omem *mem,
			 const struct tb *t)
{
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct ipt_cov_status st;
	struct pt_image *image;
	struct pt_config config;
	int errors, pass;

	pt_config_init(&config);
	config.begin = t->config.begin;
	config.end = t->config.end;
	image = pt_image_alloc(NULL);
	if (!CHECK(image != NULL))
		return;
	pt_image_set_callback(image, omem_read, mem);
	errors = oracle_edges(&want, &config, image, omem_read, mem);
	CHECK_EQ(errors, 1);
	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	cov = ipt_cov_alloc_decoder(&config, &cc);
	if (!CHECK(cov != NULL) ||
	    !CHECK(ipt_cov_set_image(cov, image) == 0))
		goto out;
	for (pass = 0; pass < 4; ++pass) {
		long at;

		if (pass == 2)
			CHECK_EQ(ipt_cov_set_memo_limit(cov, 24 << 10), 0);
		got.n = 0;
		CHECK_EQ(ipt_cov_set_trace(cov, config.begin, config.end, 1),
			 0);
		CHECK_EQ(ipt_cov_decode(cov), 0);
		at = olist_diff(&got, &want);
		if (!CHECK(at < 0))
			printf("     %s, pass %d: edge %ld of %zu/%zu\n", name,
			       pass, at, got.n, want.n);
		if (CHECK(ipt_cov_get_status(cov, &st) == 0) &&
		    !CHECK(st.errors == (uint64_t) (pass + 1) * 1u))
			printf("     %s, pass %d: %llu errors\n", name, pass,
			       (unsigned long long) st.errors);
	}
	traces += 1;
	edges_seen += want.n;
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(want.e);
	free(got.e);
}


static void check_trace(const char *name, struct omem *mem,
			const struct tb *t, int must_memo)
{
	const uint8_t *trace = t->config.begin;
	size_t size = (size_t) (t->config.end - t->config.begin);
	static uint8_t map[1 << 16], expect[1 << 16];
	uint8_t sat[8], sat_expect[8];
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct ipt_cov_decoder *cov, *plain, *satd;
	uint64_t small_bits = 0;
	size_t i;
	struct ipt_cov_config cc;
	struct ipt_cov_status st;
	struct pt_image *image;
	struct pt_config config;
	int pass;

	pt_config_init(&config);
	config.begin = (uint8_t *) (uintptr_t) trace;
	config.end = (uint8_t *) (uintptr_t) trace + size;

	image = pt_image_alloc(NULL);
	if (!CHECK(image != NULL))
		return;
	pt_image_set_callback(image, omem_read, mem);
	CHECK_EQ(oracle_edges(&want, &config, image, omem_read, mem), 0);
	CHECK(want.n > 0);
	memset(expect, 0, sizeof(expect));
	olist_bitmap(expect, sizeof(expect), &want, 0);
	memset(sat_expect, 0, sizeof(sat_expect));
	olist_bitmap(sat_expect, sizeof(sat_expect), &want, 1);
	/* The saturating counters must have stopped somewhere. */
	for (i = 0; i < sizeof(sat_expect) && sat_expect[i] != 0xff; ++i)
		;
	CHECK(i < sizeof(sat_expect));

	memset(&cc, 0, sizeof(cc));
	plain = ipt_cov_alloc_decoder(&config, &cc);
	cc.flags = ipt_cov_saturate;
	satd = ipt_cov_alloc_decoder(&config, &cc);
	cc.flags = 0;
	cc.edge = olist_on_edge;
	cc.context = &got;
	cov = ipt_cov_alloc_decoder(&config, &cc);
	if (!CHECK(cov != NULL && plain != NULL && satd != NULL))
		goto out;
	CHECK_EQ(ipt_cov_set_image(cov, image), 0);
	CHECK_EQ(ipt_cov_set_image(plain, image), 0);
	CHECK_EQ(ipt_cov_set_image(satd, image), 0);
	CHECK_EQ(ipt_cov_set_bitmap(plain, map, sizeof(map)), 0);
	CHECK_EQ(ipt_cov_set_bitmap(satd, sat, sizeof(sat)), 0);

	/* First pass and warm with the default memo, then with a few
	 * entries (fresh, then warm), then without. */
	for (pass = 0; pass < 5; ++pass) {
		long at;

		if (pass == 2) {
			CHECK_EQ(ipt_cov_set_memo_limit(cov, 24 << 10), 0);
			CHECK_EQ(ipt_cov_set_memo_limit(plain, 24 << 10), 0);
			CHECK_EQ(ipt_cov_set_memo_limit(satd, 24 << 10), 0);
			if (CHECK(ipt_cov_get_status(cov, &st) == 0))
				small_bits = st.memo_bits;
		}
		if (pass == 4) {
			CHECK_EQ(ipt_cov_set_memo_limit(cov, 0), 0);
			CHECK_EQ(ipt_cov_set_memo_limit(plain, 0), 0);
			CHECK_EQ(ipt_cov_set_memo_limit(satd, 0), 0);
			if (must_memo && CHECK(ipt_cov_get_status(cov, &st) == 0)
			    && !CHECK(st.memo_bits > small_bits))
				printf("     %s: no bits through the small "
				       "memo\n", name);
		}
		got.n = 0;
		CHECK_EQ(ipt_cov_set_trace(cov, trace, trace + size, 1), 0);
		CHECK_EQ(ipt_cov_decode(cov), 0);
		at = olist_diff(&got, &want);
		if (!CHECK(at < 0))
			printf("     %s, pass %d: edge %ld of %zu/%zu\n", name,
			       pass, at, got.n, want.n);

		CHECK_EQ(ipt_cov_set_trace(plain, trace, trace + size, 1), 0);
		CHECK_EQ(ipt_cov_decode(plain), 0);
		if (!CHECK(!memcmp(map, expect, sizeof(map))))
			printf("     %s, pass %d: bitmap\n", name, pass);

		CHECK_EQ(ipt_cov_set_trace(satd, trace, trace + size, 1), 0);
		CHECK_EQ(ipt_cov_decode(satd), 0);
		if (!CHECK(!memcmp(sat, sat_expect, sizeof(sat))))
			printf("     %s, pass %d: saturated bitmap\n", name,
			       pass);

		if (pass == 1 && CHECK(ipt_cov_get_status(plain, &st) == 0)) {
			CHECK_EQ(st.errors, 0);
			if (must_memo && !CHECK(st.memo_bits > 0))
				printf("     %s: no bits through the memo\n",
				       name);
		}
	}
	traces += 1;
	edges_seen += want.n;
out:
	ipt_cov_free_decoder(cov);
	ipt_cov_free_decoder(plain);
	ipt_cov_free_decoder(satd);
	pt_image_free(image);
	free(want.e);
	free(got.e);
}

/* ---- keys that come once ---- */

/* The most bytes a fresh decoder has live in a first pass over @t, and
 * its edges against the block decoder's; with @again a second pass on
 * the same decoder too (its most bytes then). */
static size_t peak_of(struct omem *mem, const struct tb *t, int again)
{
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct pt_image *image;
	struct pt_config config;
	size_t most = 0;
	int pass;

	pt_config_init(&config);
	config.begin = t->config.begin;
	config.end = t->config.end;
	image = pt_image_alloc(NULL);
	if (!CHECK(image != NULL))
		return 0;
	pt_image_set_callback(image, omem_read, mem);
	CHECK_EQ(oracle_edges(&want, &config, image, omem_read, mem), 0);

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	live = 0;
	peak = 0;
	cov = ipt_cov_alloc_decoder_with(&config, &cc, &counting);
	if (!CHECK(cov != NULL))
		goto out;
	CHECK_EQ(ipt_cov_set_image(cov, image), 0);
	/* A run cache that starts at its limit never grows. */
	CHECK_EQ(ipt_cov_set_cache_limit(cov, 16 << 10), 0);
	for (pass = 0; pass <= again; ++pass) {
		long at;

		peak = live;
		got.n = 0;
		CHECK_EQ(ipt_cov_set_trace(cov, config.begin, config.end, 1),
			 0);
		CHECK_EQ(ipt_cov_decode(cov), 0);
		at = olist_diff(&got, &want);
		if (!CHECK(at < 0))
			printf("     keys once, pass %d: edge %ld of %zu/%zu\n",
			       pass, at, got.n, want.n);
		most = peak;
	}
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(want.e);
	free(got.e);
	return most;
}

/* Random bits round the loop make keys that each come once: a first
 * pass leaves the memo at its first size (a trace of one round is the
 * measure), and a second, where all come again, grows it.  The edges
 * are the block decoder's in both. */
static void test_keys_once(void)
{
	static struct tb t;
	static uint8_t code[NCOND * 4 + 64];
	struct omem mem;
	uint64_t f_at;
	size_t n = make_code(code, 0, 0, &f_at), one, once, twice;

	memset(&mem, 0, sizeof(mem));
	if (!CHECK(omem_add(&mem, code, n, code_base) == 0))
		return;
	rng = 0x3c6ef372fe94f82bull;
	make_trace(&t, 0, split_random, 1);
	one = peak_of(&mem, &t, 0);
	/* Some 43 bits a round, up to 31 a key: some 350 keys. */
	make_trace(&t, 0, split_random, 250);
	once = peak_of(&mem, &t, 0);
	twice = peak_of(&mem, &t, 1);
	/* A memo that grows doubles: far more than a few pieces more of
	 * the decoder's other caches. */
	if (!CHECK(one > 0 && once < one + one / 8 && twice > once + once / 4))
		printf("     keys once: %zu bytes for one round, %zu for "
		       "all once, %zu twice\n", one, once, twice);
	omem_fini(&mem);
}

int main(void)
{
	static const char *const splits[] = { "random", "one-bit", "timing",
					      "long" };
	static struct tb t;
	static const uint64_t bases[] = { 0x1000, 0xffffffff81000000ull };
	static uint8_t code[NCOND * (4 + LONG_PAD) + 64];
	struct omem mem;
	int indirect, split, seed, base;

	for (indirect = 0; indirect < 4; ++indirect) {
		uint64_t f_at;
		size_t n;

		base = indirect / 2;
		code_base = bases[base];
		nipc = 5;
		n = make_code(code, indirect & 1, 0, &f_at);
		memset(&mem, 0, sizeof(mem));
		if (!CHECK(omem_add(&mem, code, n, code_base) == 0))
			continue;
		for (split = 0; split < 4; ++split)
			for (seed = 1; seed <= 4; ++seed) {
				char name[64];

				rng = 0x9e3779b97f4a7c15ull * (uint64_t) seed +
				      (uint64_t) (split * 4 + indirect);
				make_trace(&t, indirect & 1, (enum split) split,
					   60);
				snprintf(name, sizeof(name),
					 "%s %s seed %d%s",
					 indirect & 1 ? "tip" : "tnt-only",
					 splits[split], seed,
					 base ? " upper half" : "");
				if (!CHECK(t.errors == 0))
					continue;
				check_trace(name, &mem, &t,
					    split == split_one_bit);
			}
		omem_fini(&mem);
	}
	code_base = bases[0];
	nipc = 1;

	/* Runs so long that the instructions of a memo entry's bits would
	 * not fit its counts: entries end early. */
	for (indirect = 0; indirect < 2; ++indirect) {
		uint64_t f_at;
		size_t n = make_code(code, indirect, LONG_PAD, &f_at);

		memset(&mem, 0, sizeof(mem));
		if (!CHECK(omem_add(&mem, code, n, code_base) == 0))
			continue;
		rng = 0x2545f4914f6cdd1dull + (uint64_t) indirect;
		make_trace(&t, indirect, split_random, 60);
		if (CHECK(t.errors == 0))
			check_trace(indirect ? "tip padded" : "tnt-only padded",
				    &mem, &t, 1);
		omem_fini(&mem);
	}
	/* Calls deeper than the return stack, and the returns that it
	 * still holds. */
	{
		size_t n = make_recursion_code(code);

		memset(&mem, 0, sizeof(mem));
		if (CHECK(omem_add(&mem, code, n, code_base) == 0)) {
			for (split = 0; split < 4; ++split) {
				char name[64];

				rng = 0x3c6ef372fe94f82bull + (uint64_t) split;
				make_recursion(&t, (enum split) split);
				snprintf(name, sizeof(name), "recursion %s",
					 splits[split]);
				if (CHECK(t.errors == 0))
					check_trace(name, &mem, &t,
						    split == split_one_bit);
			}
		}
		omem_fini(&mem);
	}
	/* A return with nothing to return to, at the end of an entry. */
	{
		uint64_t f_at;
		size_t n = make_code(code, 1, 0, &f_at);

		memset(&mem, 0, sizeof(mem));
		if (CHECK(omem_add(&mem, code, n, code_base) == 0)) {
			for (split = 0; split < 4; ++split) {
				char name[64];

				rng = 0x61c8864680b583ebull + (uint64_t) split;
				make_empty_return(&t, (enum split) split,
						  f_at);
				snprintf(name, sizeof(name),
					 "empty return %s", splits[split]);
				if (CHECK(t.errors == 0))
					check_errors(name, &mem, &t);
			}
		}
		omem_fini(&mem);
	}
	test_keys_once();
	printf("%lu traces, %lu edges\n", traces, edges_seen);
	return check_done();
}

/* t_cov_idle - where the coverage decoder gives up on code that runs
 * without trace (IPT_COV_IDLE_MAX), from a translation unit with its own
 * static copy of the implementation and a limit of 1000 instructions.
 *
 * The code is a loop: P1 NOPs, a direct jump over two bytes, P2 NOPs,
 * "jz +2; xchg ax, ax" and a direct jump back; the trace enables tracing
 * at that jump and has TNT-64 packets of 47 bits behind it.  From one bit
 * to the next run P1 + P2 + 3 instructions (one more if the bit is not
 * taken).  On each trace the edges (edge callback) and errors must equal
 * cov_oracle.h's from the block decoder, which follows the rule as
 * ipt.h's comment states it, and say what the rule says:
 *   - many bits of one packet, each a short way from the last: no error
 *     (the limit holds from one bit to the next, not for a packet);
 *   - all bits taken, P1 + P2 + 3 at the limit: no error; one above it:
 *     the decode gives up at the first bit (-pte_bad_query), with the
 *     jump early, in the middle or late in the way (so that the TNT
 *     memo's step at the jump's target starts with a count the walk
 *     brings in);
 *   - a jump to itself, a call to itself, two jumps to each other: the
 *     decode gives up, and returns.
 * Each through the three ways the decoder goes: pt_blk_next only (the
 * trace fed as a stream, ipt_cov_extend: all but the last packet), the
 * run walk (no TNT memo) and the TNT memo; each on a fresh decoder and
 * again warm. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_COV_IDLE_MAX 1000
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "blk_util.h"
#include "cov_oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CODE_BASE = 0x1000, NPACKETS = 12 };

static uint8_t code[4096];

/* The loop; returns its size, and in *@back where the jump back is. */
static size_t make_loop(size_t p1, size_t p2, uint64_t *back)
{
	size_t n = 0;
	int32_t rel;

	memset(code, 0x90, p1);
	n += p1;
	code[n++] = 0xe9;
	rel = 2;
	memcpy(&code[n], &rel, 4);
	n += 4;
	code[n++] = 0xcc;
	code[n++] = 0xcc;
	memset(&code[n], 0x90, p2);
	n += p2;
	code[n++] = 0x74;
	code[n++] = 0x02;
	code[n++] = 0x66;
	code[n++] = 0x90;
	*back = CODE_BASE + n;
	code[n++] = 0xe9;
	rel = -(int32_t) (n + 4);
	memcpy(&code[n], &rel, 4);
	n += 4;
	return n;
}

/* Tracing enabled at @ip, then NPACKETS TNT-64s of 47 bits: all taken,
 * or at random. */
static void make_trace(struct tb *t, uint64_t ip, int random)
{
	int i;

	tb_init(t);
	tb_simple(t, ppt_psb);
	tb_simple(t, ppt_psbend);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, ip);
	for (i = 0; i < NPACKETS; ++i) {
		struct pt_packet p;

		memset(&p, 0, sizeof(p));
		p.type = ppt_tnt_64;
		p.payload.tnt.bit_size = 47;
		p.payload.tnt.payload =
			random ? ((uint64_t) check_rand() << 24 ^
				  check_rand()) & ((1ull << 47) - 1) :
				 (1ull << 47) - 1;
		tb_put(t, &p);
	}
	tb_done(t);
}

enum way { way_stream, way_walk, way_memo };

static const char *const way_names[] = { "pt_blk_next", "run walk",
					 "TNT memo" };

/* Decode @trace on @cov the way @way says; returns ipt_cov_decode's
 * last result. */
static int decode(struct ipt_cov_decoder *cov, const uint8_t *begin,
		  const uint8_t *end, enum way way)
{
	int status;

	if (ipt_cov_set_trace(cov, begin, end, 1) < 0)
		return -1;
	if (way != way_stream)
		return ipt_cov_decode(cov);
	if (ipt_cov_extend(cov, end, 1) < 0)
		return -1;
	status = ipt_cov_decode(cov);
	if (status != -ipt_pte_need_more)
		return -2;
	if (ipt_cov_extend(cov, end, 0) < 0)
		return -1;
	return ipt_cov_decode(cov);
}

/* Decode @t over @mem every way, first and warm, against the oracle:
 * @stuck is whether the rule gives up (once), and then no more than the
 * enable edge is there. */
static void check_trace(const char *name, struct omem *mem,
			const struct tb *t, int stuck, int must_memo)
{
	const uint8_t *begin = t->config.begin, *end = t->config.end;
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct pt_config config;
	struct pt_image *image;
	unsigned ostuck = 0;
	int way, errors;

	pt_config_init(&config);
	config.begin = (uint8_t *) (uintptr_t) begin;
	config.end = (uint8_t *) (uintptr_t) end;
	image = pt_image_alloc(NULL);
	if (!CHECK(image != NULL))
		return;
	pt_image_set_callback(image, omem_read, mem);

	errors = oracle_edges_stuck(&want, &config, image, omem_read, mem,
				    pt_asid_no_cr3, &ostuck);
	if (!CHECK(errors == stuck && ostuck == (unsigned) stuck))
		printf("     %s: the oracle: %d errors, %u stuck\n", name,
		       errors, ostuck);
	if (stuck)
		CHECK_EQ(want.n, 1);
	else
		CHECK(want.n > NPACKETS * 47 - 2);

	for (way = way_stream; way <= way_memo; ++way) {
		struct ipt_cov_decoder *cov;
		struct ipt_cov_config cc;
		int pass;

		memset(&cc, 0, sizeof(cc));
		cc.edge = olist_on_edge;
		cc.context = &got;
		cov = ipt_cov_alloc_decoder(&config, &cc);
		if (!CHECK(cov != NULL))
			continue;
		CHECK_EQ(ipt_cov_set_image(cov, image), 0);
		if (way == way_walk)
			CHECK_EQ(ipt_cov_set_memo_limit(cov, 0), 0);

		for (pass = 0; pass < 3; ++pass) {
			struct ipt_cov_status st;
			long at;

			got.n = 0;
			CHECK_EQ(decode(cov, begin, end, (enum way) way), 0);
			at = olist_diff(&got, &want);
			if (!CHECK(at < 0))
				printf("     %s, %s, pass %d: edge %ld of "
				       "%zu/%zu\n", name, way_names[way], pass,
				       at, got.n, want.n);
			if (!CHECK(ipt_cov_get_status(cov, &st) == 0))
				continue;
			if (!CHECK(st.errors == (uint64_t) stuck * (pass + 1)))
				printf("     %s, %s, pass %d: %llu errors\n",
				       name, way_names[way], pass,
				       (unsigned long long) st.errors);
			if (stuck)
				CHECK_EQ(st.last_error, -pte_bad_query);
			if (way == way_memo && pass == 2 && must_memo &&
			    !CHECK(st.memo_bits > 0))
				printf("     %s: no bits through the memo\n",
				       name);
			if (way == way_walk)
				CHECK_EQ(st.memo_bits, 0);
		}
		ipt_cov_free_decoder(cov);
	}
	pt_image_free(image);
	free(want.e);
	free(got.e);
}

static void check_loop(const char *name, size_t p1, size_t p2, int random,
		       int stuck)
{
	static struct tb t;
	struct omem mem;
	uint64_t back;
	size_t n = make_loop(p1, p2, &back);

	memset(&mem, 0, sizeof(mem));
	if (!CHECK(omem_add(&mem, code, n, CODE_BASE) == 0))
		return;
	make_trace(&t, back, random);
	if (CHECK(t.errors == 0))
		check_trace(name, &mem, &t, stuck, !stuck);
	omem_fini(&mem);
}

/* Code that never uses trace again: tracing enabled at @code's start. */
static void check_forever(const char *name, const uint8_t *bytes,
			  size_t size)
{
	static struct tb t;
	struct omem mem;

	memset(&mem, 0, sizeof(mem));
	if (!CHECK(omem_add(&mem, bytes, size, CODE_BASE) == 0))
		return;
	make_trace(&t, CODE_BASE, 1);
	if (CHECK(t.errors == 0))
		check_trace(name, &mem, &t, 1, 0);
	omem_fini(&mem);
}

int main(void)
{
	/* jmp .; call .; jmp +0 (to the next), jmp -7 (to the first). */
	static const uint8_t jmp_self[] = { 0xeb, 0xfe };
	static const uint8_t call_self[] = { 0xe8, 0xfb, 0xff, 0xff, 0xff };
	static const uint8_t jmp_pair[] = { 0xeb, 0x00, 0xe9, 0xf9, 0xff,
					    0xff, 0xff };

	/* Each bit 103 or 104 instructions after the last: 47 of them in a
	 * packet are far more than the limit. */
	check_loop("short ways, random bits", 50, 50, 1, 0);
	check_loop("short ways, taken", 50, 50, 0, 0);

	/* At the limit and one above it. */
	check_loop("at the limit, jump in the middle", 500, 497, 0, 0);
	check_loop("above the limit, jump in the middle", 500, 498, 0, 1);
	check_loop("at the limit, jump early", 10, 987, 0, 0);
	check_loop("above the limit, jump early", 10, 988, 0, 1);
	check_loop("at the limit, jump late", 987, 10, 0, 0);
	check_loop("above the limit, jump late", 988, 10, 0, 1);

	check_forever("jmp .", jmp_self, sizeof(jmp_self));
	check_forever("call .", call_self, sizeof(call_self));
	check_forever("two jumps", jmp_pair, sizeof(jmp_pair));
	return check_done();
}

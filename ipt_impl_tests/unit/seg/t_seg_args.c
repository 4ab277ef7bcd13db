/* t_seg_args - the segment index and the decoder joins with bad
 * arguments (-pte_invalid, -pte_bad_config, as their declarations say),
 * and PSB+s the index marks broken: cut off by the end of the trace, or
 * longer than any PSB+ can be.  Also what the index reads from a PSB+:
 * MODE.TSX's InTX and an OVF in place of PSBEND. */

#include "ipt.h"
#include "evt_trace.h"
#include "check.h"

#include <stdlib.h>

static void test_index_args(void)
{
	struct ipt_segment segs[2];
	struct pt_config config;
	struct tb t;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_end(&t);

	CHECK_EQ(ipt_seg_index(NULL, segs, 2), -pte_invalid);
	CHECK_EQ(ipt_seg_index(&t.config, NULL, 2), -pte_invalid);
	CHECK_EQ(ipt_seg_index(&t.config, NULL, 0), 1);
	config = t.config;
	config.begin = NULL;
	CHECK_EQ(ipt_seg_index(&config, segs, 2), -pte_bad_config);
	config = t.config;
	config.end = config.begin - 1;
	CHECK_EQ(ipt_seg_index(&config, segs, 2), -pte_bad_config);
	/* An empty trace has no PSB. */
	config.end = config.begin;
	CHECK_EQ(ipt_seg_index(&config, segs, 2), 0);
}

static void test_psbs(void)
{
	struct ipt_segment segs[4];
	uint64_t second, third;
	struct tb t;
	int i;

	tb_begin(&t);
	/* A PSB+ in a transaction that ends in an overflow. */
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_tsx(1, 0));
	tb_add(&t, pk_full(ppt_fup, 0x1000));
	tb_add(&t, pk(ppt_ovf));
	/* One that goes on for too long. */
	second = tb_add(&t, pk(ppt_psb));
	for (i = 0; i < 70; ++i)
		tb_add(&t, pk_tsc(i));
	tb_add(&t, pk(ppt_psbend));
	/* One that the end of the trace cuts off. */
	third = tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_cbr(3));
	tb_end(&t);
	CHECK(!t.broken);

	CHECK_EQ(ipt_seg_index(&t.config, segs, 4), 3);
	CHECK_EQ(segs[0].offset, 0);
	CHECK_EQ(segs[0].end, second);
	CHECK(segs[0].intx && segs[0].enabled && segs[0].overflow);
	CHECK_EQ(segs[0].ip, 0x1000);
	CHECK(!segs[0].broken);
	CHECK_EQ(segs[1].offset, second);
	CHECK_EQ(segs[1].end, third);
	CHECK(segs[1].broken && segs[1].has_tsc && !segs[1].overflow);
	CHECK_EQ(segs[2].offset, third);
	CHECK_EQ(segs[2].end, (uint64_t) (t.config.end - t.config.begin));
	CHECK(segs[2].broken && segs[2].has_cbr && !segs[2].intx);
	CHECK_EQ(segs[2].cbr, 3);
}

static void test_join_args(void)
{
	struct pt_block_decoder *blk;
	struct pt_insn_decoder *insn;
	void *state;
	size_t size;
	struct tb t;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_end(&t);
	blk = pt_blk_alloc_decoder(&t.config);
	insn = pt_insn_alloc_decoder(&t.config);
	size = ipt_blk_state_size() > ipt_insn_state_size() ?
		       ipt_blk_state_size() : ipt_insn_state_size();
	state = malloc(size);
	CHECK(blk && insn && state);
	if (!blk || !insn || !state)
		goto out;

	CHECK_EQ(ipt_blk_save(NULL, state, size), -pte_invalid);
	CHECK_EQ(ipt_blk_save(blk, NULL, size), -pte_invalid);
	CHECK_EQ(ipt_blk_save(blk, state, ipt_blk_state_size() - 1),
		 -pte_invalid);
	CHECK_EQ(ipt_blk_converged(NULL, state), -pte_invalid);
	CHECK_EQ(ipt_blk_converged(blk, NULL), -pte_invalid);
	CHECK_EQ(ipt_blk_save(blk, state, ipt_blk_state_size()), 0);
	CHECK_EQ(ipt_blk_converged(blk, state), 1);

	CHECK_EQ(ipt_insn_save(NULL, state, size), -pte_invalid);
	CHECK_EQ(ipt_insn_save(insn, NULL, size), -pte_invalid);
	CHECK_EQ(ipt_insn_save(insn, state, ipt_insn_state_size() - 1),
		 -pte_invalid);
	CHECK_EQ(ipt_insn_converged(NULL, state), -pte_invalid);
	CHECK_EQ(ipt_insn_converged(insn, NULL), -pte_invalid);
	CHECK_EQ(ipt_insn_save(insn, state, ipt_insn_state_size()), 0);
	CHECK_EQ(ipt_insn_converged(insn, state), 1);
out:
	free(state);
	pt_insn_free_decoder(insn);
	pt_blk_free_decoder(blk);
}

int main(void)
{
	test_index_args();
	test_psbs();
	test_join_args();
	return check_done();
}

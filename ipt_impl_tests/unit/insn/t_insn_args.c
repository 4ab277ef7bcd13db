/* t_insn_args - the instruction decoder's answers to bad arguments, as
 * libipt 2.3's (src/pt_insn_decoder.c): -pte_invalid for a missing
 * decoder or output, NULL from the accessors; pt_insn_resync, whose
 * libipt version checks with -pte_internal, keeps that.  And a caller's
 * struct pt_insn larger than ipt.h's: the instruction fills the known part
 * and the rest is zeroed, as libipt's pt_insn_to_user does.  The ipt_insn_*
 * extensions: -pte_invalid without decoder or buffer, a decoder left as
 * it was; no start state in the middle of a block (-pte_bad_context). */

#include "blk_util.h"
#include "check.h"

/* 0x1000: nop; 0x1001: nop; 0x1002: jmp rax (ff e0) */
static const uint8_t code[] = { 0x90, 0x90, 0xff, 0xe0 };

static void test_null(void)
{
	struct ipt_fault fault;
	struct pt_event event;
	struct pt_asid asid;
	struct pt_insn insn;
	uint64_t u64;
	uint32_t u32;

	CHECK_EQ(pt_insn_sync_forward(NULL), -pte_invalid);
	CHECK_EQ(pt_insn_sync_backward(NULL), -pte_invalid);
	CHECK_EQ(pt_insn_sync_set(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_insn_resync(NULL), -pte_internal);
	CHECK_EQ(pt_insn_get_offset(NULL, &u64), -pte_invalid);
	CHECK_EQ(pt_insn_get_sync_offset(NULL, &u64), -pte_invalid);
	CHECK_EQ(ipt_insn_set_cache_limit(NULL, 0), -pte_invalid);
	CHECK(pt_insn_get_image(NULL) == NULL);
	CHECK_EQ(pt_insn_set_image(NULL, NULL), -pte_invalid);
	CHECK(pt_insn_get_config(NULL) == NULL);
	CHECK_EQ(pt_insn_time(NULL, &u64, NULL, NULL), -pte_invalid);
	CHECK_EQ(pt_insn_core_bus_ratio(NULL, &u32), -pte_invalid);
	CHECK_EQ(pt_insn_asid(NULL, &asid, sizeof(asid)), -pte_invalid);
	CHECK_EQ(pt_insn_next(NULL, &insn, sizeof(insn)), -pte_invalid);
	CHECK_EQ(pt_insn_event(NULL, &event, sizeof(event)), -pte_invalid);
	CHECK_EQ(ipt_insn_set_wait_for_code(NULL, 1), -pte_invalid);
	CHECK_EQ(ipt_insn_get_fault(NULL, &fault, sizeof(fault)),
		 -pte_invalid);
	CHECK_EQ(ipt_insn_set_buffer(NULL, NULL, NULL), -pte_invalid);
	CHECK_EQ(ipt_insn_get_start_state(NULL, NULL, NULL), -pte_invalid);
}

static void test_decoder(struct pt_image *image)
{
	struct pt_insn_decoder *d;
	struct ipt_start_state state;
	struct pt_config *config;
	struct pt_event event;
	struct pt_asid asid;
	uint64_t u64;
	uint32_t u32;
	struct tb t;
	/* A struct pt_insn of a later version, with more fields. */
	union {
		struct pt_insn insn;
		uint8_t bytes[sizeof(struct pt_insn) + 16];
	} big;
	int status;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);
	d = pt_insn_alloc_decoder(config);
	CHECK(d != NULL);
	if (!d)
		return;

	CHECK_EQ(pt_insn_time(d, NULL, NULL, NULL), -pte_invalid);
	CHECK_EQ(pt_insn_core_bus_ratio(d, NULL), -pte_invalid);
	CHECK_EQ(pt_insn_asid(d, NULL, sizeof(asid)), -pte_invalid);
	CHECK_EQ(pt_insn_next(d, NULL, sizeof(big.insn)), -pte_invalid);
	CHECK_EQ(pt_insn_event(d, NULL, sizeof(event)), -pte_invalid);
	CHECK_EQ(pt_insn_set_image(d, image), 0);
	CHECK(pt_insn_get_image(d) == image);
	CHECK(pt_insn_get_config(d) != NULL);

	status = pt_insn_sync_forward(d);
	CHECK(status >= 0);
	while (status >= 0 && (status & pts_event_pending))
		status = pt_insn_event(d, &event, sizeof(event));
	CHECK(status >= 0);
	CHECK_EQ(pt_insn_get_offset(d, &u64), 0);
	CHECK_EQ(pt_insn_get_sync_offset(d, &u64), 0);
	CHECK_EQ(u64, 0);
	CHECK_EQ(pt_insn_core_bus_ratio(d, &u32), -pte_no_cbr);

	memset(&big, 0xcc, sizeof(big));
	status = pt_insn_next(d, &big.insn, sizeof(big));
	CHECK(status >= 0);
	CHECK_EQ(big.insn.ip, 0x1000);
	CHECK_EQ(big.insn.size, 1);
	CHECK_EQ(big.insn.iclass, ptic_other);
	CHECK(bytes_are(&big, sizeof(big.insn), sizeof(big), 0));

	/* Inside a block: no start state (ipt_insn_get_start_state). */
	state.size = sizeof(state);
	CHECK_EQ(ipt_insn_get_start_state(d, &u64, &state), -pte_bad_context);

	/* The next one into a struct of this version's size. */
	status = pt_insn_next(d, &big.insn, sizeof(big.insn));
	CHECK(status >= 0);
	CHECK_EQ(big.insn.ip, 0x1001);

	/* A refused buffer leaves the decoder as it was. */
	CHECK_EQ(ipt_insn_set_buffer(d, t.buf + 1, t.buf), -pte_invalid);
	status = pt_insn_next(d, &big.insn, sizeof(big.insn));
	CHECK(status >= 0);
	CHECK_EQ(big.insn.ip, 0x1002);
	pt_insn_free_decoder(d);
}

int main(void)
{
	struct pt_image *image;
	struct mem m;

	mem_init(&m, 0x1000, code, sizeof(code));
	image = mem_image(&m, "args");
	if (!CHECK(image != NULL))
		return check_done();

	test_null();
	test_decoder(image);

	pt_image_free(image);
	return check_done();
}

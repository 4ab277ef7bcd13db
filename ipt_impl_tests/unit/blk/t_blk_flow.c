/* Block and instruction decoders on small hand-made traces: control flow
 * (conditional branches, direct calls and jumps, compressed returns,
 * indirect jumps, disable), the end_on_call/end_on_jump flags, the
 * speculative flag, and the instruction decoder agreeing with the blocks. */
#include "blk_util.h"
#include "check.h"

/* 0x1000  nop
 * 0x1001  nop
 * 0x1002  jz 0x1007
 * 0x1004  nop
 * 0x1005  jmp 0x1007
 * 0x1007  nop
 * 0x1008  call 0x1010
 * 0x100d  jmp rax
 * 0x100f  nop
 * 0x1010  nop
 * 0x1011  ret */
static const uint8_t code[] = {
	0x90, 0x90, 0x74, 0x03, 0x90, 0xeb, 0x00, 0x90,
	0xe8, 0x03, 0x00, 0x00, 0x00, 0xff, 0xe0, 0x90,
	0x90, 0xc3
};

/* jz taken, ret compressed; jmp rax to 0x1004; ret compressed; jmp rax
 * disables tracing. */
static void trace_flow(struct tb *t, int tsx)
{
	tb_init(t);
	tb_simple(t, ppt_psb);
	tb_mode_exec(t, ptem_64bit);
	if (tsx)
		tb_mode_tsx(t, 1, 0);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1000);
	tb_simple(t, ppt_psbend);
	tb_tnt(t, 0x3, 2);
	tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1004);
	tb_tnt(t, 0x1, 1);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

static const char *const psb_events =
	"e enabled 1000\n"
	"e exec_mode 1000\n";

static void test_flow(struct pt_image *image)
{
	struct tb t;
	struct log l;
	char expected[1024];
	struct pt_config *config;

	trace_flow(&t, 0);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	snprintf(expected, sizeof(expected), "%s%s", psb_events,
		 "b 1000 1002 3\n"
		 "b 1007 1011 4\n"
		 "b 100d 100d 1\n"
		 "b 1004 1011 6\n"
		 "b 100d 100d 1\n"
		 "e disabled 0\n");
	run_blk(&l, config, image);
	CHECK(log_is(&l, expected, "flow, blocks"));

	snprintf(expected, sizeof(expected), "%s%s", psb_events,
		 "i 1000 1\ni 1001 1\ni 1002 2\n"
		 "i 1007 1\ni 1008 5\ni 1010 1\ni 1011 1\n"
		 "i 100d 2\n"
		 "i 1004 1\ni 1005 2\ni 1007 1\ni 1008 5\ni 1010 1\n"
		 "i 1011 1\n"
		 "i 100d 2\n"
		 "e disabled 0\n");
	run_insn(&l, config, image);
	CHECK(log_is(&l, expected, "flow, instructions"));

	/* End blocks after calls. */
	config->flags.variant.block.end_on_call = 1;
	snprintf(expected, sizeof(expected), "%s%s", psb_events,
		 "b 1000 1002 3\n"
		 "b 1007 1008 2\n"
		 "b 1010 1011 2\n"
		 "b 100d 100d 1\n"
		 "b 1004 1008 4\n"
		 "b 1010 1011 2\n"
		 "b 100d 100d 1\n"
		 "e disabled 0\n");
	run_blk(&l, config, image);
	CHECK(log_is(&l, expected, "end_on_call"));

	/* End blocks after jumps. */
	config->flags.variant.block.end_on_call = 0;
	config->flags.variant.block.end_on_jump = 1;
	snprintf(expected, sizeof(expected), "%s%s", psb_events,
		 "b 1000 1002 3\n"
		 "b 1007 1011 4\n"
		 "b 100d 100d 1\n"
		 "b 1004 1005 2\n"
		 "b 1007 1011 4\n"
		 "b 100d 100d 1\n"
		 "e disabled 0\n");
	run_blk(&l, config, image);
	CHECK(log_is(&l, expected, "end_on_jump"));
}

/* Inside a transaction from the start: every block and instruction is
 * speculative. */
static void test_speculative(struct pt_image *image)
{
	struct tb t;
	struct log l;
	struct pt_config *config;

	trace_flow(&t, 1);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	run_blk(&l, config, image);
	CHECK(log_is(&l,
		     "e enabled 1000\n"
		     "e exec_mode 1000\n"
		     "e tsx 1000\n"
		     "b 1000 1002 3 s\n"
		     "b 1007 1011 4 s\n"
		     "b 100d 100d 1 s\n"
		     "b 1004 1011 6 s\n"
		     "b 100d 100d 1 s\n"
		     "e disabled 0\n", "speculative blocks"));

	run_insn(&l, config, image);
	CHECK(strstr(l.text, "i 1000 1 s\n") != NULL);
	CHECK(strstr(l.text, "i 100d 2 s\n") != NULL);
	CHECK(strstr(l.text, "i 1000 1\n") == NULL);
}

/* Errors: a not-taken bit on a return, and a return without a call. */
static void test_errors(struct pt_image *image)
{
	struct tb t;
	struct log l;
	struct pt_config *config;

	/* jz taken, then the ret gets a not-taken bit. */
	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_tnt(&t, 0x2, 2);
	config = tb_done(&t);
	run_blk(&l, config, image);
	CHECK(strstr(l.text, "x bad compressed return\n") != NULL);

	/* Start at the ret: nothing on the return stack. */
	tb_init(&t);
	tb_start64(&t, 0x1011);
	tb_tnt(&t, 0x1, 1);
	config = tb_done(&t);
	run_blk(&l, config, image);
	CHECK(strstr(l.text, "x compressed return without call\n") != NULL);
	run_insn(&l, config, image);
	CHECK(strstr(l.text, "x compressed return without call\n") != NULL);

	/* An indirect jump gets a TNT. */
	tb_init(&t);
	tb_start64(&t, 0x100d);
	tb_tnt(&t, 0x1, 1);
	config = tb_done(&t);
	run_blk(&l, config, image);
	CHECK(strstr(l.text, "x trace stream does not match query\n") != NULL);

	/* No code. */
	tb_init(&t);
	tb_start64(&t, 0x5000);
	tb_tnt(&t, 0x1, 1);
	config = tb_done(&t);
	run_blk(&l, config, image);
	CHECK(strstr(l.text, "x no memory mapped at this address\n") != NULL);
}

/* Argument checks. */
static void test_api(void)
{
	struct pt_config config;
	struct pt_block block;
	struct pt_insn insn;
	struct pt_event ev;
	struct pt_asid asid;
	uint64_t offset, time;
	uint32_t cbr, mtc, cyc;
	uint8_t buf[4] = { 0, 0, 0, 0 };
	struct pt_block_decoder *bd;
	struct pt_insn_decoder *id;

	CHECK(pt_blk_alloc_decoder(NULL) == NULL);
	CHECK(pt_insn_alloc_decoder(NULL) == NULL);
	CHECK_EQ(pt_blk_next(NULL, &block, sizeof(block)), -pte_invalid);
	CHECK_EQ(pt_insn_next(NULL, &insn, sizeof(insn)), -pte_invalid);
	CHECK_EQ(pt_blk_event(NULL, &ev, sizeof(ev)), -pte_invalid);
	CHECK_EQ(pt_blk_sync_forward(NULL), -pte_invalid);
	CHECK_EQ(pt_insn_resync(NULL), -pte_internal);
	CHECK_EQ(pt_blk_resync(NULL), -pte_invalid);
	CHECK(pt_blk_get_image(NULL) == NULL);
	CHECK(pt_blk_get_config(NULL) == NULL);
	pt_blk_free_decoder(NULL);
	pt_insn_free_decoder(NULL);

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	bd = pt_blk_alloc_decoder(&config);
	id = pt_insn_alloc_decoder(&config);
	CHECK(bd != NULL && id != NULL);
	if (!bd || !id)
		return;

	CHECK_EQ(pt_blk_sync_forward(bd), -pte_eos);
	CHECK_EQ(pt_insn_sync_forward(id), -pte_eos);
	CHECK_EQ(pt_blk_get_offset(bd, &offset), -pte_nosync);
	CHECK_EQ(pt_blk_next(bd, &block, sizeof(block)), -pte_nosync);
	CHECK_EQ(pt_insn_next(id, &insn, sizeof(insn)), -pte_nosync);
	CHECK_EQ(pt_blk_event(bd, &ev, sizeof(ev)), -pte_nosync);
	CHECK_EQ(pt_blk_time(bd, &time, &mtc, &cyc), -pte_no_time);
	CHECK_EQ(pt_blk_time(bd, &time, NULL, &cyc), -pte_invalid);
	CHECK_EQ(pt_blk_core_bus_ratio(bd, &cbr), -pte_no_cbr);
	CHECK_EQ(pt_insn_core_bus_ratio(id, &cbr), -pte_no_cbr);
	CHECK_EQ(pt_blk_asid(bd, &asid, sizeof(asid.size) - 1), -pte_invalid);
	CHECK_EQ(pt_blk_asid(bd, &asid, sizeof(asid)), 0);
	CHECK(asid.cr3 == pt_asid_no_cr3 && asid.size == sizeof(asid));
	CHECK_EQ(pt_insn_time(id, &time, &mtc, &cyc), -pte_no_time);
	CHECK_EQ(pt_insn_time(id, NULL, &mtc, &cyc), -pte_invalid);
	CHECK_EQ(pt_insn_time(NULL, &time, &mtc, &cyc), -pte_invalid);
	memset(&asid, 0xff, sizeof(asid));
	CHECK_EQ(pt_insn_asid(id, &asid, sizeof(asid)), 0);
	CHECK(asid.cr3 == pt_asid_no_cr3 && asid.size == sizeof(asid));
	CHECK_EQ(pt_insn_asid(id, &asid, sizeof(asid.size) - 1), -pte_invalid);
	CHECK_EQ(pt_insn_asid(id, NULL, sizeof(asid)), -pte_invalid);
	CHECK_EQ(pt_insn_asid(NULL, &asid, sizeof(asid)), -pte_invalid);
	CHECK(pt_blk_get_image(bd) != NULL);
	CHECK(pt_blk_get_config(bd) != NULL);
	CHECK(pt_insn_get_config(id)->begin == buf);

	pt_blk_free_decoder(bd);
	pt_insn_free_decoder(id);
}

int main(void)
{
	struct pt_image *image;
	struct mem m;

	mem_init(&m, 0x1000, code, sizeof(code));
	image = pt_image_alloc("flow");
	CHECK(image != NULL);
	if (!image)
		return check_done();
	CHECK_EQ(pt_image_set_callback(image, mem_read, &m), 0);

	test_flow(image);
	test_speculative(image);
	test_errors(image);
	test_api();

	pt_image_free(image);
	return check_done();
}

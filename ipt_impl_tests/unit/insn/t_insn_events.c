/* Events through pt_blk_event() and pt_insn_event(), each at its place in
 * the flow and with its IP: paging (bound to MOV CR3), ptwrite (after its
 * instruction), overflow, interrupts (async branch), execution mode
 * changes, disable and enable, tick, cbr, tsx. */
#include "blk_util.h"
#include "check.h"

/* 0x1000  nop
 * 0x1001  mov cr3, rax
 * 0x1004  ptwrite rax
 * 0x1009  nop
 * 0x100a  jz 0x100e
 * 0x100c  jmp rax
 * 0x100e  nop
 * 0x100f  jmp rax */
static const uint8_t code[] = {
	0x90, 0x0f, 0x22, 0xd8, 0xf3, 0x48, 0x0f, 0xae,
	0xe0, 0x90, 0x74, 0x02, 0xff, 0xe0, 0x90, 0xff,
	0xe0
};

static struct pt_image *image;
static int verbose;

/* Decode @t with both decoders; compare with the expected logs. */
static void check_both(struct tb *t, const char *name, const char *blk,
		       const char *insn, int ticks)
{
	struct pt_config *config;
	struct log l;

	config = tb_done(t);
	CHECK_EQ(t->errors, 0);

	config->flags.variant.block.enable_tick_events = ticks ? 1 : 0;
	run_blk(&l, config, image);
	if (verbose)
		printf("== %s blk\n%s", name, l.text);
	CHECK(log_is(&l, blk, name));

	memset(&config->flags, 0, sizeof(config->flags));
	config->flags.variant.insn.enable_tick_events = ticks ? 1 : 0;
	run_insn(&l, config, image);
	if (verbose)
		printf("== %s insn\n%s", name, l.text);
	CHECK(log_is(&l, insn, name));
}

static const char *const start =
	"e enabled 1000\n"
	"e exec_mode 1000\n";

static void expect(char *buf, size_t size, const char *rest)
{
	snprintf(buf, size, "%s%s", start, rest);
}

static void test_paging(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_pip(&t, 0xaaa000);
	tb_tnt(&t, 0x1, 1);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	expect(blk, sizeof(blk),
	       "b 1000 1001 2\n"
	       "e paging 0\n"
	       "b 1004 100a 3\n"
	       "b 100e 100f 2\n"
	       "e disabled 0\n");
	expect(insn, sizeof(insn),
	       "i 1000 1\ni 1001 3\n"
	       "e paging 0\n"
	       "i 1004 5\ni 1009 1\ni 100a 2\n"
	       "i 100e 1\ni 100f 2\n"
	       "e disabled 0\n");
	check_both(&t, "paging", blk, insn, 0);
}

static void test_ptwrite(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ptw(&t, 0x42, 1);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1004);
	tb_tnt(&t, 0x0, 1);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	expect(blk, sizeof(blk),
	       "b 1000 1004 3\n"
	       "e ptwrite 1004\n"
	       "b 1009 100a 2\n"
	       "b 100c 100c 1\n"
	       "e disabled 0\n");
	expect(insn, sizeof(insn),
	       "i 1000 1\ni 1001 3\ni 1004 5\n"
	       "e ptwrite 1004\n"
	       "i 1009 1\ni 100a 2\n"
	       "i 100c 2\n"
	       "e disabled 0\n");
	check_both(&t, "ptwrite", blk, insn, 0);
}

static void test_overflow(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_simple(&t, ppt_ovf);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x100e);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	expect(blk, sizeof(blk),
	       "e overflow 100e\n"
	       "b 100e 100f 2\n"
	       "e disabled 0\n");
	expect(insn, sizeof(insn),
	       "e overflow 100e\n"
	       "i 100e 1\ni 100f 2\n"
	       "e disabled 0\n");
	check_both(&t, "overflow", blk, insn, 0);
}

static void test_interrupt(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1009);
	tb_ip(&t, ppt_tip, pt_ipc_sext_48, 0x100e);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_sext_48, 0x100f);

	expect(blk, sizeof(blk),
	       "b 1000 1004 3\n"
	       "e async_branch 1009\n"
	       "b 100e 100e 1\n"
	       "e disabled 100f\n");
	expect(insn, sizeof(insn),
	       "i 1000 1\ni 1001 3\ni 1004 5\n"
	       "e async_branch 1009\n"
	       "i 100e 1\n"
	       "e disabled 100f\n");
	check_both(&t, "interrupt", blk, insn, 0);
}

static void test_exec_mode(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_tnt(&t, 0x0, 1);
	tb_mode_exec(&t, ptem_32bit);
	tb_ip(&t, ppt_tip, pt_ipc_sext_48, 0x1009);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	/* The disable binds to the next branch that needs trace. */
	expect(blk, sizeof(blk),
	       "b 1000 100a 5\n"
	       "b 100c 100c 1\n"
	       "e exec_mode 1009\n"
	       "b 1009 100a 2\n"
	       "e disabled 0\n");
	expect(insn, sizeof(insn),
	       "i 1000 1\ni 1001 3\ni 1004 5\ni 1009 1\ni 100a 2\n"
	       "i 100c 2\n"
	       "e exec_mode 1009\n"
	       "i 1009 1\ni 100a 2\n"
	       "e disabled 0\n");
	check_both(&t, "exec_mode", blk, insn, 0);
}

static void test_disable_enable(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_tnt(&t, 0x0, 1);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_sext_48, 0x1004);
	tb_ip(&t, ppt_tip_pge, pt_ipc_sext_48, 0x100e);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	expect(blk, sizeof(blk),
	       "b 1000 100a 5\n"
	       "b 100c 100c 1\n"
	       "e disabled 1004\n"
	       "e enabled 100e\n"
	       "b 100e 100f 2\n"
	       "e disabled 0\n");
	expect(insn, sizeof(insn),
	       "i 1000 1\ni 1001 3\ni 1004 5\ni 1009 1\ni 100a 2\n"
	       "i 100c 2\n"
	       "e disabled 1004\n"
	       "e enabled 100e\n"
	       "i 100e 1\ni 100f 2\n"
	       "e disabled 0\n");
	check_both(&t, "disable/enable", blk, insn, 0);
}

static void test_tick_cbr(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_simple(&t, ppt_psb);
	tb_tsc(&t, 0x1000);
	tb_cbr(&t, 0x20);
	tb_mode_exec(&t, ptem_64bit);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1000);
	tb_simple(&t, ppt_psbend);
	tb_tsc(&t, 0x2000);
	tb_tnt(&t, 0x1, 1);
	tb_cbr(&t, 0x24);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	snprintf(blk, sizeof(blk),
		 "e enabled 1000\ne cbr 0\ne exec_mode 1000\n"
		 "b 1000 100a 5\n"
		 "e tick 100e\n"
		 "e cbr 0\n"
		 "b 100e 100f 2\n"
		 "e disabled 0\n");
	snprintf(insn, sizeof(insn),
		 "e enabled 1000\ne cbr 0\ne exec_mode 1000\n"
		 "i 1000 1\ni 1001 3\ni 1004 5\ni 1009 1\ni 100a 2\n"
		 "e tick 100e\n"
		 "e cbr 0\n"
		 "i 100e 1\ni 100f 2\n"
		 "e disabled 0\n");
	check_both(&t, "tick, cbr", blk, insn, 1);
}

static void test_tsx(void)
{
	char blk[1024], insn[1024];
	struct tb t;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_mode_tsx(&t, 1, 0);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1009);
	tb_mode_tsx(&t, 0, 1);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x100a);
	tb_ip(&t, ppt_tip, pt_ipc_sext_48, 0x100e);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);

	expect(blk, sizeof(blk),
	       "b 1000 1004 3\n"
	       "e tsx 1009\n"
	       "b 1009 1009 1 s\n"
	       "e tsx 100a\n"
	       "e async_branch 100a\n"
	       "b 100e 100f 2\n"
	       "e disabled 0\n");
	expect(insn, sizeof(insn),
	       "i 1000 1\ni 1001 3\ni 1004 5\n"
	       "e tsx 1009\n"
	       "i 1009 1 s\n"
	       "e tsx 100a\n"
	       "e async_branch 100a\n"
	       "i 100e 1\ni 100f 2\n"
	       "e disabled 0\n");
	check_both(&t, "tsx", blk, insn, 0);
}

int main(int argc, char **argv)
{
	struct mem m;

	verbose = argc > 1;
	(void) argv;
	mem_init(&m, 0x1000, code, sizeof(code));
	image = pt_image_alloc("events");
	CHECK(image != NULL);
	if (!image)
		return check_done();
	pt_image_set_callback(image, mem_read, &m);

	test_paging();
	test_ptwrite();
	test_overflow();
	test_interrupt();
	test_exec_mode();
	test_disable_enable();
	test_tick_cbr();
	test_tsx();

	pt_image_free(image);
	return check_done();
}

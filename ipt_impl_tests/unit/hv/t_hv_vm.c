/* t_hv_vm: VM entries as the hardware writes them (ipt_*_set_vm_tolerant).
 *
 * A guest runs, a VM exit disables tracing (FUP, TIP.PGD), and the VM
 * entry sends a PSB+ whose FUP says tracing is on at the guest IP, then,
 * right after PSBEND, TIP.PGE to that same IP.  By default the decoders
 * stop there as libipt 2.3 does; vm-tolerant, they go on with the guest's
 * flow.  Also: a different IP in the TIP.PGE stays an error, and
 * ipt_*_in_guest follows PIP's NR bit. */
#include "blk_util.h"
#include "check.h"

/* 0x1000  nop
 * 0x1001  nop
 * 0x1002  nop
 * 0x1003  jmp rax */
static const uint8_t code[] = { 0x90, 0x90, 0x90, 0xff, 0xe0 };

/* Guest or host, as PIP's NR bit says: unknown before any PIP, then what
 * the last one said. */
static void check_in_guest(struct pt_image *image)
{
	struct pt_block_decoder *d;
	struct pt_event ev;
	struct pt_block b;
	struct tb t;
	int nr, status;

	for (nr = 0; nr < 2; ++nr) {
		tb_init(&t);
		tb_simple(&t, ppt_psb);
		tb_mode_exec(&t, ptem_64bit);
		tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1000);
		tb_pip_nr(&t, 0x7000, nr);
		tb_simple(&t, ppt_psbend);
		tb_ip(&t, ppt_tip_pgd, pt_ipc_sext_48, 0x1000);
		d = pt_blk_alloc_decoder(tb_done(&t));
		CHECK_EQ(t.errors, 0);
		if (!CHECK(d != NULL))
			return;
		pt_blk_set_image(d, image);
		CHECK_EQ(ipt_blk_in_guest(d), -pte_nosync);
		status = pt_blk_sync_forward(d);
		CHECK_EQ(ipt_blk_in_guest(d), -pte_nosync);
		while (status >= 0) {
			while (status >= 0 && (status & pts_event_pending))
				status = pt_blk_event(d, &ev, sizeof(ev));
			if (status >= 0)
				status = pt_blk_next(d, &b, sizeof(b));
		}
		CHECK_EQ(status, -pte_eos);
		CHECK_EQ(ipt_blk_in_guest(d), nr);
		pt_blk_free_decoder(d);
	}
	CHECK_EQ(ipt_blk_in_guest(NULL), -pte_invalid);
	CHECK_EQ(ipt_insn_in_guest(NULL), -pte_invalid);
}

/* The guest: enabled at 0x1000, exits after the first nop, enters again
 * at 0x1001 (or @entry), jumps to 0x1000 and is disabled there. */
static struct pt_config *trace_vm(struct tb *t, uint64_t entry)
{
	tb_init(t);
	tb_start64(t, 0x1000);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1001);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	tb_simple(t, ppt_psb);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1001);
	tb_pip_nr(t, 0x5000, 1);
	tb_simple(t, ppt_psbend);
	tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, entry);
	tb_ip(t, ppt_tip_pgd, pt_ipc_sext_48, 0x1000);
	return tb_done(t);
}

static void check(struct pt_image *image, uint64_t entry, int tolerant,
		  const char *expected, const char *name)
{
	struct pt_insn_decoder *d;
	struct tb t;
	struct log l;

	d = pt_insn_alloc_decoder(trace_vm(&t, entry));
	CHECK_EQ(t.errors, 0);
	if (!CHECK(d != NULL))
		return;
	CHECK_EQ(ipt_insn_set_vm_tolerant(d, tolerant), 0);
	pt_insn_set_image(d, image);
	run_insn_on(&l, d);
	CHECK(log_is(&l, expected, name));
	pt_insn_free_decoder(d);
}

int main(void)
{
	struct pt_image *image = pt_image_alloc(NULL);
	struct mem m;

	mem_init(&m, 0x1000, code, sizeof(code));
	pt_image_set_callback(image, mem_read, &m);

	check(image, 0x1001, 0,
	      "e enabled 1000\n"
	      "e exec_mode 1000\n"
	      "i 1000 1\n"
	      "e async_disabled 0\n"
	      "x bad status update\n", "default");
	check(image, 0x1001, 1,
	      "e enabled 1000\n"
	      "e exec_mode 1000\n"
	      "i 1000 1\n"
	      "e async_disabled 0\n"
	      "e enabled 1001\n"
	      "e exec_mode 1001\n"
	      "e async_paging 1001\n"
	      "e enabled 1001\n"
	      "i 1001 1\n"
	      "i 1002 1\n"
	      "i 1003 2\n"
	      "e disabled 1000\n", "vm-tolerant");
	check(image, 0x1002, 1,
	      "e enabled 1000\n"
	      "e exec_mode 1000\n"
	      "i 1000 1\n"
	      "e async_disabled 0\n"
	      "e enabled 1001\n"
	      "e exec_mode 1001\n"
	      "e async_paging 1001\n"
	      "x unexpected packet context\n", "vm-tolerant, other IP");

	check_in_guest(image);
	CHECK_EQ(ipt_insn_set_vm_tolerant(NULL, 1), -pte_invalid);
	CHECK_EQ(ipt_blk_set_vm_tolerant(NULL, 1), -pte_invalid);
	pt_image_free(image);
	return check_done();
}

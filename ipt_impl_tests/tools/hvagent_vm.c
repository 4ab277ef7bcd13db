/* hvagent_vm DIR - a trace of a host and its guest for hvagent-check.
 *
 * Writes DIR/vm.bin (code, at 0x1000: three nops and jmp *%rax), DIR/vm.pt
 * and DIR/vm.ips, the instruction addresses the agent must report.  The
 * host (PIP with NR clear) runs the nop at 0x1000 and enters the guest at
 * 0x1001, as the hardware writes it: FUP and TIP.PGD, then a PSB+ whose PIP
 * has NR set and whose FUP says tracing is on at 0x1001, then TIP.PGE
 * 0x1001.  The guest runs to the jump, whose TIP.PGD ends the trace.  The
 * agent keeps the guest's flow only: 0x1001, 0x1002, 0x1003. */
#include "blk_util.h"

#include <stdio.h>

static const uint8_t code[] = { 0x90, 0x90, 0x90, 0xff, 0xe0 };

static int put(const char *dir, const char *name, const void *bytes,
	       size_t size)
{
	char path[1024];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return 0;
	ok = fwrite(bytes, 1, size, f) == size;
	return fclose(f) == 0 && ok;
}

/* PSB+ saying tracing is on at @ip, in 64-bit mode, with CR3 @cr3 of the
 * host (@nr clear) or of a guest. */
static void psb_plus(struct tb *t, uint64_t ip, uint64_t cr3, int nr)
{
	tb_simple(t, ppt_psb);
	tb_mode_exec(t, ptem_64bit);
	tb_ip(t, ppt_fup, pt_ipc_sext_48, ip);
	tb_pip_nr(t, cr3, nr);
	tb_simple(t, ppt_psbend);
}

int main(int argc, char **argv)
{
	static const char ips[] = "0000000000001001\n0000000000001002\n"
				  "0000000000001003\n";
	static struct tb t;
	struct pt_config *config;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	tb_init(&t);
	psb_plus(&t, 0x1000, 0x3000, 0);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1001);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	psb_plus(&t, 0x1001, 0x5000, 1);
	tb_ip(&t, ppt_tip_pge, pt_ipc_sext_48, 0x1001);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_sext_48, 0x1000);
	config = tb_done(&t);
	if (t.errors ||
	    !put(argv[1], "vm.bin", code, sizeof(code)) ||
	    !put(argv[1], "vm.pt", config->begin,
		 (size_t) (config->end - config->begin)) ||
	    !put(argv[1], "vm.ips", ips, sizeof(ips) - 1)) {
		fprintf(stderr, "%s: cannot write the trace\n", argv[0]);
		return 1;
	}
	return 0;
}

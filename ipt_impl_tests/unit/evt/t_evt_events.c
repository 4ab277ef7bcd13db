/* The event decoder, one small encoder-built trace per event type: each
 * event and each of its fields as the SDM's packet rules give them (with
 * libipt 2.3's binding of packets to events), the errata workarounds on
 * and off, and the errors of broken traces. */
#include "ipt.h"
#include "check.h"
#include "evt_trace.h"

#define A 0x400000ull
#define B 0x401000ull
#define C 0x402000ull

static struct pt_event ev[64];
static int nev, last;

/* Decode the whole trace: events in ev[0..nev), the final status in last
 * (-pte_eos when all went well). */
static void run_cfg(const struct pt_config *config)
{
	struct pt_event_decoder *d = pt_evt_alloc_decoder(config);
	int err;

	nev = 0;
	last = 0;
	if (!CHECK(d != NULL))
		return;
	err = pt_evt_sync_forward(d);
	while (err >= 0 && nev < 64) {
		memset(&ev[nev], 0xa5, sizeof(ev[nev]));
		err = pt_evt_next(d, &ev[nev], sizeof(ev[nev]));
		if (err >= 0)
			nev++;
	}
	last = err;
	pt_evt_free_decoder(d);
}

static void run(struct tb *t)
{
	tb_end(t);
	CHECK(!t->broken);
	run_cfg(&t->config);
}

/* Start with PSB+ holding TSC, a FUP at A and 64-bit mode. */
static void begin_enabled(struct tb *t)
{
	tb_begin(t);
	tb_add(t, pk(ppt_psb));
	tb_add(t, pk_tsc(0x1000));
	tb_add(t, pk_exec(ptem_64bit, 0));
	tb_add(t, pk_full(ppt_fup, A));
	tb_add(t, pk(ppt_psbend));
}

/* The three status events begin_enabled() gives: enabled, exec_mode. */
static int skip_header(void)
{
	CHECK(nev >= 2);
	CHECK_EQ(ev[0].type, ptev_enabled);
	CHECK_EQ(ev[1].type, ptev_exec_mode);
	return 2;
}

static void check_ev(int i, enum pt_event_type type, int supp, int status)
{
	if (!CHECK(i < nev)) {
		printf("     missing event %d of type %d (last %d)\n", i, type,
		       last);
		return;
	}
	if (ev[i].type != type)
		printf("     event %d\n", i);
	CHECK_EQ(ev[i].type, type);
	CHECK_EQ(ev[i].ip_suppressed, supp);
	CHECK_EQ(ev[i].status_update, status);
}

static void test_psb(void)
{
	struct tb t;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_tsc(0x1000));
	tb_add(&t, pk_cbr(0x20));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_tsx(1, 0));
	tb_add(&t, pk_pip(0x5000, 1));
	tb_add(&t, pk_vmcs(0x7000));
	tb_add(&t, pk_mnt(0x1234));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(0x2, 2));
	tb_add(&t, pk_full(ppt_tip, B));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 10);
	check_ev(0, ptev_enabled, 0, 1);
	CHECK_EQ(ev[0].variant.enabled.ip, A);
	CHECK_EQ(ev[0].variant.enabled.resumed, 0);
	CHECK_EQ(ev[0].has_tsc, 1);
	CHECK_EQ(ev[0].tsc, 0x1000);
	CHECK_EQ(ev[0].lost_mtc, 0);
	CHECK_EQ(ev[0].lost_cyc, 0);
	check_ev(1, ptev_cbr, 0, 1);
	CHECK_EQ(ev[1].variant.cbr.ratio, 0x20);
	CHECK_EQ(ev[1].has_tsc, 1);
	check_ev(2, ptev_exec_mode, 0, 1);
	CHECK_EQ(ev[2].variant.exec_mode.mode, ptem_64bit);
	CHECK_EQ(ev[2].variant.exec_mode.ip, A);
	check_ev(3, ptev_tsx, 0, 1);
	CHECK_EQ(ev[3].variant.tsx.ip, A);
	CHECK_EQ(ev[3].variant.tsx.speculative, 1);
	CHECK_EQ(ev[3].variant.tsx.aborted, 0);
	check_ev(4, ptev_async_paging, 0, 1);
	CHECK_EQ(ev[4].variant.async_paging.cr3, 0x5000);
	CHECK_EQ(ev[4].variant.async_paging.non_root, 1);
	CHECK_EQ(ev[4].variant.async_paging.ip, A);
	check_ev(5, ptev_async_vmcs, 0, 1);
	CHECK_EQ(ev[5].variant.async_vmcs.base, 0x7000);
	CHECK_EQ(ev[5].variant.async_vmcs.ip, A);
	/* MNT in PSB+ is not a status update. */
	check_ev(6, ptev_mnt, 0, 0);
	CHECK_EQ(ev[6].variant.mnt.payload, 0x1234);
	check_ev(7, ptev_tnt, 0, 0);
	CHECK_EQ(ev[7].variant.tnt.size, 2);
	CHECK_EQ(ev[7].variant.tnt.bits, 0x2);
	CHECK_EQ(ev[7].has_tsc, 1);
	check_ev(8, ptev_tip, 0, 0);
	CHECK_EQ(ev[8].variant.tip.ip, B);
	check_ev(9, ptev_disabled, 1, 0);
}

/* PSB+ without FUP: tracing is off; TIP.PGE enables, TIP.PGD disables. */
static void test_enable_disable(void)
{
	struct tb t;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_exec(ptem_32bit, 0));
	tb_add(&t, pk_full(ppt_tip_pge, A));
	tb_add(&t, pk_full(ppt_tip_pgd, B));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 4);
	check_ev(0, ptev_disabled, 1, 1);
	CHECK_EQ(ev[0].has_tsc, 0);
	/* The enable comes first, then the MODE.EXEC bound to it. */
	check_ev(1, ptev_enabled, 0, 0);
	CHECK_EQ(ev[1].variant.enabled.ip, A);
	check_ev(2, ptev_exec_mode, 0, 0);
	CHECK_EQ(ev[2].variant.exec_mode.mode, ptem_32bit);
	CHECK_EQ(ev[2].variant.exec_mode.ip, A);
	check_ev(3, ptev_disabled, 0, 0);
	CHECK_EQ(ev[3].variant.disabled.ip, B);
}

/* FUP, VMCS, PIP, TIP: an asynchronous branch; VMCS before PIP. */
static void test_async(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_pip(0x6000, 0));
	tb_add(&t, pk_vmcs(0x8000));
	tb_add(&t, pk_ip(ppt_tip, pt_ipc_update_16, C & 0xffff));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 4);
	check_ev(i, ptev_async_branch, 0, 0);
	CHECK_EQ(ev[i].variant.async_branch.from, B);
	CHECK_EQ(ev[i].variant.async_branch.to, C);
	check_ev(i + 1, ptev_async_vmcs, 0, 0);
	CHECK_EQ(ev[i + 1].variant.async_vmcs.base, 0x8000);
	CHECK_EQ(ev[i + 1].variant.async_vmcs.ip, C);
	check_ev(i + 2, ptev_async_paging, 0, 0);
	CHECK_EQ(ev[i + 2].variant.async_paging.cr3, 0x6000);
	CHECK_EQ(ev[i + 2].variant.async_paging.non_root, 0);
	CHECK_EQ(ev[i + 2].variant.async_paging.ip, C);
	check_ev(i + 3, ptev_async_disabled, 1, 0);
	CHECK_EQ(ev[i + 3].variant.async_disabled.at, A);
}

/* PIP and VMCS on their own; STOP; MNT; CBR. */
static void test_standalone(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_pip(0x9000, 1));
	tb_add(&t, pk_vmcs(0xa000));
	tb_add(&t, pk_tsc(0x2000));
	tb_add(&t, pk_cbr(7));
	tb_add(&t, pk_mnt(0xabcdef));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_add(&t, pk(ppt_stop));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 6);
	check_ev(i, ptev_paging, 0, 0);
	CHECK_EQ(ev[i].variant.paging.cr3, 0x9000);
	CHECK_EQ(ev[i].variant.paging.non_root, 1);
	check_ev(i + 1, ptev_vmcs, 0, 0);
	CHECK_EQ(ev[i + 1].variant.vmcs.base, 0xa000);
	check_ev(i + 2, ptev_cbr, 0, 0);
	CHECK_EQ(ev[i + 2].variant.cbr.ratio, 7);
	CHECK_EQ(ev[i + 2].has_tsc, 1);
	CHECK_EQ(ev[i + 2].tsc, 0x2000);
	check_ev(i + 3, ptev_mnt, 0, 0);
	CHECK_EQ(ev[i + 3].variant.mnt.payload, 0xabcdef);
	check_ev(i + 4, ptev_disabled, 1, 0);
	check_ev(i + 5, ptev_stop, 0, 0);
	CHECK_EQ(ev[i + 5].tsc, 0x2000);
}

/* OVF: resolved with tracing on (FUP), off (TIP.PGE), at the end. */
static void test_overflow(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk(ppt_ovf));
	tb_add(&t, pk_tsc(0x3000));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_add(&t, pk(ppt_ovf));
	tb_add(&t, pk_full(ppt_tip_pge, C));
	tb_add(&t, pk(ppt_ovf));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 5);
	/* The OVF's time, the FUP's IP. */
	check_ev(i, ptev_overflow, 0, 0);
	CHECK_EQ(ev[i].variant.overflow.ip, B);
	CHECK_EQ(ev[i].tsc, 0x1000);
	check_ev(i + 1, ptev_disabled, 1, 0);
	CHECK_EQ(ev[i + 1].tsc, 0x3000);
	check_ev(i + 2, ptev_overflow, 1, 0);
	check_ev(i + 3, ptev_enabled, 0, 0);
	CHECK_EQ(ev[i + 3].variant.enabled.ip, C);
	check_ev(i + 4, ptev_overflow, 1, 0);
}

/* MODE.EXEC binds to TIP; MODE.TSX to FUP (abort: FUP then TIP). */
static void test_mode(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_exec(ptem_16bit, 0));
	tb_add(&t, pk_full(ppt_tip, B));
	tb_add(&t, pk_exec(ptem_16bit, 1));	/* no change: no event */
	tb_add(&t, pk_full(ppt_tip, C));
	tb_add(&t, pk_tsx(1, 0));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk_tsx(0, 1));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_full(ppt_tip, C));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 6);
	check_ev(i, ptev_tip, 0, 0);
	CHECK_EQ(ev[i].variant.tip.ip, B);
	check_ev(i + 1, ptev_exec_mode, 0, 0);
	CHECK_EQ(ev[i + 1].variant.exec_mode.mode, ptem_16bit);
	CHECK_EQ(ev[i + 1].variant.exec_mode.ip, B);
	check_ev(i + 2, ptev_tip, 0, 0);
	CHECK_EQ(ev[i + 2].variant.tip.ip, C);
	check_ev(i + 3, ptev_tsx, 0, 0);
	CHECK_EQ(ev[i + 3].variant.tsx.ip, A);
	CHECK_EQ(ev[i + 3].variant.tsx.speculative, 1);
	CHECK_EQ(ev[i + 3].variant.tsx.aborted, 0);
	check_ev(i + 4, ptev_tsx, 0, 0);
	CHECK_EQ(ev[i + 4].variant.tsx.ip, B);
	CHECK_EQ(ev[i + 4].variant.tsx.speculative, 0);
	CHECK_EQ(ev[i + 4].variant.tsx.aborted, 1);
	check_ev(i + 5, ptev_async_branch, 0, 0);
	CHECK_EQ(ev[i + 5].variant.async_branch.from, B);
	CHECK_EQ(ev[i + 5].variant.async_branch.to, C);
}

/* Where ipt.h deliberately does better than libipt 2.3, which fails both
 * traces with an error although they are valid. */
static void test_deviations(void)
{
	struct tb t;
	int i;

	/* An MWAIT waiting for its EXSTOP stands before an asynchronous
	 * branch in the queue. */
	begin_enabled(&t);
	tb_add(&t, pk_mwait(1, 0));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_full(ppt_tip, C));
	tb_add(&t, pk_exstop(1));
	tb_add(&t, pk_full(ppt_fup, A));
	run(&t);
	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 3);
	check_ev(i, ptev_async_branch, 0, 0);
	CHECK_EQ(ev[i].variant.async_branch.from, B);
	CHECK_EQ(ev[i].variant.async_branch.to, C);
	check_ev(i + 1, ptev_mwait, 0, 0);
	CHECK_EQ(ev[i + 1].variant.mwait.ip, A);
	check_ev(i + 2, ptev_exstop, 0, 0);

	/* FUP, MODE.EXEC (unchanged), TIP.PGD: an asynchronous disable. */
	begin_enabled(&t);
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_supp(ppt_tip_pge));
	run(&t);
	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 2);
	check_ev(i, ptev_async_disabled, 1, 0);
	CHECK_EQ(ev[i].variant.async_disabled.at, B);
	check_ev(i + 1, ptev_enabled, 1, 0);

	begin_enabled(&t);
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_tip_pge, C));
	run(&t);
	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 2);
	check_ev(i, ptev_async_disabled, 1, 0);
	check_ev(i + 1, ptev_enabled, 0, 0);
	CHECK_EQ(ev[i + 1].variant.enabled.ip, C);
}

/* iflags events only when asked for. */
static void test_iflags(void)
{
	struct tb t;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_exec(ptem_64bit, 1));
	tb_add(&t, pk_full(ppt_tip, B));
	tb_end(&t);
	t.config.flags.variant.event.enable_iflags_events = 1;
	run_cfg(&t.config);

	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 5);
	check_ev(0, ptev_enabled, 0, 1);
	check_ev(1, ptev_exec_mode, 0, 1);
	check_ev(2, ptev_iflags, 0, 1);
	CHECK_EQ(ev[2].variant.iflags.iflag, 0);
	CHECK_EQ(ev[2].variant.iflags.ip, A);
	check_ev(3, ptev_tip, 0, 0);
	check_ev(4, ptev_iflags, 0, 0);
	CHECK_EQ(ev[4].variant.iflags.iflag, 1);
	CHECK_EQ(ev[4].variant.iflags.ip, B);

	/* Without the flag the IF change binds silently. */
	t.config.flags.variant.event.enable_iflags_events = 0;
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 3);
	check_ev(2, ptev_tip, 0, 0);
}

/* Power: EXSTOP, MWAIT, PWRE, PWRX. */
static void test_power(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_mwait(5, 1));
	tb_add(&t, pk_exstop(1));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_pwre(1, 2, 1));
	tb_add(&t, pk_tsc(0x4000));
	tb_add(&t, pk_pwrx(3, 4, 1, 0, 1));
	tb_add(&t, pk_exstop(0));
	tb_add(&t, pk_mwait(6, 0));
	tb_add(&t, pk_exstop(0));
	tb_add(&t, pk_pwrx(5, 6, 0, 1, 0));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 8);
	check_ev(i, ptev_mwait, 0, 0);
	CHECK_EQ(ev[i].variant.mwait.ip, B);
	CHECK_EQ(ev[i].variant.mwait.hints, 5);
	CHECK_EQ(ev[i].variant.mwait.ext, 1);
	check_ev(i + 1, ptev_exstop, 0, 0);
	CHECK_EQ(ev[i + 1].variant.exstop.ip, B);
	/* PWRE is reported at PWRX, with its own time. */
	check_ev(i + 2, ptev_pwre, 0, 0);
	CHECK_EQ(ev[i + 2].variant.pwre.state, 1);
	CHECK_EQ(ev[i + 2].variant.pwre.sub_state, 2);
	CHECK_EQ(ev[i + 2].variant.pwre.hw, 1);
	CHECK_EQ(ev[i + 2].tsc, 0x1000);
	check_ev(i + 3, ptev_pwrx, 0, 0);
	CHECK_EQ(ev[i + 3].variant.pwrx.last, 3);
	CHECK_EQ(ev[i + 3].variant.pwrx.deepest, 4);
	CHECK_EQ(ev[i + 3].variant.pwrx.interrupt, 1);
	CHECK_EQ(ev[i + 3].variant.pwrx.store, 0);
	CHECK_EQ(ev[i + 3].variant.pwrx.autonomous, 1);
	CHECK_EQ(ev[i + 3].tsc, 0x4000);
	check_ev(i + 4, ptev_exstop, 1, 0);
	check_ev(i + 5, ptev_mwait, 1, 0);
	CHECK_EQ(ev[i + 5].variant.mwait.hints, 6);
	check_ev(i + 6, ptev_exstop, 1, 0);
	check_ev(i + 7, ptev_pwrx, 0, 0);
	CHECK_EQ(ev[i + 7].variant.pwrx.store, 1);
}

/* PTWRITE with and without IP. */
static void test_ptwrite(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_ptw(1, 1, 0x1122334455667788ull));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_ptw(0, 0, 0xdeadbeef));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 2);
	check_ev(i, ptev_ptwrite, 0, 0);
	CHECK_EQ(ev[i].variant.ptwrite.ip, B);
	CHECK_EQ(ev[i].variant.ptwrite.size, 8);
	CHECK_EQ(ev[i].variant.ptwrite.payload, 0x1122334455667788ull);
	check_ev(i + 1, ptev_ptwrite, 1, 0);
	CHECK_EQ(ev[i + 1].variant.ptwrite.size, 4);
	CHECK_EQ(ev[i + 1].variant.ptwrite.payload, 0xdeadbeef);
}

/* Event Trace: CFE (and EVD) for each CFE type. */
static void cfe_one(enum pt_cfe_type type, uint8_t vector,
		    enum pt_event_type expect)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_cfe(type, vector, 1));
	tb_add(&t, pk_full(ppt_fup, B));
	run(&t);
	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	if (nev != i + 1)
		printf("     cfe type %d\n", type);
	CHECK_EQ(nev, i + 1);
	check_ev(i, expect, 0, 0);
	CHECK_EQ(ev[i].tsc, 0x1000);
	switch (expect) {
	case ptev_iret: CHECK_EQ(ev[i].variant.iret.ip, B); break;
	case ptev_smi: CHECK_EQ(ev[i].variant.smi.ip, B); break;
	case ptev_init: CHECK_EQ(ev[i].variant.init.ip, B); break;
	case ptev_vmentry: CHECK_EQ(ev[i].variant.vmentry.ip, B); break;
	case ptev_shutdown: CHECK_EQ(ev[i].variant.shutdown.ip, B); break;
	case ptev_uiret: CHECK_EQ(ev[i].variant.uiret.ip, B); break;
	case ptev_syscall: CHECK_EQ(ev[i].variant.syscall.ip, B); break;
	case ptev_uintr:
		CHECK_EQ(ev[i].variant.uintr.ip, B);
		CHECK_EQ(ev[i].variant.uintr.vector, vector);
		break;
	case ptev_swintr:
		CHECK_EQ(ev[i].variant.swintr.ip, B);
		CHECK_EQ(ev[i].variant.swintr.vector, vector);
		break;
	case ptev_interrupt:
		CHECK_EQ(ev[i].variant.interrupt.ip, B);
		CHECK_EQ(ev[i].variant.interrupt.vector, vector);
		CHECK_EQ(ev[i].variant.interrupt.has_cr2, 0);
		break;
	case ptev_vmexit:
		CHECK_EQ(ev[i].variant.vmexit.ip, B);
		CHECK_EQ(ev[i].variant.vmexit.has_vector, 0);
		break;
	default:
		CHECK(0);
	}
}

static void test_cfe(void)
{
	struct tb t;
	int i;

	cfe_one(pt_cfe_intr, 13, ptev_interrupt);
	cfe_one(pt_cfe_iret, 0, ptev_iret);
	cfe_one(pt_cfe_smi, 0, ptev_smi);
	cfe_one(pt_cfe_init, 0, ptev_init);
	cfe_one(pt_cfe_vmentry, 0, ptev_vmentry);
	cfe_one(pt_cfe_vmexit, 0, ptev_vmexit);
	cfe_one(pt_cfe_shutdown, 0, ptev_shutdown);
	cfe_one(pt_cfe_uintr, 9, ptev_uintr);
	cfe_one(pt_cfe_uiret, 0, ptev_uiret);
	cfe_one(pt_cfe_swintr, 0x80, ptev_swintr);
	cfe_one(pt_cfe_syscall, 0, ptev_syscall);

	/* EVD data for interrupts and VM exits; asynchronous INTR binds
	 * to the FUP of the FUP+TIP pair. */
	begin_enabled(&t);
	tb_add(&t, pk_evd(pt_evd_cr2, 0xdead000));
	tb_add(&t, pk_cfe(pt_cfe_intr, 14, 0));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_full(ppt_tip, C));
	tb_add(&t, pk_evd(pt_evd_vmxq, 0x11));
	tb_add(&t, pk_evd(pt_evd_vmxr, 0x22));
	tb_add(&t, pk_cfe(pt_cfe_vmexit_intr, 3, 1));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	/* With tracing off: RSM and SIPI have no IP at all. */
	tb_add(&t, pk_cfe(pt_cfe_rsm, 0, 0));
	tb_add(&t, pk_cfe(pt_cfe_sipi, 7, 0));
	tb_add(&t, pk_cfe(pt_cfe_smi, 0, 0));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 7);
	check_ev(i, ptev_interrupt, 0, 0);
	CHECK_EQ(ev[i].variant.interrupt.vector, 14);
	CHECK_EQ(ev[i].variant.interrupt.has_cr2, 1);
	CHECK_EQ(ev[i].variant.interrupt.cr2, 0xdead000);
	CHECK_EQ(ev[i].variant.interrupt.ip, B);
	check_ev(i + 1, ptev_async_branch, 0, 0);
	CHECK_EQ(ev[i + 1].variant.async_branch.from, B);
	CHECK_EQ(ev[i + 1].variant.async_branch.to, C);
	check_ev(i + 2, ptev_vmexit, 0, 0);
	CHECK_EQ(ev[i + 2].variant.vmexit.has_vector, 1);
	CHECK_EQ(ev[i + 2].variant.vmexit.vector, 3);
	CHECK_EQ(ev[i + 2].variant.vmexit.has_vmxq, 1);
	CHECK_EQ(ev[i + 2].variant.vmexit.vmxq, 0x11);
	CHECK_EQ(ev[i + 2].variant.vmexit.has_vmxr, 1);
	CHECK_EQ(ev[i + 2].variant.vmexit.vmxr, 0x22);
	CHECK_EQ(ev[i + 2].variant.vmexit.ip, A);
	check_ev(i + 3, ptev_disabled, 1, 0);
	check_ev(i + 4, ptev_rsm, 1, 0);
	check_ev(i + 5, ptev_sipi, 1, 0);
	CHECK_EQ(ev[i + 5].variant.sipi.vector, 7);
	check_ev(i + 6, ptev_smi, 1, 0);
}

/* TRIG: with IP (FUP), with ICNT, without either. */
static void test_trig(void)
{
	struct tb t;
	int i;

	begin_enabled(&t);
	tb_add(&t, pk_trig(5, 1, 0, 1, 1));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_trig(1, 1, 7, 0, 0));
	tb_add(&t, pk_trig(2, 0, 0, 0, 0));
	run(&t);

	CHECK_EQ(last, -pte_eos);
	i = skip_header();
	CHECK_EQ(nev, i + 3);
	check_ev(i, ptev_trig, 0, 0);
	CHECK_EQ(ev[i].variant.trig.trbv, 5);
	CHECK_EQ(ev[i].variant.trig.mult, 1);
	CHECK_EQ(ev[i].variant.trig.icnt, 0);
	CHECK_EQ(ev[i].variant.trig.ip, B);
	check_ev(i + 1, ptev_trig, 0, 0);
	CHECK_EQ(ev[i + 1].variant.trig.icnt, 7);
	CHECK_EQ(ev[i + 1].variant.trig.trbv, 1);
	check_ev(i + 2, ptev_trig, 1, 0);
	CHECK_EQ(ev[i + 2].variant.trig.trbv, 2);
}

/* Broken traces: the decoder stops with the error libipt gives. */
static void expect_error(struct tb *t, int err, int events)
{
	run(t);
	CHECK_EQ(last, err);
	CHECK_EQ(nev, events);
}

static void test_errors(void)
{
	struct tb t;

	/* TNT and TIP need tracing on. */
	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(1, 1));
	expect_error(&t, -pte_bad_context, 1);

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_full(ppt_tip, A));
	expect_error(&t, -pte_bad_context, 1);

	/* TRIG.IP needs a valid zero ICNT. */
	begin_enabled(&t);
	tb_add(&t, pk_trig(1, 0, 0, 1, 0));
	expect_error(&t, -pte_bad_packet, 2);

	/* Two CR2s for one CFE. */
	begin_enabled(&t);
	tb_add(&t, pk_evd(pt_evd_cr2, 1));
	tb_add(&t, pk_evd(pt_evd_cr2, 2));
	expect_error(&t, -pte_bad_context, 2);

	/* RSM does not bind to a FUP. */
	begin_enabled(&t);
	tb_add(&t, pk_cfe(pt_cfe_rsm, 0, 1));
	expect_error(&t, -pte_bad_packet, 2);

	/* An asynchronous branch needs a source IP. */
	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_full(ppt_tip_pge, A));
	tb_add(&t, pk_supp(ppt_fup));
	expect_error(&t, -pte_ip_suppressed, 2);

	/* A PSB must not cut an event in half. */
	begin_enabled(&t);
	tb_add(&t, pk_exstop(1));
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	expect_error(&t, -pte_bad_context, 2);

	/* A TIP in PSB+. */
	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_tip, A));
	tb_add(&t, pk(ppt_psbend));
	expect_error(&t, -pte_bad_context, 0);

	/* Inconsistent MODE.EXEC status in a second PSB+. */
	begin_enabled(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_exec(ptem_32bit, 0));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	expect_error(&t, -pte_bad_status_update, 2);

	/* No PSB at all. */
	tb_begin(&t);
	tb_add(&t, pk_tsc(1));
	expect_error(&t, -pte_eos, 0);
}

/* Errata: each workaround switched on and off. */
static void test_errata(void)
{
	struct tb t;

	/* BDM70: FUP in PSB+ followed by TIP.PGE. */
	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_full(ppt_tip_pge, B));
	tb_end(&t);
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 2);
	check_ev(0, ptev_enabled, 0, 1);
	check_ev(1, ptev_enabled, 0, 0);
	t.config.errata.bdm70 = 1;
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 2);
	check_ev(0, ptev_disabled, 1, 1);
	check_ev(1, ptev_enabled, 0, 0);
	CHECK_EQ(ev[1].variant.enabled.ip, B);

	/* SKD010: OVF whose FUP was dropped; resume at the TIP. */
	begin_enabled(&t);
	tb_add(&t, pk(ppt_ovf));
	tb_add(&t, pk_full(ppt_tip, C));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_end(&t);
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_bad_context);
	CHECK_EQ(nev, 2);
	t.config.errata.skd010 = 1;
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 4);
	check_ev(2, ptev_overflow, 0, 0);
	CHECK_EQ(ev[2].variant.overflow.ip, C);
	check_ev(3, ptev_disabled, 1, 0);

	/* APL11: OVF followed by a spurious TIP.PGD. */
	begin_enabled(&t);
	tb_add(&t, pk(ppt_ovf));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_add(&t, pk_full(ppt_tip_pge, C));
	tb_end(&t);
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_bad_context);
	t.config.errata.apl11 = 1;
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 4);
	check_ev(2, ptev_overflow, 1, 0);
	check_ev(3, ptev_enabled, 0, 0);
	CHECK_EQ(ev[3].variant.enabled.ip, C);

	/* APL12: OVF with a FUP although tracing was off. */
	begin_enabled(&t);
	tb_add(&t, pk(ppt_ovf));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_full(ppt_tip_pge, C));
	tb_end(&t);
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 4);
	check_ev(2, ptev_overflow, 0, 0);
	CHECK_EQ(ev[2].variant.overflow.ip, B);
	t.config.errata.apl12 = 1;
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 4);
	check_ev(2, ptev_overflow, 1, 0);
	check_ev(3, ptev_enabled, 0, 0);

	/* keep_tcal_on_ovf: decoding goes on the same. */
	t.config.flags.variant.event.keep_tcal_on_ovf = 1;
	run_cfg(&t.config);
	CHECK_EQ(last, -pte_eos);
	CHECK_EQ(nev, 4);
}

/* The API's argument checks, offsets and sync variants. */
static void test_api(void)
{
	struct pt_event_decoder *d;
	struct pt_event e;
	struct tb t;
	uint64_t off, psb2;

	begin_enabled(&t);
	tb_add(&t, pk_full(ppt_tip, B));
	psb2 = tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(1, 1));
	tb_end(&t);

	CHECK(pt_evt_alloc_decoder(NULL) == NULL);
	d = pt_evt_alloc_decoder(&t.config);
	CHECK(d != NULL);
	CHECK(pt_evt_get_config(d) != NULL);
	CHECK(pt_evt_get_config(d)->begin == t.buf);
	CHECK(pt_evt_get_config(NULL) == NULL);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), -pte_nosync);
	CHECK_EQ(pt_evt_next(NULL, &e, sizeof(e)), -pte_invalid);
	CHECK_EQ(pt_evt_next(d, NULL, sizeof(e)), -pte_invalid);
	CHECK_EQ(pt_evt_next(d, &e, 4), -pte_invalid);
	CHECK_EQ(pt_evt_get_offset(d, NULL), -pte_invalid);
	CHECK_EQ(pt_evt_get_offset(NULL, &off), -pte_invalid);
	CHECK_EQ(pt_evt_sync_forward(NULL), -pte_invalid);
	CHECK_EQ(pt_evt_get_sync_offset(NULL, &off), -pte_invalid);

	CHECK_EQ(pt_evt_sync_forward(d), 0);
	CHECK_EQ(pt_evt_get_sync_offset(d, &off), 0);
	CHECK_EQ(off, 0);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), 0);
	CHECK_EQ(e.type, ptev_enabled);
	CHECK_EQ(pt_evt_sync_forward(d), 0);
	CHECK_EQ(pt_evt_get_sync_offset(d, &off), 0);
	CHECK_EQ(off, psb2);

	CHECK_EQ(pt_evt_sync_backward(d), 0);
	CHECK_EQ(pt_evt_get_sync_offset(d, &off), 0);
	CHECK_EQ(off, 0);
	CHECK_EQ(pt_evt_sync_set(d, psb2), 0);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), 0);
	CHECK_EQ(e.type, ptev_disabled);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), -pte_bad_context);
	CHECK_EQ(pt_evt_sync_set(d, 1), -pte_nosync);

	/* The last PSB from the end. */
	pt_evt_free_decoder(d);
	d = pt_evt_alloc_decoder(&t.config);
	CHECK_EQ(pt_evt_sync_backward(d), 0);
	CHECK_EQ(pt_evt_get_sync_offset(d, &off), 0);
	CHECK_EQ(off, psb2);

	/* A smaller event gets what fits, a larger one zeros past ours. */
	{
		uint8_t big[sizeof(struct pt_event) + 16];
		size_t k;

		CHECK_EQ(pt_evt_sync_forward(d), -pte_eos);
		CHECK_EQ(pt_evt_sync_set(d, 0), 0);
		memset(big, 0xee, sizeof(big));
		CHECK_EQ(pt_evt_next(d, (struct pt_event *) big, sizeof(big)),
			 0);
		for (k = sizeof(struct pt_event); k < sizeof(big); ++k)
			if (big[k])
				break;
		CHECK_EQ(k, sizeof(big));
	}
	pt_evt_free_decoder(d);
	pt_evt_free_decoder(NULL);
}

/* The offset points at the packet the decoder is working on. */
static void test_offsets(void)
{
	struct pt_event_decoder *d;
	struct pt_event e;
	struct tb t;
	uint64_t off, tip, pgd, psbend;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_tsc(0x1000));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_fup, A));
	psbend = tb_add(&t, pk(ppt_psbend));
	tip = tb_add(&t, pk_full(ppt_tip, B));
	tb_add(&t, pk(ppt_pad));
	pgd = tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_end(&t);
	d = pt_evt_alloc_decoder(&t.config);
	CHECK_EQ(pt_evt_sync_forward(d), 0);
	/* Status events come out at the PSBEND. */
	CHECK_EQ(pt_evt_get_offset(d, &off), 0);
	CHECK_EQ(off, psbend);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), 0);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), 0);
	CHECK_EQ(pt_evt_get_offset(d, &off), 0);
	CHECK_EQ(off, psbend);
	/* The TIP stays current: events bound to it may follow. */
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), 0);
	CHECK_EQ(e.type, ptev_tip);
	CHECK_EQ(pt_evt_get_offset(d, &off), 0);
	CHECK_EQ(off, tip);
	/* A standalone TIP.PGD is done: the decoder is at the end. */
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), 0);
	CHECK_EQ(e.type, ptev_disabled);
	CHECK_EQ(pt_evt_get_offset(d, &off), 0);
	CHECK_EQ(off, pgd + 1);
	CHECK_EQ(pt_evt_next(d, &e, sizeof(e)), -pte_eos);
	pt_evt_free_decoder(d);
}

int main(void)
{
	test_psb();
	test_enable_disable();
	test_async();
	test_standalone();
	test_overflow();
	test_mode();
	test_iflags();
	test_deviations();
	test_power();
	test_ptwrite();
	test_cfe();
	test_trig();
	test_errors();
	test_errata();
	test_api();
	test_offsets();
	return check_done();
}

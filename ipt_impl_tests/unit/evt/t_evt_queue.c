/* t_evt_queue - a PSB+ that holds more status packets than the event
 * queue takes.  Each MODE.TSX, MODE.EXEC, PIP or VMCS in a PSB+ waits in
 * the queue for the PSBEND; the queue holds 16 entries with one kept
 * free, as libipt 2.3's (pt_event_queue.h).  With the FUP's enable that
 * makes 13 such packets fine and 14 too many: synchronizing fails with
 * -pte_nomem, in the query and the block decoder alike.  libipt 2.3's
 * ptxed reports "sync error: out of memory" on the same traces at 14, and
 * decodes them at 13.  Outside PSB+, MODE.EXEC waits for its TIP and
 * MODE.TSX for its FUP: 14 of them are fine, 15 fail with -pte_nomem when
 * the query loop reaches them, as libipt 2.3's ptxed fails there.
 *
 * Then each packet that queues an event, with the queue one short of
 * full and full: it fits in the first case and fails with -pte_nomem in
 * the second, whatever the queue holds (MODE.TSX waiting for a FUP,
 * MODE.EXEC for a TIP, PWRE for a PWRX).  libipt 2.3's query decoder
 * gives the same statuses on these traces (TRIG, which it does not know,
 * aside). */

#include "ipt.h"
#include "evt_trace.h"
#include "check.h"

static struct pt_packet status_packet(int kind)
{
	switch (kind) {
	case 0: return pk_tsx(1, 0);
	case 1: return pk_exec(ptem_64bit, 0);
	case 2: return pk_pip(0x1000, 0);
	default: return pk_vmcs(0x1000);
	}
}

static void check_psb(int kind, int n, int want)
{
	struct pt_query_decoder *q;
	struct pt_block_decoder *b;
	struct tb t;
	uint64_t ip;
	int i, status;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	for (i = 0; i < n; ++i)
		tb_add(&t, status_packet(kind));
	tb_add(&t, pk_full(ppt_fup, 0x1000));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk(ppt_pad));
	tb_end(&t);
	CHECK(!t.broken);

	q = pt_qry_alloc_decoder(&t.config);
	CHECK(q != NULL);
	status = q ? pt_qry_sync_forward(q, &ip) : -pte_nomem;
	if (!CHECK(want < 0 ? status == want : status >= 0))
		printf("     qry: kind %d, %d packets: %d\n", kind, n, status);
	pt_qry_free_decoder(q);

	b = pt_blk_alloc_decoder(&t.config);
	CHECK(b != NULL);
	status = b ? pt_blk_sync_forward(b) : -pte_nomem;
	if (!CHECK(want < 0 ? status == want : status >= 0))
		printf("     blk: kind %d, %d packets: %d\n", kind, n, status);
	pt_blk_free_decoder(b);
}

/* Decode @config with the query decoder: each event, each branch the
 * trace answers.  The last status (-pte_eos if all went well). */
static int query_loop(const struct pt_config *config)
{
	struct pt_query_decoder *q;
	struct pt_event ev;
	uint64_t ip;
	int status, steps;

	q = pt_qry_alloc_decoder(config);
	if (!CHECK(q != NULL))
		return 1;
	status = pt_qry_sync_forward(q, &ip);
	for (steps = 0; status >= 0 && steps < 100; ++steps) {
		if (status & pts_event_pending) {
			status = pt_qry_event(q, &ev, sizeof(ev));
		} else {
			status = pt_qry_indirect_branch(q, &ip);
			if (status == -pte_bad_query) {
				int taken;

				status = pt_qry_cond_branch(q, &taken);
			}
		}
	}
	pt_qry_free_decoder(q);
	return status;
}

/* PSB+ enables at 0x1000; then @n MODE.EXEC (kind 1) before a TIP or
 * MODE.TSX (kind 0) before a FUP; then TIP.PGD.  The query loop's last
 * status. */
static int run_flow(int kind, int n)
{
	struct tb t;
	int i;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_fup, 0x1000));
	tb_add(&t, pk(ppt_psbend));
	for (i = 0; i < n; ++i)
		tb_add(&t, status_packet(kind));
	tb_add(&t, pk_full(kind ? ppt_tip : ppt_fup, 0x1000));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_end(&t);
	CHECK(!t.broken);

	return query_loop(&t.config);
}

/* PSB+ (64-bit, enabled at 0x1000, and @tail before its PSBEND if
 * @in_psb); @head; @n times @fill; @tail; then, after MODE packets
 * as fill, a FUP (outside PSB+), TIP and TIP.PGD for what waits.  The
 * query loop's last status. */
static int run_flood(const struct pt_packet *head, int nhead,
		     struct pt_packet fill, int n,
		     const struct pt_packet *tail, int ntail, int iflags,
		     int in_psb)
{
	struct tb t;
	int i;

	tb_begin(&t);
	t.config.flags.variant.query.enable_iflags_events = iflags ? 1 : 0;
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_fup, 0x1000));
	if (!in_psb)
		tb_add(&t, pk(ppt_psbend));
	for (i = 0; i < nhead; ++i)
		tb_add(&t, head[i]);
	for (i = 0; i < n; ++i)
		tb_add(&t, fill);
	for (i = 0; i < ntail; ++i)
		tb_add(&t, tail[i]);
	if (in_psb)
		tb_add(&t, pk(ppt_psbend));
	if (fill.type == ppt_mode) {
		if (!in_psb)
			tb_add(&t, pk_full(ppt_fup, 0x2000));
		tb_add(&t, pk_full(ppt_tip, 0x3000));
		tb_add(&t, pk_supp(ppt_tip_pgd));
	}
	tb_end(&t);
	if (!CHECK(!t.broken))
		return 1;

	return query_loop(&t.config);
}

/* With @n - 1 fill packets the trace decodes to its end; with @n the
 * queue is full when @tail comes. */
static void check_flood(const char *name, const struct pt_packet *head,
			int nhead, struct pt_packet fill, int n,
			const struct pt_packet *tail, int ntail, int iflags,
			int in_psb)
{
	int fits, full;

	fits = run_flood(head, nhead, fill, n - 1, tail, ntail, iflags,
			 in_psb);
	full = run_flood(head, nhead, fill, n, tail, ntail, iflags, in_psb);
	if (!CHECK(fits == -pte_eos && full == -pte_nomem))
		printf("     %s: %d with %d, %d with %d\n", name, fits, n - 1,
		       full, n);
}

#define FLOOD(name, head, fill, n, tail, iflags, in_psb)                     \
	check_flood(name, head, sizeof(head) / sizeof(head[0]), fill, n,     \
		    tail, sizeof(tail) / sizeof(tail[0]), iflags, in_psb)

static void test_binding_sites(void)
{
	const struct pt_packet tsx = pk_tsx(1, 0);
	const struct pt_packet same = pk_exec(ptem_64bit, 0);
	const struct pt_packet pwre = pk_pwre(1, 0, 0);
	const struct pt_packet none[1] = { pk(ppt_pad) };
	const struct pt_packet fup[] = { pk_full(ppt_fup, 0x1800) };
	const struct pt_packet fup_pip[] = { pk_full(ppt_fup, 0x1800),
					     pk_pip(0x2000, 0) };
	const struct pt_packet exec32[] = { pk_exec(ptem_32bit, 0) };
	const struct pt_packet exec_if[] = { pk_exec(ptem_64bit, 1) };
	const struct pt_packet exec32_if[] = { pk_exec(ptem_32bit, 1) };
	const struct pt_packet exec64[] = { pk_exec(ptem_64bit, 0) };
	const struct pt_packet pip[] = { pk_pip(0x3000, 0) };
	const struct pt_packet vmcs[] = { pk_vmcs(0x5000) };
	const struct pt_packet exstop[] = { pk_exstop(1) };
	const struct pt_packet mwait_exstop[] = { pk_mwait(1, 2),
						  pk_exstop(1) };
	const struct pt_packet mwait12[] = { pk_mwait(1, 2) };
	const struct pt_packet pwre12[] = { pk_pwre(1, 2, 0) };
	const struct pt_packet ptw[] = { pk_ptw(0, 1, 0x42) };
	const struct pt_packet cfe_iret[] = { pk_cfe(pt_cfe_iret, 0, 1) };
	const struct pt_packet cfe_other[] = {
		pk_cfe((enum pt_cfe_type) 0x1f, 0, 1) };
	const struct pt_packet evd_cr2[] = { pk_evd(pt_evd_cr2, 0x1234) };
	const struct pt_packet evd_vmxq[] = { pk_evd(pt_evd_vmxq, 0x1234) };
	const struct pt_packet mnt[] = { pk_mnt(0x55) };
	const struct pt_packet cbr[] = { pk_cbr(10) };
	const struct pt_packet trig[] = { pk_trig(1, 1, 0, 1, 0) };

	/* A MODE.EXEC that changes the mode; one that changes IF only,
	 * with iflags events; one that changes both (the second event
	 * finds the queue full). */
	FLOOD("mode.exec", none, tsx, 14, exec32, 0, 0);
	FLOOD("mode.exec if", none, tsx, 14, exec_if, 1, 0);
	FLOOD("mode.exec both", none, tsx, 13, exec32_if, 1, 0);
	/* PIP and VMCS after a FUP wait with its branch for the TIP. */
	FLOOD("pip", fup, same, 13, pip, 0, 0);
	FLOOD("vmcs", fup, same, 13, vmcs, 0, 0);
	FLOOD("vmcs after pip", fup_pip, same, 12, vmcs, 0, 0);
	FLOOD("exstop.ip", none, tsx, 14, exstop, 0, 0);
	FLOOD("mwait", none, tsx, 14, mwait12, 0, 0);
	FLOOD("mwait, exstop.ip", none, tsx, 13, mwait_exstop, 0, 0);
	FLOOD("pwre", none, tsx, 14, pwre12, 0, 0);
	FLOOD("ptw.ip", none, tsx, 14, ptw, 0, 0);
	FLOOD("cfe.ip", none, tsx, 14, cfe_iret, 0, 0);
	FLOOD("unknown cfe.ip", none, tsx, 14, cfe_other, 0, 0);
	FLOOD("evd cr2", none, tsx, 14, evd_cr2, 0, 0);
	FLOOD("evd vmxq", none, tsx, 14, evd_vmxq, 0, 0);
	FLOOD("trig.ip", none, tsx, 14, trig, 0, 0);
	/* A FUP with nothing bound to it begins an asynchronous branch. */
	FLOOD("fup", none, pwre, 14, fup, 0, 0);
	/* In PSB+, after the status of tracing and of the PSB+'s first
	 * MODE.EXEC (with iflags on, an IF event too): a MODE.EXEC's IF
	 * event, MNT, CBR. */
	FLOOD("psb+ mode.exec if", none, tsx, 10, exec64, 1, 1);
	FLOOD("psb+ mnt", none, tsx, 12, mnt, 0, 1);
	FLOOD("psb+ cbr", none, tsx, 12, cbr, 0, 1);
}

int main(void)
{
	int kind;

	for (kind = 0; kind < 4; ++kind) {
		check_psb(kind, 1, 0);
		check_psb(kind, 13, 0);
		check_psb(kind, 14, -pte_nomem);
		check_psb(kind, 20, -pte_nomem);
	}
	for (kind = 0; kind < 2; ++kind) {
		CHECK_EQ(run_flow(kind, 14), -pte_eos);
		CHECK_EQ(run_flow(kind, 15), -pte_nomem);
	}
	test_binding_sites();
	return check_done();
}

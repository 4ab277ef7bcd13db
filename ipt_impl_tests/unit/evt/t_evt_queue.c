/* t_evt_queue - a PSB+ that holds more status packets than the event
 * queue takes.  Each MODE.TSX, MODE.EXEC, PIP or VMCS in a PSB+ waits in
 * the queue for the PSBEND; the queue holds 16 entries with one kept
 * free, as libipt 2.3's (pt_event_queue.h).  With the FUP's enable that
 * makes 13 such packets fine and 14 too many: synchronizing fails with
 * -pte_nomem, in the query and the block decoder alike.  libipt 2.3's
 * ptxed reports "sync error: out of memory" on the same traces at 14, and
 * decodes them at 13.  Outside PSB+, MODE.EXEC waits for its TIP and
 * MODE.TSX for its FUP: 14 of them are fine, 15 fail with -pte_nomem when
 * the query loop reaches them, as libipt 2.3's ptxed fails there. */

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

/* PSB+ enables at 0x1000; then @n MODE.EXEC (kind 1) before a TIP or
 * MODE.TSX (kind 0) before a FUP; then TIP.PGD.  The query loop's last
 * status. */
static int run_flow(int kind, int n)
{
	struct pt_query_decoder *q;
	struct pt_event ev;
	struct tb t;
	uint64_t ip;
	int i, status, steps;

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

	q = pt_qry_alloc_decoder(&t.config);
	if (!q)
		return -pte_nomem - 100;
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
	return check_done();
}

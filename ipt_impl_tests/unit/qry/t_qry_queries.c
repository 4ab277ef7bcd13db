/* The query decoder: start IP and status flags after synchronizing, TNT
 * bits across packets, indirect branches, events, time, and every error
 * its man pages list. */
#include "ipt.h"
#include "check.h"
#include "evt_trace.h"

#define A 0x400000ull
#define B 0x401000ull
#define C 0x402000ull

static struct pt_query_decoder *alloc(struct tb *t)
{
	struct pt_query_decoder *q;

	tb_end(t);
	CHECK(!t->broken);
	q = pt_qry_alloc_decoder(&t->config);
	CHECK(q != NULL);
	return q;
}

static void test_flow(void)
{
	struct pt_query_decoder *q;
	struct pt_event e;
	struct tb t;
	uint64_t ip = 0, tsc = 0;
	uint32_t cbr = 0, mtc = 1, cyc = 1;
	int taken = -1;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_tsc(0x1000));
	tb_add(&t, pk_cbr(0x20));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(0x5, 3));		/* taken, not taken, taken */
	tb_add(&t, pk_tsc(0x2000));
	tb_add(&t, pk_tnt(0x1, 2));		/* not taken, taken */
	tb_add(&t, pk_full(ppt_tip, B));
	tb_add(&t, pk_supp(ppt_tip));
	tb_add(&t, pk_cbr(0x30));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	q = alloc(&t);

	/* Not synchronized yet. */
	CHECK_EQ(pt_qry_cond_branch(q, &taken), -pte_nosync);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_nosync);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), -pte_nosync);
	CHECK_EQ(pt_qry_time(q, &tsc, &mtc, &cyc), -pte_no_time);
	CHECK_EQ(pt_qry_core_bus_ratio(q, &cbr), -pte_no_cbr);

	CHECK_EQ(pt_qry_sync_forward(q, &ip), pts_event_pending);
	CHECK_EQ(ip, A);

	/* Branch queries while an event is pending. */
	CHECK_EQ(pt_qry_cond_branch(q, &taken), -pte_bad_query);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_bad_query);

	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_event_pending);
	CHECK_EQ(e.type, ptev_enabled);
	CHECK_EQ(e.status_update, 1);
	CHECK_EQ(e.variant.enabled.ip, A);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_event_pending);
	CHECK_EQ(e.type, ptev_cbr);
	CHECK_EQ(e.variant.cbr.ratio, 0x20);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), 0);
	CHECK_EQ(e.type, ptev_exec_mode);
	CHECK_EQ(pt_qry_time(q, &tsc, &mtc, &cyc), 0);
	CHECK_EQ(tsc, 0x1000);
	CHECK_EQ(mtc, 0);
	CHECK_EQ(cyc, 0);
	CHECK_EQ(pt_qry_core_bus_ratio(q, &cbr), 0);
	CHECK_EQ(cbr, 0x20);

	/* No event now. */
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), -pte_bad_query);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_bad_query);

	/* Five TNT bits from two packets, oldest first. */
	CHECK_EQ(pt_qry_cond_branch(q, &taken), 0);
	CHECK_EQ(taken, 1);
	/* TNT bits are in the cache: no events.  (An indirect-branch query
	 * would be answered from the TIP behind the TNTs, as in libipt.) */
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), -pte_bad_query);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), 0);
	CHECK_EQ(taken, 0);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), 0);
	CHECK_EQ(taken, 1);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), 0);
	CHECK_EQ(taken, 0);
	/* The time is that of the second TNT. */
	CHECK_EQ(pt_qry_time(q, &tsc, NULL, NULL), 0);
	CHECK_EQ(tsc, 0x2000);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), 0);
	CHECK_EQ(taken, 1);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), -pte_bad_query);

	ip = 0;
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), 0);
	CHECK_EQ(ip, B);
	ip = 7;
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), pts_ip_suppressed |
		 pts_event_pending);
	CHECK_EQ(ip, 7);

	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_event_pending);
	CHECK_EQ(e.type, ptev_cbr);
	CHECK_EQ(e.variant.cbr.ratio, 0x30);
	CHECK_EQ(pt_qry_core_bus_ratio(q, &cbr), 0);
	CHECK_EQ(cbr, 0x30);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_eos);
	CHECK_EQ(e.type, ptev_disabled);
	CHECK_EQ(e.ip_suppressed, 1);

	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), -pte_eos);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), -pte_eos);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_eos);

	/* Arguments. */
	CHECK_EQ(pt_qry_cond_branch(NULL, &taken), -pte_invalid);
	CHECK_EQ(pt_qry_cond_branch(q, NULL), -pte_invalid);
	CHECK_EQ(pt_qry_indirect_branch(NULL, &ip), -pte_invalid);
	CHECK_EQ(pt_qry_indirect_branch(q, NULL), -pte_invalid);
	CHECK_EQ(pt_qry_event(NULL, &e, sizeof(e)), -pte_invalid);
	CHECK_EQ(pt_qry_event(q, NULL, sizeof(e)), -pte_invalid);
	CHECK_EQ(pt_qry_event(q, &e, 4), -pte_invalid);
	CHECK_EQ(pt_qry_time(NULL, &tsc, NULL, NULL), -pte_invalid);
	CHECK_EQ(pt_qry_time(q, NULL, NULL, NULL), -pte_invalid);
	CHECK_EQ(pt_qry_core_bus_ratio(NULL, &cbr), -pte_invalid);
	CHECK_EQ(pt_qry_core_bus_ratio(q, NULL), -pte_invalid);
	CHECK_EQ(pt_qry_sync_forward(NULL, &ip), -pte_invalid);
	CHECK_EQ(pt_qry_sync_backward(NULL, &ip), -pte_invalid);
	CHECK_EQ(pt_qry_sync_set(NULL, &ip, 0), -pte_invalid);
	CHECK_EQ(pt_qry_get_offset(NULL, &tsc), -pte_invalid);
	CHECK_EQ(pt_qry_get_offset(q, NULL), -pte_invalid);
	CHECK_EQ(pt_qry_get_sync_offset(NULL, &tsc), -pte_invalid);
	CHECK(pt_qry_get_config(NULL) == NULL);
	CHECK(pt_qry_get_config(q)->begin == t.buf);
	CHECK(pt_qry_alloc_decoder(NULL) == NULL);

	pt_qry_free_decoder(q);
	pt_qry_free_decoder(NULL);
}

/* Sync: forward, backward, set; start IP suppressed without a FUP. */
static void test_sync(void)
{
	struct pt_query_decoder *q;
	struct pt_event e;
	struct tb t;
	uint64_t ip, off, psb1, psb2, psb3;
	int taken;

	tb_begin(&t);
	psb1 = tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(0x1, 1));
	psb2 = tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	psb3 = tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk(ppt_psbend));
	/* A PSB+ cut off by the end does not count for sync_backward. */
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_fup, C));
	q = alloc(&t);

	/* pt_qry_sync_backward() returns zero on success, as libipt's
	 * does; the ip is only set with tracing enabled. */
	ip = 1;
	CHECK_EQ(pt_qry_sync_backward(q, &ip), 0);
	CHECK_EQ(pt_qry_get_sync_offset(q, &off), 0);
	CHECK_EQ(off, psb3);
	CHECK_EQ(ip, 1);
	/* The PSB+ cut off at the end shows as the end of the trace. */
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_eos);
	CHECK_EQ(e.type, ptev_disabled);
	CHECK_EQ(e.status_update, 1);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), -pte_eos);

	/* From the end again: the last complete PSB+. */
	CHECK_EQ(pt_qry_sync_backward(q, &ip), 0);
	CHECK_EQ(pt_qry_get_sync_offset(q, &off), 0);
	CHECK_EQ(off, psb3);
	CHECK_EQ(pt_qry_sync_backward(q, &ip), 0);
	CHECK_EQ(pt_qry_get_sync_offset(q, &off), 0);
	CHECK_EQ(off, psb2);
	CHECK_EQ(ip, B);
	CHECK_EQ(pt_qry_sync_backward(q, &ip), 0);
	CHECK_EQ(ip, A);
	CHECK_EQ(pt_qry_get_sync_offset(q, &off), 0);
	CHECK_EQ(off, psb1);
	CHECK_EQ(pt_qry_sync_backward(q, &ip), -pte_eos);

	CHECK_EQ(pt_qry_sync_set(q, &ip, psb2), pts_event_pending);
	CHECK_EQ(ip, B);
	CHECK_EQ(pt_qry_sync_set(q, &ip, psb2 + 1), -pte_nosync);

	/* The decoder reads one event ahead: after the last TNT bit it is
	 * in the next PSB+ already, and sync_forward goes past it. */
	CHECK_EQ(pt_qry_sync_set(q, &ip, psb1), pts_event_pending);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), 0);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), pts_event_pending);
	CHECK_EQ(taken, 1);
	CHECK_EQ(pt_qry_get_offset(q, &off), 0);
	CHECK_EQ(off, psb2 + 16 + 7);
	ip = 1;
	CHECK_EQ(pt_qry_sync_forward(q, &ip), pts_ip_suppressed |
		 pts_event_pending);
	CHECK_EQ(ip, 1);
	CHECK_EQ(pt_qry_get_sync_offset(q, &off), 0);
	CHECK_EQ(off, psb3);
	/* The PSB+ right at the end is cut off. */
	CHECK_EQ(pt_qry_sync_forward(q, &ip), -pte_eos);
	pt_qry_free_decoder(q);
}

/* A decode error waits until the TNT bits before it are used. */
static void test_deferred_error(void)
{
	struct pt_query_decoder *q;
	struct pt_event e;
	struct tb t;
	uint64_t ip;
	int taken;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(0x3, 2));
	tb_add(&t, pk_evd(pt_evd_cr2, 1));
	tb_add(&t, pk_evd(pt_evd_cr2, 2));	/* two CR2s: bad context */
	q = alloc(&t);

	CHECK_EQ(pt_qry_sync_forward(q, &ip), pts_event_pending);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), 0);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), 0);
	CHECK_EQ(taken, 1);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), pts_event_pending);
	CHECK_EQ(taken, 1);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), -pte_bad_context);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), -pte_bad_context);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_bad_context);
	pt_qry_free_decoder(q);
}

/* Events the query decoder passes on, with the flags of the
 * configuration's query variant. */
static void test_events(void)
{
	struct pt_query_decoder *q;
	struct pt_event e;
	struct tb t;
	uint64_t ip;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_exec(ptem_64bit, 1));
	tb_add(&t, pk_full(ppt_fup, A));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_full(ppt_fup, B));
	tb_add(&t, pk_full(ppt_tip, C));
	tb_end(&t);
	t.config.flags.variant.query.enable_iflags_events = 1;
	q = pt_qry_alloc_decoder(&t.config);

	CHECK_EQ(pt_qry_sync_forward(q, &ip), pts_event_pending);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_event_pending);
	CHECK_EQ(e.type, ptev_enabled);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_event_pending);
	CHECK_EQ(e.type, ptev_exec_mode);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_event_pending);
	CHECK_EQ(e.type, ptev_iflags);
	CHECK_EQ(e.variant.iflags.iflag, 1);
	/* The asynchronous branch is an event, not an indirect branch. */
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_bad_query);
	CHECK_EQ(pt_qry_event(q, &e, sizeof(e)), pts_eos);
	CHECK_EQ(e.type, ptev_async_branch);
	CHECK_EQ(e.variant.async_branch.from, B);
	CHECK_EQ(e.variant.async_branch.to, C);
	pt_qry_free_decoder(q);
}

int main(void)
{
	test_flow();
	test_sync();
	test_deferred_error();
	test_events();
	return check_done();
}

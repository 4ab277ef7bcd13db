/* t_qry_args - the query decoder's ipt_qry_* extensions without a
 * decoder, buffer or end (-pte_invalid), and pt_qry_event into a struct
 * pt_event larger than ipt.h's: the event fills the known part, the rest
 * is left alone (as libipt 2.3's pt_qry_event copies at most its own
 * size).  And a trace that goes on after the decoder reached its end:
 * ipt_qry_extend moves the end and the queries go on. */
#include "ipt.h"
#include "evt_trace.h"
#include "check.h"

/* PSB+ enabling at 0x1000, a taken conditional branch; the end; then a
 * TIP to 0x2000 and TIP.PGD. */
static void test_extend(void)
{
	struct pt_query_decoder *q;
	struct pt_event ev;
	struct tb t;
	uint64_t ip, first;
	uint8_t *end;
	int status, taken;

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_exec(ptem_64bit, 0));
	tb_add(&t, pk_full(ppt_fup, 0x1000));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_tnt(1, 1));
	first = tb_add(&t, pk_full(ppt_tip, 0x2000));
	tb_add(&t, pk_supp(ppt_tip_pgd));
	tb_end(&t);
	CHECK(!t.broken);
	end = (uint8_t *) t.config.end;
	t.config.end = t.buf + first;

	q = pt_qry_alloc_decoder(&t.config);
	if (!CHECK(q != NULL))
		return;
	status = pt_qry_sync_forward(q, &ip);
	while (status >= 0 && (status & pts_event_pending))
		status = pt_qry_event(q, &ev, sizeof(ev));
	CHECK(status >= 0);
	CHECK_EQ(pt_qry_cond_branch(q, &taken), pts_eos);
	CHECK_EQ(taken, 1);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_eos);

	CHECK_EQ(ipt_qry_extend(q, end, 0), 0);
	status = pt_qry_indirect_branch(q, &ip);
	CHECK(status >= 0 && (status & pts_event_pending));
	CHECK_EQ(ip, 0x2000);
	status = pt_qry_event(q, &ev, sizeof(ev));
	CHECK(status >= 0);
	CHECK_EQ(ev.type, ptev_disabled);
	CHECK_EQ(pt_qry_indirect_branch(q, &ip), -pte_eos);
	pt_qry_free_decoder(q);
}

int main(void)
{
	struct pt_query_decoder *q;
	union {
		struct pt_event ev;
		uint8_t bytes[sizeof(struct pt_event) + 16];
	} big;
	uint8_t buf[16];
	struct tb t;
	uint64_t ip;
	int status;

	CHECK_EQ(ipt_qry_set_buffer(NULL, buf, buf + sizeof(buf)),
		 -pte_invalid);
	CHECK_EQ(ipt_qry_extend(NULL, buf, 0), -pte_invalid);
	CHECK_EQ(ipt_qry_start_at(NULL, &ip, 0, NULL), -pte_invalid);

	tb_begin(&t);
	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_full(ppt_fup, 0x1000));
	tb_add(&t, pk(ppt_psbend));
	tb_end(&t);
	q = pt_qry_alloc_decoder(&t.config);
	CHECK(q != NULL);
	if (!q)
		return check_done();
	status = pt_qry_sync_forward(q, &ip);
	CHECK(status >= 0 && (status & pts_event_pending));
	memset(&big, 0xcc, sizeof(big));
	status = pt_qry_event(q, &big.ev, sizeof(big));
	CHECK(status >= 0);
	CHECK_EQ(big.ev.type, ptev_enabled);
	CHECK_EQ(big.ev.variant.enabled.ip, 0x1000);
	CHECK(bytes_are(&big, sizeof(big.ev), sizeof(big), 0xcc));
	CHECK_EQ(ipt_qry_extend(q, NULL, 0), -pte_invalid);
	CHECK_EQ(ipt_qry_set_buffer(q, NULL, buf), -pte_invalid);
	pt_qry_free_decoder(q);
	test_extend();
	return check_done();
}

/* t_qry_args - the query decoder's ipt_qry_set_buffer without a decoder
 * (-pte_invalid), and pt_qry_event into a struct pt_event larger than
 * ipt.h's: the event fills the known part, the rest is left alone (as
 * libipt 2.3's pt_qry_event copies at most its own size). */
#include "ipt.h"
#include "evt_trace.h"
#include "check.h"

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
	size_t i;
	int status, kept;

	CHECK_EQ(ipt_qry_set_buffer(NULL, buf, buf + sizeof(buf)),
		 -pte_invalid);

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
	kept = 1;
	for (i = sizeof(big.ev); i < sizeof(big); ++i)
		kept &= big.bytes[i] == 0xcc;
	CHECK(kept);
	pt_qry_free_decoder(q);
	return check_done();
}

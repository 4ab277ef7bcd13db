/* t_evt_args - the event decoder's answers to bad arguments, as libipt
 * 2.3's (src/pt_event_decoder.c): -pte_invalid for a missing decoder or
 * output, or an event struct too small to hold its type and flags, NULL
 * from pt_evt_get_config.  And its ipt_evt_* extensions, each
 * -pte_invalid without a decoder: ipt_evt_set_buffer and ipt_evt_extend
 * refuse what ipt_pkt_* refuse (no buffer, an end before the current
 * one) and leave the decoder as it was; ipt_evt_start_at takes a state
 * of an older, smaller size (what it lacks is zero) and refuses one too
 * small to hold the mode. */

#include <stddef.h>

#include "ipt.h"
#include "evt_trace.h"
#include "check.h"

static void test_null(void)
{
	struct ipt_start_state state;
	struct pt_event ev;
	uint64_t u64;
	uint8_t buf[16];

	CHECK_EQ(pt_evt_sync_forward(NULL), -pte_invalid);
	CHECK_EQ(pt_evt_sync_backward(NULL), -pte_invalid);
	CHECK_EQ(pt_evt_sync_set(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_evt_get_offset(NULL, &u64), -pte_invalid);
	CHECK_EQ(pt_evt_get_sync_offset(NULL, &u64), -pte_invalid);
	CHECK(pt_evt_get_config(NULL) == NULL);
	CHECK_EQ(pt_evt_next(NULL, &ev, sizeof(ev)), -pte_invalid);
	CHECK_EQ(ipt_evt_set_buffer(NULL, buf, buf + sizeof(buf)),
		 -pte_invalid);
	CHECK_EQ(ipt_evt_extend(NULL, buf, 0), -pte_invalid);
	memset(&state, 0, sizeof(state));
	state.size = sizeof(state);
	CHECK_EQ(ipt_evt_start_at(NULL, 0, &state), -pte_invalid);
}

/* PSB+ with tracing on at 0x1000 in 64-bit mode, then TIP.PGD. */
static void build(struct tb *t)
{
	tb_begin(t);
	tb_add(t, pk(ppt_psb));
	tb_add(t, pk_exec(ptem_64bit, 0));
	tb_add(t, pk_full(ppt_fup, 0x1000));
	tb_add(t, pk(ppt_psbend));
	tb_add(t, pk_supp(ppt_tip_pgd));
	tb_end(t);
	CHECK(!t->broken);
}

static void test_decoder(void)
{
	struct pt_event_decoder *d;
	struct pt_event ev;
	struct tb t;
	uint64_t offset;
	uint8_t *end;

	build(&t);
	end = (uint8_t *) t.config.end;
	d = pt_evt_alloc_decoder(&t.config);
	if (!CHECK(d != NULL))
		return;
	CHECK_EQ(pt_evt_sync_forward(d), 0);
	CHECK_EQ(pt_evt_next(d, NULL, sizeof(ev)), -pte_invalid);
	CHECK_EQ(pt_evt_next(d, &ev, offsetof(struct pt_event, variant) - 1),
		 -pte_invalid);

	/* Refused: no end, an end before the current one; no buffer, one
	 * that ends before it begins.  The decoder goes on as before. */
	CHECK_EQ(ipt_evt_extend(d, NULL, 0), -pte_invalid);
	CHECK_EQ(ipt_evt_extend(d, end - 1, 0), -pte_invalid);
	CHECK_EQ(ipt_evt_set_buffer(d, NULL, end), -pte_invalid);
	CHECK_EQ(ipt_evt_set_buffer(d, end, t.buf), -pte_invalid);
	CHECK_EQ(pt_evt_next(d, &ev, sizeof(ev)), 0);
	CHECK_EQ(ev.type, ptev_enabled);
	CHECK_EQ(ev.variant.enabled.ip, 0x1000);
	CHECK_EQ(pt_evt_get_sync_offset(d, &offset), 0);
	CHECK_EQ(offset, 0);
	pt_evt_free_decoder(d);
}

/* A state as an older caller knows it, up to and including the mode:
 * tracing on at 0x2000 in 64-bit mode.  The rest reads as zero (no
 * CR3, no VMCS, no time). */
static void test_state_size(void)
{
	struct pt_event_decoder *d;
	struct ipt_start_state state;
	struct pt_event ev;
	struct tb t;
	int status;

	build(&t);
	d = pt_evt_alloc_decoder(&t.config);
	if (!CHECK(d != NULL))
		return;

	memset(&state, 0xff, sizeof(state));
	state.size = offsetof(struct ipt_start_state, mode) - 1;
	CHECK_EQ(ipt_evt_start_at(d, 0, &state), -pte_invalid);
	CHECK_EQ(ipt_evt_start_at(d, 0, NULL), -pte_invalid);

	memset(&state, 0, sizeof(state));
	state.enabled = 1;
	state.ip = 0x2000;
	state.mode = ptem_64bit;
	/* Past the size: would say CR3 0xffff... and more. */
	memset((uint8_t *) &state + offsetof(struct ipt_start_state, mode) +
		       sizeof(state.mode),
	       0xff, sizeof(state) - offsetof(struct ipt_start_state, mode) -
			     sizeof(state.mode));
	state.size = offsetof(struct ipt_start_state, mode) +
		     sizeof(state.mode);
	CHECK_EQ(ipt_evt_start_at(d, 0, &state), 0);

	/* Enabled at 0x2000 and the mode; nothing else (past the size,
	 * nret alone would be refused). */
	status = pt_evt_next(d, &ev, sizeof(ev));
	CHECK(status >= 0);
	CHECK_EQ(ev.type, ptev_enabled);
	CHECK_EQ(ev.variant.enabled.ip, 0x2000);
	status = pt_evt_next(d, &ev, sizeof(ev));
	CHECK(status >= 0);
	CHECK_EQ(ev.type, ptev_exec_mode);
	CHECK_EQ(ev.variant.exec_mode.mode, ptem_64bit);
	CHECK_EQ(ev.variant.exec_mode.ip, 0x2000);
	/* Then the trace from offset 0 on: its PSB+. */
	/* Then the trace from offset 0 on: its PSB+. */
	status = pt_evt_next(d, &ev, sizeof(ev));
	CHECK(status >= 0);
	CHECK_EQ(ev.type, ptev_enabled);
	CHECK_EQ(ev.variant.enabled.ip, 0x1000);
	CHECK(ev.status_update);
	pt_evt_free_decoder(d);
}

int main(void)
{
	test_null();
	test_decoder();
	test_state_size();
	return check_done();
}

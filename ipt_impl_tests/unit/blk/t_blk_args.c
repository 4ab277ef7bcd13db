/* t_blk_args - the block decoder's answers to bad arguments and to calls
 * at the wrong time, as libipt 2.3's (src/pt_block_decoder.c):
 * -pte_invalid for a missing decoder or output, NULL from the accessors;
 * a caller's struct pt_asid or pt_event larger than ipt.h's gets the
 * known part (the asid's size field says how much); and pt_blk_event
 * called before the decoder has reached the event's IP (no
 * pts_event_pending) is -pte_bad_query and leaves the event for later.
 * libipt 2.3's block decoder answers the pt_blk_* calls of this test the
 * same way.  The ipt_blk_* extensions: -pte_invalid without a decoder;
 * ipt_blk_get_fault into a larger struct zeroes the rest. */

#include "blk_util.h"
#include "check.h"

/* 0x1000: eight nops, then ret. */
static const uint8_t code[] = {
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3
};

static void test_null(void)
{
	struct ipt_start_state state;
	struct ipt_fault fault;
	struct pt_event event;
	struct pt_block block;
	struct pt_asid asid;
	uint64_t u64;
	uint32_t u32;
	uint8_t buf[16];

	CHECK_EQ(pt_blk_sync_forward(NULL), -pte_invalid);
	CHECK_EQ(pt_blk_sync_backward(NULL), -pte_invalid);
	CHECK_EQ(pt_blk_sync_set(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_blk_get_offset(NULL, &u64), -pte_invalid);
	CHECK_EQ(pt_blk_get_sync_offset(NULL, &u64), -pte_invalid);
	CHECK(pt_blk_get_image(NULL) == NULL);
	CHECK_EQ(pt_blk_set_image(NULL, NULL), -pte_invalid);
	CHECK(pt_blk_get_config(NULL) == NULL);
	CHECK_EQ(pt_blk_time(NULL, &u64, &u32, &u32), -pte_invalid);
	CHECK_EQ(pt_blk_core_bus_ratio(NULL, &u32), -pte_invalid);
	CHECK_EQ(pt_blk_asid(NULL, &asid, sizeof(asid)), -pte_invalid);
	CHECK_EQ(pt_blk_next(NULL, &block, sizeof(block)), -pte_invalid);
	CHECK_EQ(pt_blk_event(NULL, &event, sizeof(event)), -pte_invalid);

	CHECK_EQ(ipt_blk_set_buffer(NULL, buf, buf + sizeof(buf)),
		 -pte_invalid);
	CHECK_EQ(ipt_blk_extend(NULL, buf, 0), -pte_invalid);
	memset(&state, 0, sizeof(state));
	state.size = sizeof(state);
	CHECK_EQ(ipt_blk_start_at(NULL, 0, &state), -pte_invalid);
	CHECK_EQ(ipt_blk_set_wait_for_code(NULL, 1), -pte_invalid);
	CHECK_EQ(ipt_blk_get_fault(NULL, &fault, sizeof(fault)),
		 -pte_invalid);
}

/* A block decoder over @build's trace and the code above, synchronized
 * and past the events at its start; NULL if that fails. */
static struct pt_block_decoder *start(struct tb *t, struct pt_image *image,
				      int tick)
{
	struct pt_block_decoder *d;
	struct pt_event event;
	int status;

	tb_done(t);
	CHECK_EQ(t->errors, 0);
	t->config.flags.variant.block.enable_tick_events = tick ? 1 : 0;
	d = pt_blk_alloc_decoder(&t->config);
	if (!CHECK(d != NULL))
		return NULL;
	CHECK_EQ(pt_blk_set_image(d, image), 0);
	status = pt_blk_sync_forward(d);
	while (status >= 0 && (status & pts_event_pending))
		status = pt_blk_event(d, &event, sizeof(event));
	if (!CHECK(status >= 0)) {
		pt_blk_free_decoder(d);
		return NULL;
	}
	return d;
}

static void test_sizes(struct pt_image *image)
{
	struct pt_block_decoder *d;
	struct pt_asid asid;
	struct tb t;
	union {
		struct pt_event ev;
		uint8_t bytes[sizeof(struct pt_event) + 16];
	} big;
	union {
		struct pt_asid asid;
		uint8_t bytes[sizeof(struct pt_asid) + 16];
	} bigasid;
	int status;

	tb_init(&t);
	tb_simple(&t, ppt_psb);
	tb_pip(&t, 0x4000);
	tb_mode_exec(&t, ptem_64bit);
	tb_ip(&t, ppt_fup, pt_ipc_sext_48, 0x1000);
	tb_simple(&t, ppt_psbend);
	tb_tsc(&t, 0x100);
	tb_cbr(&t, 9);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	tb_done(&t);
	CHECK_EQ(t.errors, 0);
	d = pt_blk_alloc_decoder(&t.config);
	if (!CHECK(d != NULL))
		return;
	CHECK_EQ(pt_blk_set_image(d, image), 0);
	CHECK(pt_blk_get_image(d) == image);
	CHECK_EQ(pt_blk_set_image(d, NULL), 0);
	CHECK(pt_blk_get_image(d) != image);
	CHECK_EQ(pt_blk_set_image(d, image), 0);
	CHECK_EQ(pt_blk_event(d, NULL, sizeof(big.ev)), -pte_invalid);
	CHECK_EQ(pt_blk_core_bus_ratio(d, NULL), -pte_invalid);
	CHECK_EQ(pt_blk_asid(d, NULL, sizeof(asid)), -pte_invalid);

	status = pt_blk_sync_forward(d);
	CHECK(status >= 0 && (status & pts_event_pending));
	/* The first status event into a larger struct. */
	memset(&big, 0xcc, sizeof(big));
	status = pt_blk_event(d, &big.ev, sizeof(big));
	CHECK(status >= 0 && (status & pts_event_pending));
	CHECK_EQ(big.ev.type, ptev_enabled);
	CHECK_EQ(big.ev.variant.enabled.ip, 0x1000);
	CHECK(bytes_are(&big, sizeof(big.ev), sizeof(big), 0xcc));
	while (status >= 0 && (status & pts_event_pending))
		status = pt_blk_event(d, &big.ev, sizeof(big));
	CHECK(status >= 0);

	/* The asid: all of ours, the size field says how much. */
	memset(&bigasid, 0xcc, sizeof(bigasid));
	CHECK_EQ(pt_blk_asid(d, &bigasid.asid, sizeof(bigasid)), 0);
	CHECK_EQ(bigasid.asid.size, sizeof(struct pt_asid));
	CHECK_EQ(bigasid.asid.cr3, 0x4000);
	CHECK_EQ(bigasid.asid.vmcs, pt_asid_no_vmcs);
	CHECK(bytes_are(&bigasid, sizeof(bigasid.asid), sizeof(bigasid),
			0xcc));
	CHECK_EQ(pt_blk_asid(d, &asid, sizeof(asid.size) - 1), -pte_invalid);
	pt_blk_free_decoder(d);
}

/* The trace after the start at 0x1000 (64-bit, enabled). */
enum next_kind {
	fup_tip,	/* an asynchronous branch from 0x1004 */
	fup_pgd,	/* an asynchronous disable at 0x1004 */
	fup_pip_tip,	/* ... with a change of CR3 */
	fup_vmcs_tip,	/* ... with a change of VMCS */
	exec_tip,	/* MODE.EXEC at a TIP to 0x1004 */
	tsx_fup,	/* MODE.TSX at 0x1004 */
	tip_only,	/* a TIP for an indirect branch to come */
	tnt_only,	/* a TNT for a conditional branch to come */
	exstop_fup	/* EXSTOP at 0x1004 */
};

static void add_next(struct tb *t, enum next_kind kind)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	switch (kind) {
	case fup_tip:
	case fup_pgd:
	case fup_pip_tip:
	case fup_vmcs_tip:
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1004);
		if (kind == fup_pip_tip)
			tb_pip(t, 0x2000);
		if (kind == fup_vmcs_tip) {
			p.type = ppt_vmcs;
			p.payload.vmcs.base = 0x5000;
			tb_put(t, &p);
		}
		if (kind == fup_pgd)
			tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		else
			tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1000);
		break;
	case exec_tip:
		tb_mode_exec(t, ptem_32bit);
		tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1004);
		break;
	case tsx_fup:
		tb_mode_tsx(t, 1, 0);
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1004);
		break;
	case tip_only:
		tb_ip(t, ppt_tip, pt_ipc_sext_48, 0x1004);
		break;
	case tnt_only:
		tb_tnt(t, 1, 1);
		break;
	case exstop_fup:
		p.type = ppt_exstop;
		p.payload.exstop.ip = 1;
		tb_put(t, &p);
		tb_ip(t, ppt_fup, pt_ipc_sext_48, 0x1004);
		break;
	}
}

/* pt_blk_event at 0x1000 while the next event belongs elsewhere (or to
 * a branch not yet decoded): -pte_bad_query, and the block that follows
 * still ends where the event is. */
static void test_early(struct pt_image *image)
{
	int kind;

	for (kind = fup_tip; kind <= exstop_fup; ++kind) {
		struct pt_block_decoder *d;
		struct pt_event event;
		struct pt_block block;
		struct tb t;
		int status;

		tb_init(&t);
		tb_start64(&t, 0x1000);
		add_next(&t, (enum next_kind) kind);
		d = start(&t, image, 0);
		if (!d)
			continue;
		status = pt_blk_event(d, &event, sizeof(event));
		if (!CHECK(status == -pte_bad_query))
			printf("     kind %d: %d\n", kind, status);
		if (kind != tnt_only) {
			/* To the event, or to the ret the TIP is for. */
			int ninsn = kind == exec_tip || kind == tip_only ? 9 : 4;

			status = pt_blk_next(d, &block, sizeof(block));
			CHECK(status >= 0);
			CHECK_EQ(block.ip, 0x1000);
			CHECK_EQ(block.ninsn, ninsn);
		}
		pt_blk_free_decoder(d);
	}
}

/* A fault: the next block's code is not there; its record into a
 * struct larger than ipt.h's. */
static void test_fault(struct pt_image *image)
{
	struct pt_block_decoder *d;
	struct pt_block block;
	struct tb t;
	union {
		struct ipt_fault fault;
		uint8_t bytes[sizeof(struct ipt_fault) + 16];
	} big;

	tb_init(&t);
	tb_start64(&t, 0x8000);
	d = start(&t, image, 0);
	if (!d)
		return;
	CHECK_EQ(ipt_blk_get_fault(d, NULL, sizeof(big)), -pte_invalid);
	CHECK_EQ(ipt_blk_get_fault(d, &big.fault, sizeof(big)), 0);
	CHECK_EQ(pt_blk_next(d, &block, sizeof(block)), -pte_nomap);
	memset(&big, 0xcc, sizeof(big));
	CHECK_EQ(ipt_blk_get_fault(d, &big.fault, sizeof(big)), 1);
	CHECK_EQ(big.fault.addr, 0x8000);
	CHECK(big.fault.size > 0);
	CHECK(bytes_are(&big, sizeof(big.fault), sizeof(big), 0));
	pt_blk_free_decoder(d);
}

/* Past the end of the trace: a start state, but not into one whose size
 * leaves no room for the mode. */
static void test_state(struct pt_image *image)
{
	struct pt_block_decoder *d;
	struct ipt_start_state state;
	struct pt_event event;
	struct pt_block block;
	uint64_t offset;
	struct tb t;
	int status;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	d = start(&t, image, 0);
	if (!d)
		return;
	do {
		status = pt_blk_next(d, &block, sizeof(block));
		while (status >= 0 && (status & pts_event_pending))
			status = pt_blk_event(d, &event, sizeof(event));
	} while (status >= 0);
	CHECK_EQ(status, -pte_eos);
	memset(&state, 0, sizeof(state));
	CHECK_EQ(ipt_blk_get_start_state(d, &offset, &state), -pte_invalid);
	state.size = sizeof(state);
	CHECK_EQ(ipt_blk_get_start_state(d, &offset, &state), 0);
	CHECK_EQ(offset, t.config.end - t.config.begin);
	CHECK_EQ(state.enabled, 0);
	pt_blk_free_decoder(d);
}

int main(void)
{
	struct pt_image *image;
	struct mem m;

	mem_init(&m, 0x1000, code, sizeof(code));
	image = mem_image(&m, "args");
	if (!CHECK(image != NULL))
		return check_done();

	test_null();
	test_sizes(image);
	test_early(image);
	test_fault(image);
	test_state(image);

	pt_image_free(image);
	return check_done();
}

/* ipt__evt_next_tnt, the block decoder's short way to the next TNT or TIP
 * event, against pt_evt_next(): two event decoders on the same random
 * trace, one asking pt_evt_next() for every event, the other trying the
 * short way first whenever it holds an event the short way accepts, as
 * the block decoder does.  Every event must be the same byte for byte,
 * every error the same, and the time state after each the same.
 *
 * The traces: TNTs, TIPs, TIP.PGE and TIP.PGD with MTC, CYC and PAD
 * packets before them (the short way takes those too), TSC, TMA, CBR,
 * FUP, MODE.EXEC, OVF and PSBs now and then; with and without no_time (a
 * look-ahead copy of the decoder passes over MTC and CYC); with
 * configurations whose MTC packets fail. */
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "evt_trace.h"

/* Events the short way gave, and all events compared; asynchronous
 * disables it was asked after. */
static long short_way, compared, after_async;

#define rnd check_rand

static struct pt_packet random_packet(uint8_t *mtc, int *on)
{
	uint32_t k = rnd() % 32, size;
	uint64_t bits;

	switch (k) {
	case 0: case 1: case 2: case 3: case 4:
		return pk_random(rnd, (int) k, mtc, on);
	case 5:
		return pk(rnd() % 8 ? ppt_pad : ppt_ovf);
	case 6:
		return rnd() % 8 ? pk_full(ppt_fup, 0x400000 + (rnd() & 0xff))
				 : pk(ppt_psb);
	case 7:
		return pk_exec(ptem_64bit, 0);
	case 8: case 9: case 10: case 11:
		return pk_full(ppt_tip, 0x400000 + (rnd() & 0xfff));
	case 12: case 13: case 14: case 15: case 16: case 17:
		return pk_random(rnd, 5, mtc, on);
	case 18: case 19: case 20: case 21: case 22: case 23:
		return pk_random(rnd, 6, mtc, on);
	default:
		size = rnd() % 8 ? 1 + rnd() % 6 : 7 + rnd() % 40;
		bits = ((uint64_t) rnd() << 24) | rnd();
		return pk_tnt(bits & ((1ull << size) - 1), (uint8_t) size);
	}
}

/* Whether ipt__evt_next_tnt may be asked while holding @ev: what the
 * block decoder holds when it asks. */
static int holds(const struct pt_event *ev)
{
	return ev->type == ptev_tnt || ev->type == ptev_tip ||
	       ev->type == ptev_enabled || ev->type == ptev_disabled ||
	       ev->type == ptev_async_disabled;
}

static void one_trace(int no_time)
{
	struct tb t;
	struct pt_event_decoder *a, *b;
	struct pt_event ea, eb;
	uint8_t mtc = (uint8_t) rnd();
	int i, on = 0, sa, sb, held = 0;

	tb_begin(&t);
	t.config.mtc_freq = (uint8_t) (rnd() % 4 ? 3 : rnd() % 32);
	t.config.nom_freq = (uint8_t) (rnd() % 3 ? 37 : 0);
	t.config.cpuid_0x15_eax = rnd() % 4 ? 2 : 0;
	t.config.cpuid_0x15_ebx = 308;

	tb_add(&t, pk(ppt_psb));
	tb_add(&t, pk_tsc(rnd()));
	if (rnd() % 2) {
		struct pt_packet p = pk(ppt_tma);

		p.payload.tma.ctc = (uint16_t) rnd();
		p.payload.tma.fc = (uint16_t) (rnd() & 0x1ff);
		tb_add(&t, p);
	}
	tb_add(&t, pk_cbr(40));
	tb_add(&t, pk(ppt_psbend));
	tb_add(&t, pk_full(ppt_tip_pge, 0x400000));
	on = 1;
	for (i = 0; i < 200; ++i)
		tb_add(&t, random_packet(&mtc, &on));
	tb_end(&t);
	if (!CHECK(!t.broken))
		return;

	a = pt_evt_alloc_decoder(&t.config);
	b = pt_evt_alloc_decoder(&t.config);
	if (!CHECK(a && b))
		goto out;
	a->no_time = b->no_time = no_time ? 1 : 0;
	sa = pt_evt_sync_forward(a);
	sb = pt_evt_sync_forward(b);
	CHECK_EQ(sa, sb);
	if (sa < 0)
		goto out;

	memset(&eb, 0, sizeof(eb));
	for (i = 0; i < 1000; ++i) {
		sa = pt_evt_next(a, &ea, sizeof(ea));
		sb = 0;
		if (held && holds(&eb)) {
			after_async += eb.type == ptev_async_disabled;
			sb = ipt__evt_next_tnt(b, &eb);
		}
		if (sb == 1) {
			short_way += 1;
			sb = 0;
		} else if (sb == 0)
			sb = pt_evt_next(b, &eb, sizeof(eb));
		CHECK_EQ(sb, sa);
		if (sa < 0 || sb < 0)
			break;
		compared += 1;
		CHECK(!memcmp(&ea, &eb, sizeof(ea)));
		CHECK(ipt__time_same(&a->time, &b->time));
		CHECK(ipt__tcal_same(&a->tcal, &b->tcal));
		CHECK_EQ(a->packet.type, b->packet.type);
		CHECK(a->pacdec.pos == b->pacdec.pos);
		held = 1;
	}
out:
	pt_evt_free_decoder(a);
	pt_evt_free_decoder(b);
}

int main(void)
{
	int i;

	check_seed = 777;
	for (i = 0; i < 3000; ++i)
		one_trace(i % 4 == 0);
	printf("%ld events compared, %ld the short way, %ld asked after an "
	       "asynchronous disable\n",
	       compared, short_way, after_async);
	/* Both ways taken often. */
	CHECK(short_way > 10000);
	CHECK(compared - short_way > 10000);
	CHECK(after_async > 50);
	return check_done();
}

/* The look ahead after synchronizing (ipt__evt_start_ip), which passes
 * over MTC and CYC packets when mtc_freq is below 16, against the same
 * look ahead applying every one of them: random traces of time packets
 * (MTC that wraps and jumps, CYC before any calibration, TSC and TMA in
 * any order, configurations without cpuid 0x15 or nominal frequency),
 * PSB+ with tracing enabled and disabled, TIP.PGE/PGD, OVF, TNT and bytes
 * that are no packet, synchronized at every PSB; the answer (error,
 * enabled or not, the IP) must be the same.
 *
 * The look ahead is static, so this test compiles its own private copy of
 * the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "evt_trace.h"

/* Starts compared, and of those with tracing enabled, failed. */
static int starts, enabled, failed;

#define rnd check_rand

static struct pt_packet random_packet(uint8_t *mtc, int *on)
{
	uint32_t k = rnd() % 24;

	switch (k) {
	case 0: case 1: case 2: case 3: case 4:
		return pk_random(rnd, (int) k, mtc, on);
	case 5:
		return pk(rnd() % 4 ? ppt_pad : ppt_ovf);
	case 6:
		return rnd() % 4 ? pk(ppt_psb) : pk_tnt(1, 1);
	case 7:
		return rnd() % 2 ? pk(ppt_psbend)
				 : pk_full(ppt_fup, 0x400000 + (rnd() & 0xff));
	case 8:
		return pk_exec(ptem_64bit, 0);
	case 9: case 10: case 11: case 12: case 13: case 14:
		return pk_random(rnd, 5, mtc, on);
	default:
		return pk_random(rnd, 6, mtc, on);
	}
}

static void one_trace(void)
{
	struct tb t;
	struct pt_event_decoder *d;
	uint8_t mtc = (uint8_t) rnd();
	int i, on = 0, n = 20 + (int) (rnd() % 150);

	tb_begin(&t);
	t.config.mtc_freq = (uint8_t) (rnd() % 4 ? rnd() % 16 : rnd() % 32);
	t.config.nom_freq = (uint8_t) (rnd() % 3 ? rnd() : 0);
	t.config.cpuid_0x15_eax = rnd() % 5 ? 1 + rnd() % 8 : 0;
	t.config.cpuid_0x15_ebx = rnd() % 5 ? 1 + rnd() % 400 : 0;
	t.config.errata.bdm70 = rnd() & 1;
	t.config.errata.skd022 = rnd() & 1;
	t.config.errata.skl168 = rnd() & 1;

	tb_add(&t, pk(ppt_psb));
	for (i = (int) (rnd() % 4); i > 0; --i) {
		struct pt_packet p = random_packet(&mtc, &on);

		if (p.type == ppt_mtc || p.type == ppt_cyc ||
		    p.type == ppt_tsc || p.type == ppt_tma ||
		    p.type == ppt_cbr || p.type == ppt_fup)
			tb_add(&t, p);
	}
	tb_add(&t, pk(ppt_psbend));
	for (i = 0; i < n; ++i)
		tb_add(&t, random_packet(&mtc, &on));
	tb_end(&t);
	if (!CHECK(!t.broken))
		return;
	/* Now and then a byte that is no packet. */
	if (rnd() % 4 == 0 && t.config.end > t.config.begin + 40) {
		size_t at = 30 + rnd() % (size_t) (t.config.end -
						  t.config.begin - 30);

		t.buf[at] = 0xd9;
	}

	d = pt_evt_alloc_decoder(&t.config);
	if (!CHECK(d != NULL))
		return;
	while (pt_evt_sync_forward(d) >= 0) {
		uint64_t ip_skip = 1, ip_all = 2;
		int skip, all;

		skip = ipt__evt_start_ip(d, &ip_skip);
		all = ipt__evt_start_ip_as(d, &ip_all, 0);
		CHECK_EQ(skip, all);
		if (skip > 0)
			CHECK_EQ(ip_skip, ip_all);
		starts += 1;
		enabled += skip > 0;
		failed += skip < 0;
	}
	pt_evt_free_decoder(d);
}

int main(void)
{
	int i;

	check_seed = 4711;
	for (i = 0; i < 3000; ++i)
		one_trace();
	printf("%d starts: %d with tracing enabled, %d with an error "
	       "(both ways alike)\n", starts, enabled, failed);
	/* The traces reach every answer. */
	CHECK(starts > 3000);
	CHECK(enabled > 100);
	CHECK(failed > 100);
	return check_done();
}

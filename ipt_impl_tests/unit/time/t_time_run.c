/* ipt__time_run_mtc, the event decoder's way through runs of MTC
 * packets, against the per-packet rules: random sequences of TSC, TMA,
 * CBR, MTC, CYC, PSB and OVF (in and out of PSB+, MTC values that step,
 * jump and wrap, CYC before and after calibration, configurations with
 * and without cpuid 0x15, MTC frequencies beyond IA32_RTIT_CTL's four
 * bits, the SKL168 erratum on and off) go through ipt_tcal_* and then
 * ipt_time_*, as the event decoder applies them.  At every MTC the fast
 * way, where ipt__time_run_ready allows it, works on a copy: when it takes
 * the packet, the per-packet rules must succeed and leave the very same
 * time and calibration state; when it refuses, the copy must be
 * untouched.  ipt__time_run_ready must stay as it was over a CYC and over
 * an MTC the fast way took.  Both outcomes must be common, or the test
 * proves nothing. */
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"

#include <string.h>

#define rnd check_rand

static int ok_or_cfg(int err)
{
	return (err < 0 && err != -pte_bad_config) ? err : 0;
}

struct state {
	struct ipt_time time;
	struct ipt_time_cal tcal;
};

static int same(const struct state *a, const struct state *b)
{
	return ipt__time_same(&a->time, &b->time) &&
	       ipt__tcal_same(&a->tcal, &b->tcal);
}

/* Counts of what the fast way did. */
static long taken, refused, not_ready, no_clk;

/* An MTC through the per-packet rules, as the event decoder applies it;
 * first through the fast way on a copy, compared. */
static int apply_mtc(struct state *s, uint8_t payload,
		     const struct pt_config *config)
{
	struct pt_packet_mtc mtc;
	struct ipt__time_clk clk;
	struct state before = *s, fast = *s;
	int err, took = 0, ready;

	ready = ipt__time_run_ready(&s->time, &s->tcal);
	if (!ipt__time_clk_init(&clk, config))
		no_clk += 1;
	else if (!ready)
		not_ready += 1;
	else
		took = ipt__time_run_mtc(&fast.time, &fast.tcal, payload,
					 &clk);

	mtc.ctc = payload;
	err = ok_or_cfg(ipt_tcal_update_mtc(&s->tcal, &mtc, config));
	if (!err)
		err = ok_or_cfg(ipt_time_update_mtc(&s->time, &mtc, config));

	if (took) {
		taken += 1;
		CHECK_EQ(err, 0);
		CHECK(same(&fast, s));
		CHECK(ipt__time_run_ready(&s->time, &s->tcal));
	} else if (ready && ipt__time_clk_init(&clk, config)) {
		refused += 1;
		CHECK(same(&fast, &before));
	}
	return err;
}

static int apply_cyc(struct state *s, uint64_t value,
		     const struct pt_config *config)
{
	struct pt_packet_cyc cyc;
	uint64_t fcr = 0;
	int err, ready;

	ready = ipt__time_run_ready(&s->time, &s->tcal);
	cyc.value = value;
	err = ok_or_cfg(ipt_tcal_update_cyc(&s->tcal, &cyc, config));
	if (err < 0)
		return err;
	if (ipt_tcal_fcr(&fcr, &s->tcal) < 0)
		fcr = 0;
	err = ok_or_cfg(ipt_time_update_cyc(&s->time, &cyc, config, fcr));
	CHECK_EQ(ipt__time_run_ready(&s->time, &s->tcal), ready);
	return err;
}

static int apply_tsc(struct state *s, uint64_t tsc, int header,
		     const struct pt_config *config)
{
	struct pt_packet_tsc p;
	int err;

	p.tsc = tsc;
	err = header ? ipt_tcal_header_tsc(&s->tcal, &p, config)
		     : ipt_tcal_update_tsc(&s->tcal, &p, config);
	if ((err = ok_or_cfg(err)) < 0)
		return err;
	return ok_or_cfg(ipt_time_update_tsc(&s->time, &p, config));
}

static int apply_tma(struct state *s, const struct pt_config *config)
{
	struct pt_packet_tma p;
	int err;

	p.ctc = (uint16_t) rnd();
	p.fc = (uint16_t) (rnd() & 0x1ff);
	err = ok_or_cfg(ipt_tcal_update_tma(&s->tcal, &p, config));
	if (err < 0)
		return err;
	return ok_or_cfg(ipt_time_update_tma(&s->time, &p, config));
}

static int apply_cbr(struct state *s, int header,
		     const struct pt_config *config)
{
	struct pt_packet_cbr p;
	int err;

	p.ratio = (uint8_t) (rnd() % 8 ? 1 + rnd() % 60 : 0);
	err = header ? ipt_tcal_header_cbr(&s->tcal, &p, config)
		     : ipt_tcal_update_cbr(&s->tcal, &p, config);
	if ((err = ok_or_cfg(err)) < 0)
		return err;
	return ok_or_cfg(ipt_time_update_cbr(&s->time, &p, config));
}

static void one_sequence(void)
{
	struct pt_config config;
	struct state s;
	uint8_t mtc = (uint8_t) rnd();
	int i, header = 0, n = 50 + (int) (rnd() % 400);
	/* Long runs of MTC and CYC in some sequences, mixed in others. */
	uint32_t other = rnd() % 2 ? 4 : 40;

	pt_config_init(&config);
	/* Beyond 15 the CTC may be so wide that its fast-counter delta
	 * does not fit the calibration's fraction bits: the fast way
	 * refuses such an MTC.  Beyond 23 there is no fast way. */
	config.mtc_freq = (uint8_t) (rnd() % 4 ? rnd() % 16 : 16 + rnd() % 24);
	config.cpuid_0x15_eax = rnd() % 8 ? 1 + rnd() % 8 : 0;
	config.cpuid_0x15_ebx = rnd() % 8 ? 1 + rnd() % 400 : 0;
	if (config.mtc_freq >= 16 && rnd() % 2) {
		config.cpuid_0x15_eax = 1;
		config.cpuid_0x15_ebx = 0xffffffffu - rnd() % 16;
	}
	config.nom_freq = (uint8_t) (rnd() % 3 ? rnd() : 0);
	config.errata.skl168 = rnd() % 2;

	ipt_time_init(&s.time);
	ipt_tcal_init(&s.tcal);
	for (i = 0; i < n; ++i) {
		uint32_t op = rnd() % other;

		/* An error stops nothing here: the state after it is what
		 * the next packet meets. */
		switch (op) {
		case 0:
			apply_tsc(&s, ((uint64_t) rnd() << 24 | rnd()) &
					      0xffffffffffffffull,
				  header, &config);
			break;
		case 1:
			apply_tma(&s, &config);
			break;
		case 2:
			if (rnd() % 2)
				apply_cbr(&s, header, &config);
			else if (rnd() % 2) {
				header = !header;
				if (header)
					ipt_tcal_update_psb(&s.tcal, &config);
			} else if (rnd() % 4 == 0)
				ipt_tcal_update_ovf(&s.tcal, &config);
			break;
		case 3:
			/* A CYC-less MTC period. */
			mtc = (uint8_t) (mtc + 1);
			apply_mtc(&s, mtc, &config);
			break;
		default:
			if (op % 2) {
				/* Mostly the next value, now and then a
				 * jump, a step back or the same again. */
				switch (rnd() % 16) {
				case 0: mtc = (uint8_t) rnd(); break;
				case 1: mtc = (uint8_t) (mtc - 1); break;
				case 2: break;
				default: mtc = (uint8_t) (mtc + 1); break;
				}
				apply_mtc(&s, mtc, &config);
			} else {
				apply_cyc(&s,
					  rnd() % 16 ? rnd() % 300
					  : rnd() % 2 ? 0 : rnd(),
					  &config);
			}
			break;
		}
	}
}

/* A state the per-packet rules never reach from ipt_time_init: an MTC
 * seen while a TSC waits for its TMA.  They would ignore the next MTC, so
 * the fast way must not be ready for it. */
static void tma_due(void)
{
	struct pt_config config;
	struct state s;

	pt_config_init(&config);
	config.mtc_freq = 3;
	config.cpuid_0x15_eax = 2;
	config.cpuid_0x15_ebx = 308;
	ipt_time_init(&s.time);
	ipt_tcal_init(&s.tcal);
	apply_tsc(&s, 1000, 1, &config);
	apply_tma(&s, &config);
	apply_mtc(&s, 1, &config);
	apply_mtc(&s, 2, &config);
	CHECK(ipt__time_run_ready(&s.time, &s.tcal));
	s.time.have_tma = 0;
	CHECK(!ipt__time_run_ready(&s.time, &s.tcal));
}

int main(void)
{
	int i;

	check_seed = 4711;
	tma_due();

	for (i = 0; i < 4000; ++i)
		one_sequence();

	printf("fast way took %ld MTCs, refused %ld; not ready %ld, no "
	       "clock %ld\n", taken, refused, not_ready, no_clk);
	/* Both ways of the fast path, and the cases it stays out of. */
	CHECK(taken > 100000);
	CHECK(refused > 100);
	CHECK(not_ready > 1000);
	CHECK(no_clk > 1000);
	return check_done();
}

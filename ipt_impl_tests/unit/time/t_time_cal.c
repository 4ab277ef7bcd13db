/* Timing calibration (ipt_tcal_*): the fast-counter:cycles ratio from
 * CBR, from cycles between TSCs and between MTCs, the SKL168 workaround
 * and overflow handling. */
#include "ipt.h"
#include "check.h"

static struct pt_config cfg(uint8_t mtc_freq, uint32_t eax, uint32_t ebx)
{
	struct pt_config config;

	pt_config_init(&config);
	config.mtc_freq = mtc_freq;
	config.cpuid_0x15_eax = eax;
	config.cpuid_0x15_ebx = ebx;
	return config;
}

static int cyc(struct ipt_time_cal *t, uint64_t v, const struct pt_config *c)
{
	struct pt_packet_cyc p;

	p.value = v;
	return ipt_tcal_update_cyc(t, &p, c);
}

static int mtc(struct ipt_time_cal *t, uint8_t ctc, const struct pt_config *c)
{
	struct pt_packet_mtc p;

	p.ctc = ctc;
	return ipt_tcal_update_mtc(t, &p, c);
}

static int tsc(struct ipt_time_cal *t, uint64_t v, int header,
	       const struct pt_config *c)
{
	struct pt_packet_tsc p;

	p.tsc = v;
	return header ? ipt_tcal_header_tsc(t, &p, c)
		      : ipt_tcal_update_tsc(t, &p, c);
}

static int cbr(struct ipt_time_cal *t, uint8_t ratio, int header,
	       const struct pt_config *c)
{
	struct pt_packet_cbr p;

	p.ratio = ratio;
	return header ? ipt_tcal_header_cbr(t, &p, c)
		      : ipt_tcal_update_cbr(t, &p, c);
}

/* The FCR, or 0 when there is none. */
static uint64_t fcr(const struct ipt_time_cal *t)
{
	uint64_t v = 0;

	if (ipt_tcal_fcr(&v, t) < 0)
		return 0;
	return v;
}

static void test_fcr(void)
{
	struct ipt_time_cal t;
	uint64_t v = 5;

	ipt_tcal_init(&t);
	CHECK_EQ(ipt_tcal_fcr(&v, &t), -pte_no_time);
	CHECK_EQ(v, 5);
	CHECK_EQ(ipt_tcal_fcr(NULL, &t), -pte_internal);
	CHECK_EQ(ipt_tcal_set_fcr(NULL, 1), -pte_internal);
	CHECK_EQ(ipt_tcal_set_fcr(&t, 0x180), 0);
	CHECK_EQ(ipt_tcal_fcr(&v, &t), 0);
	CHECK_EQ(v, 0x180);
	/* Zero is a value like any other once set. */
	CHECK_EQ(ipt_tcal_set_fcr(&t, 0), 0);
	CHECK_EQ(ipt_tcal_fcr(&v, &t), 0);
	CHECK_EQ(v, 0);
	ipt_tcal_init(NULL);
}

static void test_cbr(void)
{
	struct ipt_time_cal t;
	struct pt_config c = cfg(0, 1, 1);

	ipt_tcal_init(&t);
	/* Without the nominal frequency, CBR tells nothing. */
	CHECK_EQ(cbr(&t, 0x10, 1, &c), 0);
	CHECK_EQ(ipt_tcal_fcr(NULL, &t), -pte_internal);
	CHECK_EQ(fcr(&t), 0);

	c.nom_freq = 0x20;
	CHECK_EQ(cbr(&t, 0x10, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0x200);
	CHECK_EQ(cbr(&t, 0, 1, &c), -pte_bad_packet);
	CHECK_EQ(cbr(&t, 0x40, 0, &c), 0);
	CHECK_EQ(fcr(&t), 0x80);

	/* Outside PSB+, a CBR restarts calibration. */
	c.nom_freq = 0;
	CHECK_EQ(cbr(&t, 0x40, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0x80);
	CHECK_EQ(cbr(&t, 0x40, 0, &c), 0);
	CHECK_EQ(ipt_tcal_fcr(&t.fcr, &t), -pte_no_time);
}

static void test_tsc(void)
{
	struct ipt_time_cal t;
	struct pt_config c = cfg(0, 1, 1);

	ipt_tcal_init(&t);
	/* The first TSC has nothing to compare with. */
	CHECK_EQ(tsc(&t, 0x1000, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0);
	CHECK_EQ(cyc(&t, 0x80, &c), 0);
	CHECK_EQ(cyc(&t, 0x80, &c), 0);
	CHECK_EQ(tsc(&t, 0x1800, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0x800);

	/* A TSC outside PSB+ only starts the next interval. */
	CHECK_EQ(cyc(&t, 0x400, &c), 0);
	CHECK_EQ(tsc(&t, 0x3000, 0, &c), 0);
	CHECK_EQ(fcr(&t), 0x800);
	CHECK_EQ(cyc(&t, 0x400, &c), 0);
	CHECK_EQ(tsc(&t, 0x3100, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0x40);

	/* The 56-bit TSC wraps once. */
	CHECK_EQ(tsc(&t, 0xffffffffffff00ull, 1, &c), 0);
	CHECK_EQ(cyc(&t, 0x100, &c), 0);
	CHECK_EQ(tsc(&t, 0x100, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0x200);

	/* Further back than a wrap: reject. */
	CHECK_EQ(tsc(&t, 0xffffffffffffffffull, 1, &c), 0);
	CHECK_EQ(cyc(&t, 0x100, &c), 0);
	CHECK_EQ(tsc(&t, 0x100, 1, &c), -pte_bad_packet);
}

static void test_mtc(void)
{
	struct ipt_time_cal t;
	struct pt_config c = cfg(0, 1, 4);
	struct pt_config bad = cfg(0, 0, 4);

	ipt_tcal_init(&t);
	CHECK_EQ(mtc(&t, 0x10, &c), 0);
	CHECK_EQ(fcr(&t), 0);
	/* No cycles: the next interval includes this one. */
	CHECK_EQ(mtc(&t, 0x11, &c), 0);
	CHECK_EQ(cyc(&t, 8, &c), 0);
	CHECK_EQ(mtc(&t, 0x12, &c), 0);
	/* 2 ticks * 4 = 8 FC over 8 cycles. */
	CHECK_EQ(fcr(&t), 0x100);
	CHECK_EQ(t.lost_mtc, 0);

	/* MTCs calibrate; TSCs in PSB+ then leave it alone. */
	CHECK_EQ(cyc(&t, 0x10, &c), 0);
	CHECK_EQ(tsc(&t, 0x1000, 1, &c), 0);
	CHECK_EQ(cyc(&t, 0x10, &c), 0);
	CHECK_EQ(tsc(&t, 0x9000, 1, &c), 0);
	CHECK_EQ(fcr(&t), 0x100);

	CHECK_EQ(cyc(&t, 4, &c), 0);
	CHECK_EQ(mtc(&t, 0x13, &bad), -pte_bad_config);
	CHECK_EQ(t.lost_mtc, 1);
	CHECK_EQ(fcr(&t), 0x100);
	CHECK_EQ(cyc(&t, 4, &c), 0);
	CHECK_EQ(mtc(&t, 0x14, &c), 0);
	CHECK_EQ(fcr(&t), 0x100);
	CHECK_EQ(t.lost_mtc, 0);

	/* An overflow forgets the interval but keeps the ratio. */
	CHECK_EQ(cyc(&t, 100, &c), 0);
	CHECK_EQ(ipt_tcal_update_ovf(&t, &c), 0);
	CHECK_EQ(cyc(&t, 1, &c), 0);
	CHECK_EQ(mtc(&t, 0x20, &c), 0);
	CHECK_EQ(fcr(&t), 0x100);
	CHECK_EQ(cyc(&t, 2, &c), 0);
	CHECK_EQ(mtc(&t, 0x21, &c), 0);
	CHECK_EQ(fcr(&t), 0x200);
	CHECK_EQ(ipt_tcal_update_ovf(NULL, &c), -pte_internal);
}

static void test_skl168(void)
{
	struct ipt_time_cal t;
	struct pt_config c = cfg(0, 1, 4);
	struct pt_config big = cfg(0, 1, 5000);

	c.errata.skl168 = 1;
	big.errata.skl168 = 1;

	/* MTCs lost after PSB: skip that interval. */
	ipt_tcal_init(&t);
	CHECK_EQ(mtc(&t, 0x10, &c), 0);
	CHECK_EQ(ipt_tcal_update_psb(&t, &c), 0);
	CHECK_EQ(cyc(&t, 8, &c), 0);
	CHECK_EQ(mtc(&t, 0x14, &c), 0);
	CHECK_EQ(fcr(&t), 0);
	CHECK_EQ(t.lost_mtc, 1);
	/* Only the first MTC after PSB is checked. */
	CHECK_EQ(cyc(&t, 8, &c), 0);
	CHECK_EQ(mtc(&t, 0x16, &c), 0);
	CHECK_EQ(fcr(&t), 0x100);

	/* Too much time for the cycles: a 4096-cycle CYC was dropped. */
	ipt_tcal_init(&t);
	CHECK_EQ(ipt_tcal_set_fcr(&t, 0x100), 0);
	CHECK_EQ(mtc(&t, 0x10, &big), 0);
	CHECK_EQ(ipt_tcal_update_psb(&t, &big), 0);
	CHECK_EQ(cyc(&t, 100, &big), 0);
	CHECK_EQ(mtc(&t, 0x11, &big), 0);
	CHECK_EQ(fcr(&t), 0x100);

	/* Without the erratum the same interval calibrates. */
	big.errata.skl168 = 0;
	ipt_tcal_init(&t);
	CHECK_EQ(ipt_tcal_set_fcr(&t, 0x100), 0);
	CHECK_EQ(mtc(&t, 0x10, &big), 0);
	CHECK_EQ(ipt_tcal_update_psb(&t, &big), 0);
	CHECK_EQ(cyc(&t, 100, &big), 0);
	CHECK_EQ(mtc(&t, 0x11, &big), 0);
	CHECK_EQ(fcr(&t), (5000 << 8) / 100);
}

int main(void)
{
	test_fcr();
	test_cbr();
	test_tsc();
	test_mtc();
	test_skl168();
	return check_done();
}

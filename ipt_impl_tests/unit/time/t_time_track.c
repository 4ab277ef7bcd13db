/* Time tracking (ipt_time_*): TSC, TMA, MTC, CYC and CBR updates, with
 * values worked out by hand from the SDM's timing rules. */
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

static int tsc(struct ipt_time *t, uint64_t v, const struct pt_config *c)
{
	struct pt_packet_tsc p;

	p.tsc = v;
	return ipt_time_update_tsc(t, &p, c);
}

static int tma(struct ipt_time *t, uint16_t ctc, uint16_t fc,
	       const struct pt_config *c)
{
	struct pt_packet_tma p;

	p.ctc = ctc;
	p.fc = fc;
	return ipt_time_update_tma(t, &p, c);
}

static int mtc(struct ipt_time *t, uint8_t ctc, const struct pt_config *c)
{
	struct pt_packet_mtc p;

	p.ctc = ctc;
	return ipt_time_update_mtc(t, &p, c);
}

static int cyc(struct ipt_time *t, uint64_t v, const struct pt_config *c,
	       uint64_t fcr)
{
	struct pt_packet_cyc p;

	p.value = v;
	return ipt_time_update_cyc(t, &p, c, fcr);
}

static uint64_t now(const struct ipt_time *t)
{
	uint64_t v = 0;

	(void) ipt_time_query_tsc(&v, NULL, NULL, t);
	return v;
}

static void test_init_and_query(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(0, 1, 1);
	struct pt_packet_cbr cbr;
	uint64_t v = 7;
	uint32_t lm = 7, lc = 7, r = 0;

	ipt_time_init(&t);
	CHECK_EQ(ipt_time_query_tsc(&v, &lm, &lc, &t), -pte_no_time);
	CHECK_EQ(v, 0);
	CHECK_EQ(lm, 0);
	CHECK_EQ(lc, 0);
	CHECK_EQ(ipt_time_query_cbr(&r, &t), -pte_no_cbr);
	CHECK_EQ(ipt_time_query_tsc(NULL, NULL, NULL, &t), -pte_internal);
	CHECK_EQ(ipt_time_query_tsc(&v, NULL, NULL, NULL), -pte_internal);
	CHECK_EQ(ipt_time_query_cbr(NULL, &t), -pte_internal);
	CHECK_EQ(ipt_time_update_tsc(NULL, NULL, &c), -pte_internal);
	CHECK_EQ(ipt_time_update_mtc(&t, NULL, &c), -pte_internal);
	ipt_time_init(NULL);

	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	CHECK_EQ(ipt_time_query_tsc(&v, NULL, NULL, &t), 0);
	CHECK_EQ(v, 0x1000);

	cbr.ratio = 0;
	CHECK_EQ(ipt_time_update_cbr(&t, &cbr, &c), -pte_bad_packet);
	cbr.ratio = 0x2c;
	CHECK_EQ(ipt_time_update_cbr(&t, &cbr, &c), 0);
	CHECK_EQ(ipt_time_query_cbr(&r, &t), 0);
	CHECK_EQ(r, 0x2c);
}

static void test_tma_context(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(0, 1, 2);

	ipt_time_init(&t);
	CHECK_EQ(tma(&t, 1, 1, &c), -pte_bad_context);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	/* An MTC between TSC and TMA is ignored. */
	CHECK_EQ(mtc(&t, 0x77, &c), 0);
	CHECK_EQ(now(&t), 0x1000);
	CHECK_EQ(tma(&t, 0x10, 4, &c), 0);
	CHECK_EQ(tma(&t, 0x10, 4, &c), -pte_bad_context);
}

/* mtc_freq 0: TMA carries all CTC bits MTC has and acts as an MTC. */
static void test_mtc_after_full_tma(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(0, 1, 2);

	ipt_time_init(&t);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	CHECK_EQ(tma(&t, 0x10, 4, &c), 0);
	CHECK_EQ(now(&t), 0x1000);
	/* Two CTC ticks, 2 FC each, from base 0x1000 - 4. */
	CHECK_EQ(mtc(&t, 0x12, &c), 0);
	CHECK_EQ(now(&t), 0x1000);
	CHECK_EQ(mtc(&t, 0x15, &c), 0);
	CHECK_EQ(now(&t), 0x1006);
	/* Wrap: 0x15 -> 0x102 is 0xed ticks. */
	CHECK_EQ(mtc(&t, 0x02, &c), 0);
	CHECK_EQ(now(&t), 0x1006 + 2 * 0xed);

	/* A new TSC starts over. */
	CHECK_EQ(tsc(&t, 0x5000, &c), 0);
	CHECK_EQ(now(&t), 0x5000);
}

/* mtc_freq 9: CTC is 17 bits as MTC sees it, TMA has only 16, so the
 * first MTC supplies the high bit. */
static void test_mtc_after_partial_tma(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(9, 1, 1);

	ipt_time_init(&t);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	CHECK_EQ(tma(&t, 0x100, 0, &c), 0);
	CHECK_EQ(mtc(&t, 0x81, &c), 0);
	CHECK_EQ(now(&t), 0x1100);

	/* TMA's low bits above the MTC's: one TMA period earlier. */
	ipt_time_init(&t);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	CHECK_EQ(tma(&t, 0x300, 0, &c), 0);
	CHECK_EQ(mtc(&t, 0x81, &c), 0);
	CHECK_EQ(now(&t), 0x1000 + 0xff00);
}

static void test_mtc_without_tsc(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(0, 1, 3);
	struct pt_config bad = cfg(0, 0, 3);
	uint64_t v;
	uint32_t lm = 9;

	ipt_time_init(&t);
	/* The first MTC only starts the clock. */
	CHECK_EQ(mtc(&t, 0x40, &c), 0);
	CHECK_EQ(now(&t), 0);
	CHECK_EQ(mtc(&t, 0x41, &c), 0);
	CHECK_EQ(now(&t), 3);
	CHECK_EQ(ipt_time_query_tsc(&v, &lm, NULL, &t), -pte_no_time);
	CHECK_EQ(v, 3);
	CHECK_EQ(lm, 0);
	/* No cpuid 0x15 ratio: cannot convert. */
	CHECK_EQ(mtc(&t, 0x42, &bad), -pte_bad_config);
}

static void test_cyc(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(0, 1, 2);
	uint64_t v;
	uint32_t lc = 0;

	ipt_time_init(&t);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	/* No ratio: the CYC is lost. */
	CHECK_EQ(cyc(&t, 10, &c, 0), 0);
	CHECK_EQ(ipt_time_query_tsc(&v, NULL, &lc, &t), 0);
	CHECK_EQ(lc, 1);
	CHECK_EQ(v, 0x1000);
	/* Ratio 2.0. */
	CHECK_EQ(cyc(&t, 10, &c, 2 << ipt_tcal_fcr_shr), 0);
	CHECK_EQ(now(&t), 0x1000 + 20);
	CHECK_EQ(cyc(&t, 3, &c, 0x180), 0);
	CHECK_EQ(now(&t), 0x1000 + 20 + 4);
	/* The TSC recovers from the loss. */
	CHECK_EQ(tsc(&t, 0x2000, &c), 0);
	CHECK_EQ(ipt_time_query_tsc(&v, NULL, &lc, &t), 0);
	CHECK_EQ(lc, 0);
}

/* The first CYC after an MTC may span earlier MTC periods: those cycles,
 * as the ratio estimates them, do not count again. */
static void test_cyc_spanning_mtc(void)
{
	struct ipt_time t;
	struct pt_config c = cfg(0, 1, 2);

	ipt_time_init(&t);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	CHECK_EQ(tma(&t, 0x10, 0, &c), 0);
	CHECK_EQ(mtc(&t, 0x12, &c), 0);
	CHECK_EQ(now(&t), 0x1004);
	/* Two ticks are 4 FC, 4 cycles at ratio 1.0; 6 remain. */
	CHECK_EQ(cyc(&t, 10, &c, 1 << ipt_tcal_fcr_shr), 0);
	CHECK_EQ(now(&t), 0x100a);

	ipt_time_init(&t);
	CHECK_EQ(tsc(&t, 0x1000, &c), 0);
	CHECK_EQ(tma(&t, 0x10, 0, &c), 0);
	CHECK_EQ(mtc(&t, 0x12, &c), 0);
	/* Fewer cycles than the past periods took: all of them are past. */
	CHECK_EQ(cyc(&t, 3, &c, 1 << ipt_tcal_fcr_shr), 0);
	CHECK_EQ(now(&t), 0x1004);
	/* Until some time is counted in this period, each CYC is checked
	 * against the past periods again. */
	CHECK_EQ(cyc(&t, 5, &c, 1 << ipt_tcal_fcr_shr), 0);
	CHECK_EQ(now(&t), 0x1005);
	/* From then on CYCs count in full. */
	CHECK_EQ(cyc(&t, 5, &c, 1 << ipt_tcal_fcr_shr), 0);
	CHECK_EQ(now(&t), 0x100a);
}

int main(void)
{
	test_init_and_query();
	test_tma_context();
	test_mtc_after_full_tma();
	test_mtc_after_partial_tma();
	test_mtc_without_tsc();
	test_cyc();
	test_cyc_spanning_mtc();
	return check_done();
}

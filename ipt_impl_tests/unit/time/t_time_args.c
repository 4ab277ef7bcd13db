/* t_time_args - the time and calibration functions with a missing
 * argument: -pte_internal for each pointer they use, as libipt 2.3's
 * pt_time_* and pt_tcal_* (src/pt_time.c), whose behaviour they follow;
 * nothing is written.  Like libipt's, the calibration ignores TMA, and
 * its TSC in PSB+ and its CYC need no configuration. */

#include "ipt.h"
#include "check.h"

#include <string.h>

int main(void)
{
	struct pt_packet_tsc tsc = { 0x1000 };
	struct pt_packet_cbr cbr = { 10 };
	struct pt_packet_tma tma = { 1, 2 };
	struct pt_packet_mtc mtc = { 3 };
	struct pt_packet_cyc cyc = { 4 };
	struct ipt_time_cal tcal, tcal0;
	struct ipt_time time, time0;
	struct pt_config config;
	uint64_t out = 7, fcr = 1 << ipt_tcal_fcr_shr;
	uint32_t out32 = 7;

	pt_config_init(&config);
	config.mtc_freq = 4;
	config.nom_freq = 1;
	config.cpuid_0x15_eax = 1;
	config.cpuid_0x15_ebx = 1;
	ipt_time_init(&time);
	ipt_tcal_init(&tcal);
	memcpy(&time0, &time, sizeof(time));
	memcpy(&tcal0, &tcal, sizeof(tcal));

	CHECK_EQ(ipt_time_query_tsc(NULL, NULL, NULL, &time), -pte_internal);
	CHECK_EQ(ipt_time_query_tsc(&out, NULL, NULL, NULL), -pte_internal);
	CHECK_EQ(ipt_time_query_cbr(NULL, &time), -pte_internal);
	CHECK_EQ(ipt_time_query_cbr(&out32, NULL), -pte_internal);

	CHECK_EQ(ipt_time_update_tsc(NULL, &tsc, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_tsc(&time, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_cbr(NULL, &cbr, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_cbr(&time, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_tma(NULL, &tma, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_tma(&time, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_tma(&time, &tma, NULL), -pte_internal);
	CHECK_EQ(ipt_time_update_mtc(NULL, &mtc, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_mtc(&time, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_time_update_mtc(&time, &mtc, NULL), -pte_internal);
	CHECK_EQ(ipt_time_update_cyc(NULL, &cyc, &config, fcr),
		 -pte_internal);
	CHECK_EQ(ipt_time_update_cyc(&time, NULL, &config, fcr),
		 -pte_internal);
	CHECK_EQ(ipt_time_update_cyc(&time, &cyc, NULL, fcr), -pte_internal);
	CHECK(!memcmp(&time, &time0, sizeof(time)));

	CHECK_EQ(ipt_tcal_fcr(NULL, &tcal), -pte_internal);
	CHECK_EQ(ipt_tcal_fcr(&out, NULL), -pte_internal);
	CHECK_EQ(out, 7);
	CHECK_EQ(ipt_tcal_set_fcr(NULL, fcr), -pte_internal);
	CHECK_EQ(ipt_tcal_update_tsc(NULL, &tsc, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_tsc(&tcal, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_header_tsc(NULL, &tsc, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_header_tsc(&tcal, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_cbr(NULL, &cbr, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_cbr(&tcal, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_header_cbr(NULL, &cbr, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_header_cbr(&tcal, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_header_cbr(&tcal, &cbr, NULL), -pte_internal);
	CHECK_EQ(ipt_tcal_update_mtc(NULL, &mtc, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_mtc(&tcal, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_mtc(&tcal, &mtc, NULL), -pte_internal);
	CHECK_EQ(ipt_tcal_update_cyc(NULL, &cyc, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_cyc(&tcal, NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_psb(NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_psb(&tcal, NULL), -pte_internal);
	CHECK_EQ(ipt_tcal_update_ovf(NULL, &config), -pte_internal);
	CHECK_EQ(ipt_tcal_update_ovf(&tcal, NULL), -pte_internal);
	CHECK(!memcmp(&tcal, &tcal0, sizeof(tcal)));

	CHECK_EQ(ipt_tcal_update_tma(NULL, NULL, NULL), 0);
	CHECK_EQ(ipt_tcal_header_tsc(&tcal, &tsc, NULL), 0);
	CHECK_EQ(ipt_tcal_update_cyc(&tcal, &cyc, NULL), 0);

	return check_done();
}

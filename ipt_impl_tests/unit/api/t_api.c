/* The foundation: errors, version, configuration helpers. */
#include "ipt.h"
#include "check.h"

#include <string.h>

int main(void)
{
	struct pt_version v = pt_library_version();
	struct pt_config config;
	struct pt_packet_mode_exec exec;
	int mode;

	CHECK_EQ(v.major, 2);
	CHECK_EQ(v.minor, 3);

	CHECK(strcmp(pt_errstr(pte_ok), "OK") == 0);
	CHECK(strcmp(pt_errstr(pte_bad_cpu), "unknown cpu") == 0);
	CHECK(strcmp(pt_errstr(pte_eos), "reached end of trace stream") == 0);
	CHECK(strcmp(pt_errstr((enum pt_error_code) 999), "internal error.") == 0);
	CHECK_EQ(pt_errcode(-pte_nomap), pte_nomap);
	CHECK_EQ(pt_errcode(7), pte_ok);
	CHECK_EQ(pte_bad_cpu, 27);

	memset(&config, 0xcc, sizeof(config));
	pt_config_init(&config);
	CHECK_EQ(config.size, sizeof(config));
	CHECK(config.begin == NULL && config.mtc_freq == 0);

	for (mode = ptem_16bit; mode <= ptem_64bit; ++mode) {
		exec = pt_set_exec_mode((enum pt_exec_mode) mode);
		CHECK_EQ(pt_get_exec_mode(&exec), mode);
	}
	exec = pt_set_exec_mode(ptem_unknown);
	CHECK_EQ(pt_get_exec_mode(&exec), ptem_unknown);

	CHECK_EQ(pt_ptw_size(0), 4);
	CHECK_EQ(pt_ptw_size(1), 8);
	CHECK_EQ(pt_ptw_size(2), -pte_bad_packet);

	return check_done();
}

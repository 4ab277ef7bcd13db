/* pt_errstr: each error code's message is libipt 2.3's, word for word
 * (src/pt_error.c), and a value outside the enum gets libipt's fallback.
 * ipt_pte_need_more, ipt.h's own code, has a message of its own. */
#include "ipt.h"
#include "check.h"

#include <string.h>

static const struct {
	enum pt_error_code code;
	const char *text;
} libipt[] = {
	{ pte_ok, "OK" },
	{ pte_internal, "internal error" },
	{ pte_invalid, "invalid argument" },
	{ pte_nosync, "decoder out of sync" },
	{ pte_bad_opc, "unknown opcode" },
	{ pte_bad_packet, "unknown packet" },
	{ pte_bad_context, "unexpected packet context" },
	{ pte_eos, "reached end of trace stream" },
	{ pte_bad_query, "trace stream does not match query" },
	{ pte_nomem, "out of memory" },
	{ pte_bad_config, "bad configuration" },
	{ pte_noip, "no ip" },
	{ pte_ip_suppressed, "ip has been suppressed" },
	{ pte_nomap, "no memory mapped at this address" },
	{ pte_bad_insn, "unknown instruction" },
	{ pte_no_time, "no timing information" },
	{ pte_no_cbr, "no core:bus ratio" },
	{ pte_bad_image, "bad image" },
	{ pte_bad_lock, "locking error" },
	{ pte_not_supported, "not supported" },
	{ pte_retstack_empty, "compressed return without call" },
	{ pte_bad_retcomp, "bad compressed return" },
	{ pte_bad_status_update, "bad status update" },
	{ pte_no_enable, "expected tracing enabled event" },
	{ pte_event_ignored, "event ignored" },
	{ pte_overflow, "overflow" },
	{ pte_bad_file, "bad file" },
	{ pte_bad_cpu, "unknown cpu" },
};

int main(void)
{
	size_t i;

	/* libipt's codes are 0 to 27, in this order. */
	for (i = 0; i < sizeof(libipt) / sizeof(libipt[0]); ++i) {
		CHECK_EQ(libipt[i].code, i);
		if (!CHECK(strcmp(pt_errstr(libipt[i].code), libipt[i].text) == 0))
			printf("     %d: \"%s\"\n", (int) libipt[i].code,
			       pt_errstr(libipt[i].code));
	}

	/* ipt.h's one code of its own comes after libipt's. */
	CHECK_EQ(ipt_pte_need_more, pte_bad_cpu + 1);
	CHECK(strcmp(pt_errstr(ipt_pte_need_more),
		     "end of trace for now: more may come") == 0);

	/* Not a code: libipt's fallback, with its full stop. */
	CHECK(strcmp(pt_errstr((enum pt_error_code) (ipt_pte_need_more + 1)),
		     "internal error.") == 0);
	CHECK(strcmp(pt_errstr((enum pt_error_code) -1), "internal error.") == 0);

	/* pt_errcode turns a negative return into its code. */
	CHECK_EQ(pt_errcode(-pte_bad_retcomp), pte_bad_retcomp);
	CHECK_EQ(pt_errcode(-ipt_pte_need_more), ipt_pte_need_more);
	CHECK_EQ(pt_errcode(0), pte_ok);
	CHECK_EQ(pt_errcode(3), pte_ok);

	return check_done();
}

/* Query decoder harness: the questions come from the input.
 *
 * Input: the common header (fuzz.h), a script length (u8) and that many
 * script bytes, then the trace.  Each script byte picks the question to
 * try first (bits 0-1: conditional branch, indirect branch, event, or
 * whatever is pending) and side questions asked before it (bit 2: time,
 * bit 3: core:bus ratio, bit 4: offsets).  A question the trace does not
 * match (-pte_bad_query) is followed by the others; other errors
 * resynchronize.  Answers must come in a number of steps linear in the
 * trace. */
#include "fuzz.h"

enum { q_cond, q_indirect, q_event, q_auto };

static int qry_ask(struct pt_query_decoder *decoder, int question,
		   struct fz_event *ev)
{
	uint64_t ip;
	int taken;

	switch (question) {
	case q_cond:
		return pt_qry_cond_branch(decoder, &taken);
	case q_indirect:
		return pt_qry_indirect_branch(decoder, &ip);
	default:
		return pt_qry_event(decoder, ev->event, ev->size);
	}
}

/* Ask questions until an error that is not a mismatch. */
static int qry_run(struct pt_query_decoder *decoder, int status,
		   const uint8_t *script, size_t nscript, struct fz_event *ev,
		   uint64_t limit, size_t *budget)
{
	size_t step;

	for (step = 0;; ++step) {
		uint8_t b = nscript ? script[step % nscript] : 3;
		int first, i;

		if (!(*budget)--)
			fz_fail("query decoder does not stop", 0, 0);
		{
			uint64_t offset;

			if (pt_qry_get_offset(decoder, &offset) >= 0 &&
			    offset >= limit)
				return -pte_eos;
		}

		if (b & 4) {
			uint64_t tsc;
			uint32_t mtc, cyc;

			(void) pt_qry_time(decoder, &tsc, &mtc, &cyc);
		}
		if (b & 8) {
			uint32_t cbr;

			(void) pt_qry_core_bus_ratio(decoder, &cbr);
		}
		if (b & 16) {
			uint64_t offset;

			(void) pt_qry_get_offset(decoder, &offset);
			(void) pt_qry_get_sync_offset(decoder, &offset);
		}
		{
			int guest = ipt_qry_in_guest(decoder);

			if (guest != 0 && guest != 1 && guest != -pte_nosync)
				fz_fail("in_guest", guest, 0);
		}

		first = b & 3;
		if (first == q_auto)
			first = (status & pts_event_pending) ? q_event : q_cond;
		for (i = 0; i < 3; ++i) {
			status = qry_ask(decoder, (first + i) % 3, ev);
			if (status != -pte_bad_query)
				break;
		}
		if (status < 0)
			return status;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_query_decoder *decoder;
	struct pt_config config;
	struct fz_header h;
	struct fz_event ev;
	struct fz in;
	uint8_t *trace, *script;
	size_t tsize, nscript, budget;
	uint64_t ip, sync, limit;
	int status;

	fz_init(&in, data, size);
	fz_header(&in, &h);
	script = fz_copy(&in, fz_u8(&in), &nscript);
	trace = fz_copy(&in, in.n, &tsize);
	fz_config(&h, &config, trace, tsize);

	decoder = ipt_qry_alloc_decoder_with(&config, fz_allocator());
	if (!decoder) {
		free(script);
		free(trace);
		return 0;
	}
	if (pt_qry_get_config(decoder) == NULL)
		fz_fail("no config", 0, 0);
	fz_event_init(&ev, &h);
	budget = fz_budget(tsize, 64);

	switch (h.flags & fz_sync_mask) {
	case fz_sync_backward:
		for (limit = UINT64_MAX;; limit = sync) {
			status = pt_qry_sync_backward(decoder, &ip);
			if (status < 0)
				break;
			if (pt_qry_get_sync_offset(decoder, &sync) < 0)
				fz_fail("no sync offset", 0, 0);
			/* Each step goes back: a PSB whose start reads on
			 * into the next one is skipped. */
			if (sync >= limit)
				fz_fail("sync_backward went forward", (long long) sync,
					(long long) limit);
			(void) qry_run(decoder, status, script, nscript, &ev,
				       limit, &budget);
			if (pt_qry_sync_set(decoder, &ip, sync) < 0)
				fz_fail("cannot go back to the sync point",
					(long long) sync, 0);
		}
		break;

	case fz_sync_set:
	case fz_sync_mask:
		status = pt_qry_sync_set(decoder, &ip, tsize ? h.sync_offset %
					 tsize : 0);
		if (status >= 0 && qry_run(decoder, status, script, nscript,
					   &ev, UINT64_MAX, &budget) == -pte_eos)
			break;
		/* fall through - resynchronize on the next PSB */
	case fz_sync_forward:
		for (;;) {
			status = pt_qry_sync_forward(decoder, &ip);
			if (status < 0)
				break;
			if (qry_run(decoder, status, script, nscript, &ev,
				    UINT64_MAX, &budget) == -pte_eos)
				break;
		}
		break;
	}

	/* The same decoder on the second half of the trace. */
	if (ipt_qry_set_buffer(decoder, trace + tsize / 2, trace + tsize) < 0)
		fz_fail("cannot set the buffer", (long long) tsize, 0);
	for (;;) {
		status = pt_qry_sync_forward(decoder, &ip);
		if (status < 0 || qry_run(decoder, status, script, nscript,
					  &ev, UINT64_MAX, &budget) == -pte_eos)
			break;
	}

	fz_event_fini(&ev);
	pt_qry_free_decoder(decoder);
	free(script);
	free(trace);
	return 0;
}

/* Event decoder harness: every sync mode, every event until the end.
 *
 * Input: the common header (fuzz.h), then the trace.  The event buffer is
 * exactly as large as the size the input claims for it. */
#include "fuzz.h"

static int evt_run(struct pt_event_decoder *decoder, struct fz_event *ev,
		   uint64_t limit, size_t *budget)
{
	uint64_t offset;
	int status;

	for (;;) {
		if (!(*budget)--)
			fz_fail("event decoder does not stop", 0, 0);
		if (pt_evt_get_offset(decoder, &offset) >= 0 &&
		    offset >= limit)
			return -pte_eos;
		status = pt_evt_next(decoder, ev->event, ev->size);
		if (status < 0)
			return status;
		if (pt_evt_get_offset(decoder, &offset) < 0 ||
		    pt_evt_get_sync_offset(decoder, &offset) < 0)
			fz_fail("no offset while in sync", status, 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_event_decoder *decoder;
	struct pt_config config;
	struct fz_header h;
	struct fz_event ev;
	struct fz in;
	uint8_t *trace;
	size_t tsize, budget;
	uint64_t sync, limit;
	int errcode;

	fz_init(&in, data, size);
	fz_header(&in, &h);
	trace = fz_copy(&in, in.n, &tsize);
	fz_config(&h, &config, trace, tsize);

	decoder = ipt_evt_alloc_decoder_with(&config, fz_allocator());
	if (!decoder) {
		free(trace);
		return 0;
	}
	if (pt_evt_get_config(decoder) == NULL)
		fz_fail("no config", 0, 0);
	fz_event_init(&ev, &h);
	budget = fz_budget(tsize, 16);

	switch (h.flags & fz_sync_mask) {
	case fz_sync_backward:
		for (limit = UINT64_MAX;; limit = sync) {
			if (pt_evt_sync_backward(decoder) < 0)
				break;
			if (pt_evt_get_sync_offset(decoder, &sync) < 0)
				fz_fail("no sync offset", 0, 0);
			/* Each step goes back: a PSB whose start reads on
			 * into the next one is skipped. */
			if (sync >= limit)
				fz_fail("sync_backward went forward", (long long) sync,
					(long long) limit);
			(void) evt_run(decoder, &ev, limit, &budget);
			if (pt_evt_sync_set(decoder, sync) < 0)
				fz_fail("cannot go back to the sync point",
					(long long) sync, 0);
		}
		break;

	case fz_sync_set:
	case fz_sync_mask:
		/* Any offset: the decoder must cope with landing mid-packet. */
		errcode = pt_evt_sync_set(decoder, tsize ? h.sync_offset %
					  tsize : 0);
		if (errcode >= 0 && evt_run(decoder, &ev, UINT64_MAX, &budget) == -pte_eos)
			break;
		/* fall through - resynchronize on the next PSB */
	case fz_sync_forward:
		while (pt_evt_sync_forward(decoder) >= 0) {
			if (evt_run(decoder, &ev, UINT64_MAX, &budget) == -pte_eos)
				break;
		}
		break;
	}

	/* The same decoder on the second half of the trace. */
	if (ipt_evt_set_buffer(decoder, trace + tsize / 2, trace + tsize) < 0)
		fz_fail("cannot set the buffer", (long long) tsize, 0);
	while (pt_evt_sync_forward(decoder) >= 0)
		if (evt_run(decoder, &ev, UINT64_MAX, &budget) == -pte_eos)
			break;

	/* Streaming: the first third with more to come, then the rest. */
	if (ipt_evt_set_buffer(decoder, trace, trace + tsize / 3) < 0 ||
	    ipt_evt_extend(decoder, trace + tsize / 3, 1) < 0)
		fz_fail("cannot stream", (long long) tsize, 0);
	while (pt_evt_sync_forward(decoder) >= 0) {
		errcode = evt_run(decoder, &ev, UINT64_MAX, &budget);
		if (errcode == -ipt_pte_need_more) {
			if (ipt_evt_extend(decoder, trace + tsize, 0) < 0)
				fz_fail("cannot extend", (long long) tsize, 0);
			errcode = evt_run(decoder, &ev, UINT64_MAX, &budget);
		}
		if (errcode == -pte_eos)
			break;
	}

	fz_event_fini(&ev);
	pt_evt_free_decoder(decoder);
	free(trace);
	return 0;
}

/* Packet decoder harness: every sync mode, every packet until the end.
 *
 * Input: the common header (fuzz.h), then the trace.  Checks that each
 * packet's size is what pt_pkt_next returned and what the offset moved by
 * (give or take an erratum workaround), and that decoding stops in a
 * number of steps linear in the trace. */
#include "fuzz.h"

/* Decode packets from the current position until an error or @limit. */
static int pkt_run(struct pt_packet_decoder *decoder, uint64_t limit,
		   size_t *budget)
{
	struct pt_packet packet;
	uint64_t before, after, sync;
	int size;

	for (;;) {
		if (!(*budget)--)
			fz_fail("packet decoder does not stop", 0, 0);
		if (pt_pkt_get_offset(decoder, &before) < 0)
			fz_fail("no offset after sync", 0, 0);
		if (before >= limit)
			return -pte_eos;
		if (pt_pkt_get_sync_offset(decoder, &sync) < 0)
			fz_fail("no sync offset after sync", 0, 0);
		size = pt_pkt_next(decoder, &packet, sizeof(packet));
		if (size < 0)
			return size;
		if (size == 0 || size != packet.size)
			fz_fail("packet size", size, packet.size);
		/* At least: the SKD007 workaround drops a CYC before the
		 * OVF it reports. */
		if (pt_pkt_get_offset(decoder, &after) < 0 ||
		    after < before + (uint64_t) size ||
		    after > before + (uint64_t) size + 2)
			fz_fail("offset did not move by the packet size",
				(long long) before, (long long) after);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_packet_decoder *decoder;
	struct pt_config config;
	struct fz_header h;
	struct fz in;
	uint8_t *trace;
	size_t tsize, budget;
	uint64_t sync, limit;
	int errcode;

	fz_init(&in, data, size);
	fz_header(&in, &h);
	trace = fz_copy(&in, in.n, &tsize);
	fz_config(&h, &config, trace, tsize);

	decoder = ipt_pkt_alloc_decoder_with(&config, fz_allocator());
	if (!decoder) {
		free(trace);
		return 0;
	}
	if (pt_pkt_get_config(decoder) == NULL)
		fz_fail("no config", 0, 0);
	budget = fz_budget(tsize, 2);

	switch (h.flags & fz_sync_mask) {
	case fz_sync_backward:
		/* Back to front: each sync point decoded forward up to the
		 * one decoded before, then the one before it. */
		for (limit = UINT64_MAX;; limit = sync) {
			if (pt_pkt_sync_backward(decoder) < 0)
				break;
			if (pt_pkt_get_sync_offset(decoder, &sync) < 0)
				fz_fail("no sync offset", 0, 0);
			(void) pkt_run(decoder, limit, &budget);
			if (pt_pkt_sync_set(decoder, sync) < 0)
				fz_fail("cannot go back to the sync point",
					(long long) sync, 0);
		}
		break;

	case fz_sync_set:
	case fz_sync_mask:
		errcode = pt_pkt_sync_set(decoder, tsize ? h.sync_offset %
					  (tsize + 1) : 0);
		if (errcode < 0)
			fz_fail("sync_set inside the trace", errcode, 0);
		if (pkt_run(decoder, UINT64_MAX, &budget) == -pte_eos)
			break;
		/* fall through - resynchronize on the next PSB */
	case fz_sync_forward:
		while (pt_pkt_sync_forward(decoder) >= 0) {
			if (pkt_run(decoder, UINT64_MAX, &budget) == -pte_eos)
				break;
		}
		break;
	}

	/* The same decoder on the second half of the trace. */
	if (ipt_pkt_set_buffer(decoder, trace + tsize / 2, trace + tsize) < 0)
		fz_fail("cannot set the buffer", (long long) tsize, 0);
	while (pt_pkt_sync_forward(decoder) >= 0)
		if (pkt_run(decoder, UINT64_MAX, &budget) == -pte_eos)
			break;

	/* Streaming: the first third with more to come, then the rest. */
	if (ipt_pkt_set_buffer(decoder, trace, trace + tsize / 3) < 0 ||
	    ipt_pkt_extend(decoder, trace + tsize / 3, 1) < 0)
		fz_fail("cannot stream", (long long) tsize, 0);
	while (pt_pkt_sync_forward(decoder) >= 0) {
		errcode = pkt_run(decoder, UINT64_MAX, &budget);
		if (errcode == -ipt_pte_need_more) {
			if (ipt_pkt_extend(decoder, trace + tsize, 0) < 0)
				fz_fail("cannot extend", (long long) tsize, 0);
			errcode = pkt_run(decoder, UINT64_MAX, &budget);
		}
		if (errcode == -pte_eos)
			break;
	}

	pt_pkt_free_decoder(decoder);
	free(trace);
	return 0;
}

/* Packet decoder harness: every sync mode, every packet until the end.
 *
 * Input: the common header (fuzz.h), then the trace.  Checks that each
 * packet's size is what pt_pkt_next returned and what the offset moved by
 * (give or take an erratum workaround), and that decoding stops in a
 * number of steps linear in the trace.  A second decoder reads the same
 * packets through ipt_pkt_next_batch, in batches of changing size: it must
 * give the same packets, offsets and errors as pt_pkt_next one by one.
 * If the header's CPUID 0x15 EAX is odd, that decoder reads the trace as
 * a wrapped ring's two pieces (ipt_pkt_set_ring), split where its EBX
 * says (modulo the trace size plus one). */
#include "fuzz.h"

#include <string.h>

/* ipt_pkt_next_batch beside pt_pkt_next: @twin decodes from the same
 * position in batches, @buf holds the last batch, @have of its packets
 * not yet compared (from @next on). */
struct pkt_twin {
	struct pt_packet_decoder *decoder;
	struct pt_packet buf[64];
	int have, next, err;
	unsigned int round;
};

/* Start the twin where @decoder is, with the same sync offset. */
static void twin_start(struct pkt_twin *t,
		       const struct pt_packet_decoder *decoder)
{
	uint64_t pos = 0, sync = 0;

	t->have = 0;
	t->next = 0;
	t->err = 0;
	if (!t->decoder)
		return;
	if (pt_pkt_get_offset(decoder, &pos) < 0 ||
	    pt_pkt_get_sync_offset(decoder, &sync) < 0)
		fz_fail("no offset after sync", 0, 0);
	/* sync_set makes the position the sync offset: start there, then
	 * move on to the position packet by packet (the twin only ever
	 * reads in batches). */
	if (pt_pkt_sync_set(t->decoder, sync) < 0)
		fz_fail("twin: cannot set the sync offset", (long long) sync,
			0);
	while (sync < pos) {
		struct pt_packet packet;
		int size = ipt_pkt_next_batch(t->decoder, &packet, 1);

		if (size != 1)
			fz_fail("twin: cannot reach the position",
				(long long) sync, (long long) pos);
		if (pt_pkt_get_offset(t->decoder, &sync) < 0)
			fz_fail("twin: no offset", 0, 0);
	}
	if (sync != pos)
		fz_fail("twin: went past the position", (long long) sync,
			(long long) pos);
}

/* Whether two packets are the same, byte for byte; but an unknown
 * packet's pointer to its bytes, which in a ring may point into a copy,
 * need only point to the same bytes. */
static int same_packet(const struct pt_packet *a, const struct pt_packet *b)
{
	struct pt_packet x = *a, y = *b;

	if (x.type == ppt_unknown && y.type == ppt_unknown &&
	    x.payload.unknown.packet && y.payload.unknown.packet) {
		if (x.size != y.size ||
		    memcmp(x.payload.unknown.packet, y.payload.unknown.packet,
			   x.size))
			return 0;
		x.payload.unknown.packet = NULL;
		y.payload.unknown.packet = NULL;
	}
	return !memcmp(&x, &y, sizeof(x));
}

/* The twin's next packet, or its error, against what pt_pkt_next gave:
 * @size and @packet, and @decoder's offsets after it. */
static void twin_check(struct pkt_twin *t,
		       const struct pt_packet_decoder *decoder, int size,
		       const struct pt_packet *packet)
{
	static const int sizes[] = { 1, 2, 3, 5, 8, 13, 64 };
	uint64_t a = 0, b = 0;
	int n;

	if (!t->decoder || t->err)
		return;
	if (t->next == t->have) {
		n = sizes[t->round++ % (sizeof(sizes) / sizeof(sizes[0]))];
		memset(t->buf, 0, sizeof(t->buf));
		t->next = 0;
		t->have = ipt_pkt_next_batch(t->decoder, t->buf, (size_t) n);
		if (t->have == 0 || t->have > n)
			fz_fail("batch count", t->have, n);
		if (t->have < 0) {
			if (t->have != size)
				fz_fail("batch error differs", t->have, size);
			t->err = 1;
			t->have = 0;
			return;
		}
	}
	if (size < 0)
		fz_fail("batch decoded a packet pt_pkt_next did not", size,
			t->buf[t->next].type);
	if (!same_packet(&t->buf[t->next], packet))
		fz_fail("batch packet differs", t->buf[t->next].type,
			packet->type);
	t->next += 1;
	/* The twin is as far as the last packet of its batch. */
	if (t->next == t->have) {
		if (pt_pkt_get_offset(decoder, &a) < 0 ||
		    pt_pkt_get_offset(t->decoder, &b) < 0 || a != b)
			fz_fail("batch offset differs", (long long) a,
				(long long) b);
		if (pt_pkt_get_sync_offset(decoder, &a) < 0 ||
		    pt_pkt_get_sync_offset(t->decoder, &b) < 0 || a != b)
			fz_fail("batch sync offset differs", (long long) a,
				(long long) b);
	}
}

/* Decode packets from the current position until an error or @limit. */
static int pkt_run(struct pt_packet_decoder *decoder, uint64_t limit,
		   size_t *budget, struct pkt_twin *twin)
{
	struct pt_packet packet;
	uint64_t before, after, sync;
	int size;

	twin_start(twin, decoder);
	for (;;) {
		if (!(*budget)--)
			fz_fail("packet decoder does not stop", 0, 0);
		if (pt_pkt_get_offset(decoder, &before) < 0)
			fz_fail("no offset after sync", 0, 0);
		if (before >= limit)
			return -pte_eos;
		if (pt_pkt_get_sync_offset(decoder, &sync) < 0)
			fz_fail("no sync offset after sync", 0, 0);
		memset(&packet, 0, sizeof(packet));
		size = pt_pkt_next(decoder, &packet, sizeof(packet));
		twin_check(twin, decoder, size, &packet);
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
	struct pkt_twin twin, twin_off;
	struct pt_config config;
	struct fz_header h;
	struct fz in;
	uint8_t *trace, *newer;
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
	memset(&twin, 0, sizeof(twin));
	twin.decoder = ipt_pkt_alloc_decoder_with(&config, fz_allocator());
	newer = NULL;
	if (twin.decoder && (h.cpuid_0x15_eax & 1)) {
		size_t split = h.cpuid_0x15_ebx % (tsize + 1);

		newer = (uint8_t *) malloc(tsize - split + 1);
		if (!newer)
			fz_fail("out of memory", 0, 0);
		memcpy(newer, trace + split, tsize - split);
		if (ipt_pkt_set_ring(twin.decoder, trace, trace + split, newer,
				     newer + (tsize - split)) < 0)
			fz_fail("cannot set the ring", (long long) split, 0);
	}
	if (ipt_pkt_next_batch(twin.decoder, NULL, 1) != -pte_invalid ||
	    ipt_pkt_next_batch(NULL, twin.buf, 1) != -pte_invalid ||
	    ipt_pkt_next_batch(decoder, twin.buf, 0) != -pte_invalid)
		fz_fail("batch takes bad arguments", 0, 0);

	switch (h.flags & fz_sync_mask) {
	case fz_sync_backward:
		/* Back to front: each sync point decoded forward up to the
		 * one decoded before, then the one before it. */
		for (limit = UINT64_MAX;; limit = sync) {
			if (pt_pkt_sync_backward(decoder) < 0)
				break;
			if (pt_pkt_get_sync_offset(decoder, &sync) < 0)
				fz_fail("no sync offset", 0, 0);
			(void) pkt_run(decoder, limit, &budget, &twin);
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
		if (pkt_run(decoder, UINT64_MAX, &budget, &twin) ==
		    -pte_eos)
			break;
		/* fall through - resynchronize on the next PSB */
	case fz_sync_forward:
		while (pt_pkt_sync_forward(decoder) >= 0) {
			if (pkt_run(decoder, UINT64_MAX, &budget, &twin) ==
		    -pte_eos)
				break;
		}
		break;
	}

	/* The same decoder on the second half of the trace (no twin). */
	memset(&twin_off, 0, sizeof(twin_off));
	if (ipt_pkt_set_buffer(decoder, trace + tsize / 2, trace + tsize) < 0)
		fz_fail("cannot set the buffer", (long long) tsize, 0);
	while (pt_pkt_sync_forward(decoder) >= 0)
		if (pkt_run(decoder, UINT64_MAX, &budget, &twin_off) == -pte_eos)
			break;

	/* Streaming: the first third with more to come, then the rest. */
	if (ipt_pkt_set_buffer(decoder, trace, trace + tsize / 3) < 0 ||
	    ipt_pkt_extend(decoder, trace + tsize / 3, 1) < 0)
		fz_fail("cannot stream", (long long) tsize, 0);
	while (pt_pkt_sync_forward(decoder) >= 0) {
		errcode = pkt_run(decoder, UINT64_MAX, &budget, &twin_off);
		if (errcode == -ipt_pte_need_more) {
			if (ipt_pkt_extend(decoder, trace + tsize, 0) < 0)
				fz_fail("cannot extend", (long long) tsize, 0);
			errcode = pkt_run(decoder, UINT64_MAX, &budget, &twin_off);
		}
		if (errcode == -pte_eos)
			break;
	}

	pt_pkt_free_decoder(twin.decoder);
	pt_pkt_free_decoder(decoder);
	free(newer);
	free(trace);
	return 0;
}

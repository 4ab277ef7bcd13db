/* Ring harness: a trace given as a wrapped ring buffer's two pieces
 * decodes as the trace in one buffer.
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The trace is
 * copied into a ring of its size as a processor leaves it after wrapping
 * around after N bytes (N from the header's sync offset, modulo the size
 * plus one): the newer part at the ring's start, the older part at its
 * end.  The packet, event, query, block, instruction and coverage
 * decoders read it as two pieces (ipt_*_set_ring), the newer one fed in
 * pieces (ipt_*_extend) to all but the coverage decoder if the header
 * says so, and must report what they
 * report on the trace in one buffer: packets, events, branches, blocks,
 * instructions, errors, offsets, edges and bitmap. */
#include "fuzz.h"
#include "../unit/hv/stream_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const what[] = {
		"pkt output differs in a ring", "evt output differs in a ring",
		"qry output differs in a ring", "blk output differs in a ring",
		"insn output differs in a ring", "cov output differs in a ring"
	};
	struct fz_twice in;
	struct gmem code;
	uint8_t *ring;
	size_t split, max;
	int layer;

	fz_twice_read(&in, data, size);
	memset(&code, 0, sizeof(code));
	gmem_add(&code, in.img.base, in.img.code, in.img.size);
	split = in.h.sync_offset % (in.tsize + 1);
	max = (in.h.cpuid_0x15_ebx & 1) ? 1 + in.h.cpuid_0x15_ebx % 64 : 0;
	ring = (uint8_t *) malloc(in.tsize ? in.tsize : 1);
	if (!ring)
		fz_fail("out of memory", 0, 0);
	for (layer = 0; layer < 6; ++layer) {
		struct hv_out whole, parts;
		struct hv_feed f;
		long at;

		hv_feed_init(&f, &in.config, 0, 0);
		hv_decode_mem(&whole, &in.config, &code,
			      (enum hv_layer) layer, &f, in.limit,
			      fz_allocator());
		/* The newer piece in pieces but for the coverage decoder,
		 * whose streaming fuzz_stream.c checks. */
		hv_feed_ring(&f, &in.config, split, ring,
			     layer != HV_COV ? max : 0,
			     in.h.cpuid_0x15_eax);
		hv_decode_mem(&parts, &in.config, &code,
			      (enum hv_layer) layer, &f, in.limit,
			      fz_allocator());
		at = hv_out_diff(&whole, &parts);
		if (at >= 0 || whole.n != parts.n)
			fz_fail(what[layer], at, (long long) split);
		free(whole.h);
		free(parts.h);
	}
	free(ring);
	fz_twice_free(&in);
	return 0;
}

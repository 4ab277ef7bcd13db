/* Streaming harness: trace that arrives in pieces decodes as the whole.
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The trace is
 * decoded with the packet, the event, the query, the block, the
 * instruction and the coverage decoder, each once whole and once fed in
 * pieces (ipt_*_extend after each -ipt_pte_need_more) of 1 to n bytes, n
 * and the sizes from the header.  The two decodes must report the same
 * packets, branches, blocks, instructions, events, edges, bitmap and
 * errors. */
#include "fuzz.h"
#include "../unit/hv/stream_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const what[] = {
		"pkt output differs in pieces",
		"evt output differs in pieces",
		"qry output differs in pieces",
		"blk output differs in pieces",
		"insn output differs in pieces",
		"cov output differs in pieces"
	};
	static const enum hv_layer layers[] = { HV_PKT, HV_EVT, HV_QRY,
						HV_BLK, HV_INSN, HV_COV };
	struct fz_twice in;
	struct gmem code;
	int layer;

	fz_twice_read(&in, data, size);
	memset(&code, 0, sizeof(code));
	gmem_add(&code, in.img.base, in.img.code, in.img.size);
	for (layer = 0; layer < 6; ++layer) {
		struct hv_out whole, parts;
		struct hv_feed f;
		long at;

		hv_feed_init(&f, &in.config, 0, 0);
		hv_decode_mem(&whole, &in.config, &code, layers[layer], &f,
			      in.limit, fz_allocator());
		hv_feed_init(&f, &in.config, 1 + in.h.sync_offset % 64,
			     in.h.cpuid_0x15_eax);
		hv_decode_mem(&parts, &in.config, &code, layers[layer], &f,
			      in.limit, fz_allocator());
		at = hv_out_diff(&whole, &parts);
		if (at >= 0)
			fz_fail(what[layer], at, (long long) f.moved);
		free(whole.h);
		free(parts.h);
	}

	fz_twice_free(&in);
	return 0;
}

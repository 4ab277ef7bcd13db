/* Streaming harness: trace that arrives in pieces decodes as the whole.
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The trace is
 * decoded with the query, the block and the instruction decoder, each
 * once whole and once fed in pieces (ipt_*_extend after each
 * -ipt_pte_need_more) of 1 to n bytes, n and the sizes from the header.
 * The two decodes must report the same branches, blocks, instructions,
 * events and errors. */
#include "fuzz.h"
#include "../unit/hv/stream_util.h"

static void decode(struct hv_out *o, const struct pt_config *config,
		   struct gmem *m, int layer, struct hv_feed *f,
		   uint64_t limit)
{
	struct pt_image *image;

	memset(o, 0, sizeof(*o));
	o->limit = limit;
	if (!layer) {
		hv_decode_qry(o, config, f);
		return;
	}
	image = ipt_image_alloc_with("stream", fz_allocator());
	if (!image)
		return;
	if (pt_image_set_callback(image, gmem_read, m) < 0)
		fz_fail("cannot set callback", 0, 0);
	hv_decode_flow(o, config, image, layer == 2, f);
	pt_image_free(image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_config config;
	struct fz_header h;
	struct fz_image img;
	struct gmem mem;
	struct fz in;
	uint8_t *trace;
	size_t tsize;
	int layer;

	fz_init(&in, data, size);
	trace = fz_twice_input(&in, &h, &img, &config, &tsize);

	memset(&mem, 0, sizeof(mem));
	gmem_add(&mem, img.base, img.code, img.size);
	for (layer = 0; layer < 3; ++layer) {
		struct hv_out whole, parts;
		struct hv_feed f;
		uint64_t limit = fz_twice_limit(tsize);
		long at;

		hv_feed_init(&f, &config, 0, 0);
		decode(&whole, &config, &mem, layer, &f, limit);
		hv_feed_init(&f, &config, 1 + h.sync_offset % 64,
			     h.cpuid_0x15_eax);
		decode(&parts, &config, &mem, layer, &f, limit);
		at = hv_out_diff(&whole, &parts);
		if (at >= 0)
			fz_fail(layer == 0 ? "qry output differs in pieces" :
				layer == 1 ? "blk output differs in pieces" :
				"insn output differs in pieces", at,
				(long long) f.moved);
		free(whole.h);
		free(parts.h);
	}

	free(img.code);
	free(trace);
	return 0;
}

/* Fault/resume harness: a decode that finds pages missing and gets them one
 * at a time gives what a decode with all code present gives.
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The trace is
 * decoded with the block decoder and then with the instruction decoder,
 * each twice over the same code: once all present, once with the pages a
 * hash of the header picks missing at first.  Whenever a decoder stops at a
 * missing page (ipt_*_get_fault), the page is made readable (and, every
 * other time, dropped from the image's cache with ipt_image_invalidate)
 * and the same call is made again; sync and event calls included.  The
 * two decodes must report the same blocks (joined where a fault or a full
 * block cut them), instructions, events and errors. */
#include "fuzz.h"
#include "../unit/hv/fault_util.h"

static void decode(struct hv_out *o, const struct pt_config *config,
		   struct gmem *m, int insn, uint64_t limit)
{
	struct pt_image *image = ipt_image_alloc_with("fault", fz_allocator());

	memset(o, 0, sizeof(*o));
	o->limit = limit;
	if (!image)
		return;
	m->image = image;
	m->nreleased = 0;
	m->faults = 0;
	if (pt_image_set_callback(image, gmem_read, m) < 0)
		fz_fail("cannot set callback", 0, 0);
	if (insn)
		hv_run_insn(o, config, image, m);
	else
		hv_run_blk(o, config, image, m);
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
	int insn;

	fz_init(&in, data, size);
	fz_header(&in, &h);
	/* Both decodes must see the same memory and the same allocations. */
	fz_alloc_fail_at(0);
	trace = fz_image_trace(&in, &h, &img, &config, &tsize);

	memset(&mem, 0, sizeof(mem));
	gmem_add(&mem, img.base, img.code, img.size);
	for (insn = 0; insn < 2; ++insn) {
		struct hv_out whole, parts;
		/* Code without trace runs forever, and slowly while it
		 * walks towards an event it never reaches: a few
		 * instructions per trace byte are plenty. */
		uint64_t limit = 2048 + (uint64_t) tsize * 4;
		long at;

		if (limit > (1u << 16))
			limit = 1u << 16;
		mem.pct = 0;
		decode(&whole, &config, &mem, insn, limit);
		mem.pct = 25 + h.sync_offset % 76;
		mem.seed = h.cpuid_0x15_eax ^ ((uint64_t) h.sync_offset << 32);
		decode(&parts, &config, &mem, insn, limit);
		at = hv_out_diff(&whole, &parts);
		/* FAULT-BLK (KNOWN): the block decoder's blocks may differ
		 * after a pause; the instruction decoder's output is checked
		 * as it is. */
		if (at >= 0 && FZ_LENIENT && !insn)
			at = -1;
		if (at >= 0)
			fz_fail(insn ? "insn output differs with pages missing" :
				"blk output differs with pages missing", at,
				(long long) mem.faults);
		free(whole.h);
		free(parts.h);
	}

	free(mem.released);
	free(img.code);
	free(trace);
	return 0;
}

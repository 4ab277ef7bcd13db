/* Fault/resume harness: a decode that finds pages missing and gets them one
 * at a time gives what a decode with all code present gives.
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The trace is
 * decoded with the block decoder and then with the instruction decoder,
 * each twice over the same code: once all present, once with the pages a
 * hash of the header picks missing at first.  Whenever a decoder stops at a
 * missing page (ipt_*_get_fault), the page is made readable (and, every
 * other time, dropped from the image's cache with ipt_image_invalidate)
 * and the same call is made again; sync, resync and event calls included.
 * After an error both decodes synchronize forward, or, if the header's
 * evsize (unused here) is odd, resynchronize with pt_*_resync.  The
 * two decodes must report the same blocks (joined where a fault or a full
 * block cut them), instructions, events and errors. */
#include "fuzz.h"
#include "../unit/hv/fault_util.h"

static void decode(struct hv_out *o, const struct pt_config *config,
		   struct gmem *m, int insn, int resync, uint64_t limit)
{
	struct pt_image *image = ipt_image_alloc_with("fault", fz_allocator());

	memset(o, 0, sizeof(*o));
	o->limit = limit;
	o->resync = resync;
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
	struct fz_twice in;
	struct gmem mem;
	int insn;

	/* Both decodes must see the same memory and the same allocations. */
	fz_twice_read(&in, data, size);
	memset(&mem, 0, sizeof(mem));
	gmem_add(&mem, in.img.base, in.img.code, in.img.size);
	for (insn = 0; insn < 2; ++insn) {
		int resync = in.h.evsize & 1;
		struct hv_out whole, parts;
		long at;

		mem.pct = 0;
		decode(&whole, &in.config, &mem, insn, resync, in.limit);
		mem.pct = 25 + in.h.sync_offset % 76;
		mem.seed = in.h.cpuid_0x15_eax ^
			   ((uint64_t) in.h.sync_offset << 32);
		decode(&parts, &in.config, &mem, insn, resync, in.limit);
		at = hv_out_diff(&whole, &parts);
		if (at >= 0)
			fz_fail(insn ? "insn output differs with pages missing" :
				"blk output differs with pages missing", at,
				(long long) mem.faults);
		free(whole.h);
		free(parts.h);
	}

	free(mem.released);
	fz_twice_free(&in);
	return 0;
}

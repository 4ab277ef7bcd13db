/* Block decoder harness (and, built with FUZZ_INSN, the instruction decoder
 * harness): trace bytes plus a code image and configuration taken from the
 * input.
 *
 * Input: the common header (fuzz.h), the image fields (fz_image_read: base,
 * size, address filters, code), then the trace.  Code reaches the decoder
 * through pt_image_set_callback, on the decoder's own image or on one
 * the harness allocates; the callback may return short reads or fail.  An
 * image of the harness's own asked for with both short and failing reads
 * gets the code as a file section instead (pt_image_add_file; a file
 * reads whole): there blocks end where libipt's block cache ends them.
 * Straight-line code may run forever without trace, so the number of steps
 * is capped rather than checked.
 *
 * Then the trace is decoded again in one piece and split at its PSBs, a
 * decoder per piece, joined where their states agree (ipt_seg_split through
 * ../seg/seg_split.h):
 * the two must give the same results.  Not with a read callback that
 * fails now and then, which would answer two decoders differently, nor
 * with short reads: the image's page cache takes a read that stops early
 * for the end of the mapping (the callback contract in >>api-img-ext), so
 * what a decoder reads then depends on what it has read before. */
#include "fuzz.h"
#include "../seg/seg_split.h"

#ifdef FUZZ_INSN
#define D(name) pt_insn_##name
#define D_ALLOC ipt_insn_alloc_decoder_with
#define D_IPT(name) ipt_insn_##name
typedef struct pt_insn_decoder fz_decoder;
typedef struct pt_insn fz_item;
#else
#define D(name) pt_blk_##name
#define D_ALLOC ipt_blk_alloc_decoder_with
#define D_IPT(name) ipt_blk_##name
typedef struct pt_block_decoder fz_decoder;
typedef struct pt_block fz_item;
#endif

/* Caps, linear in the trace: a TNT-64 packet (8 bytes) may give 47 blocks,
 * and code without trace (a jump to itself, a long run of straight-line
 * code) may go on forever.  A block may hold up to 65535 instructions, so
 * the block harness also caps instructions.  Long runs of code the decoder
 * has already seen add no coverage; small caps keep the fuzzer fast. */
static size_t max_steps(size_t tsize)
{
#ifdef FUZZ_INSN
	return fz_budget(tsize, 16);
#else
	return 1024 + tsize * 8;
#endif
}

static unsigned long max_insns(size_t tsize)
{
	return 4096 + (unsigned long) tsize * 32;
}

/* Code that loops without trace (a jump to itself, say) goes the same way
 * over and over: after this many steps without the decoder reading further
 * into the trace the decode ends: IPT_COV_IDLE_MAX instructions (the
 * coverage decoder's limit, lowered for fuzzing in rules.mk), or a
 * quarter as many blocks.  Most of the time of the inputs that
 * hit the caps above went there. */
#ifdef FUZZ_INSN
enum { max_idle = IPT_COV_IDLE_MAX };
#else
enum { max_idle = IPT_COV_IDLE_MAX / 4 };
#endif

/* The flags that ask for the code in a file section. */
enum { fz_file_image = fz_own_image | fz_short_reads | fz_flaky_reads };

/* Put @img's code in a file (one per process, without a name in any
 * directory, written again for each input) and map it into @image.
 * Returns zero, or a negative pte_* code. */
static int fz_add_file(struct pt_image *image, const struct fz_image *img)
{
	static FILE *file;
	char path[64];

	if (!img->size)
		return 0;
	if (!file)
		file = tmpfile();
	if (!file || fseek(file, 0, SEEK_SET) ||
	    fwrite(img->code, 1, img->size, file) != img->size ||
	    fflush(file))
		fz_fail("cannot write the code file", (long long) img->size, 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fileno(file));
	return pt_image_add_file(image, path, 0, img->size, NULL, img->base);
}

static int run(fz_decoder *decoder, int status, struct fz_event *ev,
	       uint64_t limit, size_t *steps, unsigned long insn_cap)
{
	fz_item item;
	uint64_t last = UINT64_MAX;
	unsigned idle = 0;
#ifndef FUZZ_INSN
	unsigned long insns = 0;
#else
	(void) insn_cap;
#endif

	for (;;) {
		struct pt_asid asid;
		uint64_t tsc, offset;
		uint32_t mtc, cyc, cbr;

		if (!(*steps)--)
			return -pte_eos;
		while (status >= 0 && (status & pts_event_pending))
			status = D(event)(decoder, ev->event, ev->size);
		if (status < 0)
			return status;

		(void) D(time)(decoder, &tsc, &mtc, &cyc);
		(void) D(core_bus_ratio)(decoder, &cbr);
		(void) D(asid)(decoder, &asid, sizeof(asid));
		{
			int guest = D_IPT(in_guest)(decoder);

			if (guest != 0 && guest != 1 && guest != -pte_nosync)
				fz_fail("in_guest", guest, 0);
		}
		if (D(get_offset)(decoder, &offset) >= 0) {
			if (offset >= limit)
				return -pte_eos;
			if (offset != last) {
				last = offset;
				idle = 0;
			} else if (++idle > max_idle)
				return -pte_eos;
		}

		status = D(next)(decoder, &item, sizeof(item));
		if (status < 0)
			return status;
#ifdef FUZZ_INSN
		if (item.size < 1 || item.size > pt_max_insn_size)
			fz_fail("instruction size", item.size, 0);
#else
		if (item.size > pt_max_insn_size)
			fz_fail("block's last instruction size", item.size, 0);
		insns += item.ninsn;
		if (insns > insn_cap)
			return -pte_eos;
#endif
		if ((unsigned) item.iclass > (unsigned) ptic_indirect)
			fz_fail("instruction class", item.iclass, 0);
	}
}

/* Where the decoder was when it last got further before a resync, and how
 * many resyncs since found it no further (see pt_blk_resync: after 20 it
 * moves on to the next PSB). */
struct fz_progress {
	uint64_t sync, at;
	unsigned stalls;
};

static void fz_progress(struct fz_progress *p, const fz_decoder *decoder)
{
	uint64_t sync, at;

	if (D(get_sync_offset)(decoder, &sync) < 0)
		sync = UINT64_MAX;
	if (D(get_offset)(decoder, &at) < 0)
		at = UINT64_MAX;
	if (sync == p->sync && at <= p->at) {
		if (++p->stalls > 21)
			fz_fail("resync goes round", (long long) sync,
				(long long) at);
		return;
	}
	p->sync = sync;
	p->at = at;
	p->stalls = 0;
}

/* Pieces are decoders, each with the budget of the one-piece decode: a
 * trace with many PSBs would make the check slow without making it
 * better. */
enum { split_max_psbs = 6 };

static void split_check(const struct pt_config *config,
			const struct fz_header *h, struct fz_image *img,
			size_t tsize)
{
	struct ss_code code = { fz_read_memory, img };
	struct ss_budget budget = { max_steps(tsize), max_idle };
	int64_t npsb;

	if (h->flags & (fz_flaky_reads | fz_short_reads))
		return;
	npsb = ipt_seg_index(config, NULL, 0);
	if (npsb < 2 || npsb > split_max_psbs)
		return;
#ifdef FUZZ_INSN
	if (!ss_check(config, &code, 1, &budget, NULL))
		fz_fail("decoded in pieces, the instruction decoder differs",
			(long long) npsb, 0);
#else
	if (!ss_check(config, &code, 0, &budget, NULL))
		fz_fail("decoded in pieces, the block decoder differs",
			(long long) npsb, 0);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_decoder *decoder;
	struct pt_image *image = NULL;
	struct pt_config config;
	struct fz_header h;
	struct fz_image img;
	struct fz_event ev;
	struct fz in;
	uint8_t *trace;
	size_t tsize, steps;
	unsigned long insn_cap;
	uint64_t sync, limit;
	struct fz_progress progress = { UINT64_MAX, 0, 0 };
	int status;

	fz_init(&in, data, size);
	fz_header(&in, &h);
	pt_config_init(&config);
	fz_image_read(&in, &h, &img, &config);
	trace = fz_copy(&in, in.n, &tsize);
	steps = max_steps(tsize);
	insn_cap = max_insns(tsize);
	{
		struct pt_conf_addr_filter filter = config.addr_filter;

		fz_config(&h, &config, trace, tsize);
		config.addr_filter = filter;
	}

	decoder = D_ALLOC(&config, fz_allocator());
	if (!decoder)
		goto out;
	if (D(get_config)(decoder) == NULL)
		fz_fail("no config", 0, 0);
	if ((h.flags & fz_file_image) == fz_file_image) {
		image = ipt_image_alloc_with("fuzz", fz_allocator());
		if (!image)
			goto out;
		status = fz_add_file(image, &img);
		if ((status < 0 && status != -pte_nomem) ||
		    D(set_image)(decoder, image) < 0)
			fz_fail("cannot install image", status, 0);
	} else if (h.flags & fz_own_image) {
		image = ipt_image_alloc_with("fuzz", fz_allocator());
		if (!image)
			goto out;
		if (pt_image_set_callback(image, fz_read_memory, &img) < 0 ||
		    D(set_image)(decoder, image) < 0)
			fz_fail("cannot install image", 0, 0);
	} else if (pt_image_set_callback(D(get_image)(decoder),
					 fz_read_memory, &img) < 0)
		fz_fail("cannot set callback", 0, 0);
	fz_event_init(&ev, &h);
	/* The top bits of the sync offset switch ipt.h's settings. */
	if (D_IPT(set_vm_tolerant)(decoder, (int) (h.sync_offset >> 31)) < 0 ||
	    D_IPT(set_wait_for_code)(decoder, (int) (h.sync_offset >> 30) & 1) < 0)
		fz_fail("cannot set the decoder up", 0, 0);

	switch (h.flags & fz_sync_mask) {
	case fz_sync_backward:
		for (limit = UINT64_MAX; steps; limit = sync) {
			status = D(sync_backward)(decoder);
			if (status < 0)
				break;
			if (D(get_sync_offset)(decoder, &sync) < 0)
				fz_fail("no sync offset", 0, 0);
			/* Each step goes back: a PSB whose start reads on
			 * into the next one is skipped. */
			if (sync >= limit)
				fz_fail("sync_backward went forward", (long long) sync,
					(long long) limit);
			(void) run(decoder, status, &ev, limit, &steps,
				   insn_cap);
			if (D(sync_set)(decoder, sync) < 0)
				fz_fail("cannot go back to the sync point",
					(long long) sync, 0);
		}
		break;

	case fz_sync_set:
	case fz_sync_mask:
		status = D(sync_set)(decoder, tsize ? h.sync_offset % tsize
				     : 0);
		if (status >= 0 && run(decoder, status, &ev, UINT64_MAX, &steps,
					    insn_cap) ==
		    -pte_eos)
			break;
		/* fall through - resynchronize */
	case fz_sync_forward:
		status = D(sync_forward)(decoder);
		while (status >= 0 && steps) {
			if (run(decoder, status, &ev, UINT64_MAX, &steps,
					    insn_cap) == -pte_eos)
				break;
			if (!(h.flags & fz_resync)) {
				status = D(sync_forward)(decoder);
				continue;
			}
			/* Each resync takes the decoder further, or, when an
			 * error keeps coming back at once, on to the next
			 * PSB in the end: it must not go round and round. */
			fz_progress(&progress, decoder);
			status = D(resync)(decoder);
		}
		break;
	}

	/* The same decoder, caches and image on the second half of the
	 * trace. */
	if (D_IPT(set_buffer)(decoder, trace + tsize / 2, trace + tsize) < 0)
		fz_fail("cannot set the buffer", (long long) tsize, 0);
	steps = max_steps(tsize - tsize / 2);
	status = D(sync_forward)(decoder);
	while (status >= 0 && steps &&
	       run(decoder, status, &ev, UINT64_MAX, &steps, insn_cap) !=
	       -pte_eos)
		status = D(sync_forward)(decoder);
	fz_event_fini(&ev);
	split_check(&config, &h, &img, tsize);

out:
	D(free_decoder)(decoder);
	pt_image_free(image);
	free(img.code);
	free(trace);
	return 0;
}

/* CR3 filter harness: decoders that keep one address space
 * (ipt_*_set_cr3_filter) never read the code of another.
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The filter
 * is the CR3 of one of the trace's first PIPs, which one the header's
 * sync offset picks (fz_pip_cr3).  The block decoder, then the
 * instruction decoder, decode the trace with it from the first PSB on,
 * synchronizing forward after errors (or, if the header's evsize is odd,
 * resynchronizing); the read-memory callback fails the run if asked for an
 * address space that is neither the filter's nor unknown.  (fuzz_cov.c
 * filters the coverage decoder and its reference alike.)  Each step
 * also asks ipt_*_in_guest and the start state, which must fail while
 * the decoder skips or say a state.  Nothing may crash, hang or leak. */
#include "fuzz.h"

struct cr3_mem {
	struct fz_image *img;
	uint64_t filter;
};

static int cr3_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context)
{
	struct cr3_mem *m = (struct cr3_mem *) context;

	if (asid && asid->cr3 != pt_asid_no_cr3 && asid->cr3 != m->filter)
		fz_fail("read of a filtered-out address space",
			(long long) asid->cr3, (long long) m->filter);
	return fz_read_memory(buffer, size, asid, ip, m->img);
}

/* Decode with decoder @d of kind @P, reporting @item, until the end of the
 * trace or until @budget (steps and instructions; @ninsn is how many
 * instructions @item holds) is used up: code that loops without trace
 * goes on for ever. */
#define FZ_CR3_STEP(P, d, item, ninsn, ev, budget)                           \
	do {                                                                 \
		int st_, guest_;                                                \
		struct ipt_start_state state_;                                  \
		uint64_t off_;                                                  \
                                                                             \
		st_ = pt_##P##_sync_forward(d);                                 \
		while (st_ != -pte_eos && (budget)--) {                         \
			while (st_ >= 0 && (st_ & pts_event_pending))           \
				st_ = pt_##P##_event(d, (ev)->event,            \
						     (ev)->size);               \
			guest_ = ipt_##P##_in_guest(d);                         \
			if (guest_ != 0 && guest_ != 1 &&                       \
			    guest_ != -pte_nosync)                              \
				fz_fail("in_guest", guest_, 0);                 \
			memset(&state_, 0, sizeof(state_));                     \
			state_.size = sizeof(state_);                           \
			(void) ipt_##P##_get_start_state(d, &off_, &state_);    \
			if (st_ >= 0)                                           \
				st_ = pt_##P##_next(d, &(item), sizeof(item));  \
			if (st_ >= 0 && (budget) < (ninsn))                     \
				break;                                          \
			if (st_ >= 0)                                           \
				(budget) -= (ninsn);                            \
			if (st_ >= 0 || st_ == -pte_eos)                        \
				continue;                                       \
			st_ = resync ? pt_##P##_resync(d) :                     \
				       pt_##P##_sync_forward(d);                \
		}                                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_twice in;
	struct cr3_mem mem;
	struct fz_event ev;
	struct pt_image *image;
	int resync;

	fz_twice_read(&in, data, size);
	fz_event_init(&ev, &in.h);
	resync = in.h.evsize & 1;
	mem.img = &in.img;
	mem.filter = fz_pip_cr3(&in.config, in.h.sync_offset);

	image = ipt_image_alloc_with("cr3", fz_allocator());
	if (image && pt_image_set_callback(image, cr3_read, &mem) >= 0) {
		struct pt_block_decoder *b;
		struct pt_insn_decoder *i;
		uint64_t budget;

		b = ipt_blk_alloc_decoder_with(&in.config, fz_allocator());
		if (b && pt_blk_set_image(b, image) >= 0 &&
		    ipt_blk_set_cr3_filter(b, mem.filter) >= 0 &&
		    ipt_blk_set_vm_tolerant(b, in.h.sync_offset >> 31) >= 0) {
			struct pt_block block;

			budget = in.limit;
			FZ_CR3_STEP(blk, b, block, block.ninsn, &ev, budget);
		}
		pt_blk_free_decoder(b);

		i = ipt_insn_alloc_decoder_with(&in.config, fz_allocator());
		if (i && pt_insn_set_image(i, image) >= 0 &&
		    ipt_insn_set_cr3_filter(i, mem.filter) >= 0 &&
		    ipt_insn_set_vm_tolerant(i, in.h.sync_offset >> 31) >= 0) {
			struct pt_insn insn;

			budget = in.limit;
			FZ_CR3_STEP(insn, i, insn, 1, &ev, budget);
		}
		pt_insn_free_decoder(i);

	}
	pt_image_free(image);
	fz_event_fini(&ev);
	fz_twice_free(&in);
	return 0;
}

/* The block decoder's cache tags wrapping around: context numbers (one
 * per address space and mode, 32 bits) and epochs (one per image or
 * image generation, 32 bits).  Once either wraps, tags from before could
 * look current again, so the caches are emptied.  Reaching 2^32 takes
 * 2^32 address-space or image changes; this test sets a decoder's
 * counters just short of the wrap instead (it compiles its own copy of
 * the implementation to reach them).
 *
 * Twelve address spaces with code of their own at the same address, a
 * loop in each that the run cache takes.  A decoder goes through them in
 * one order; its context numbers wrap, and it goes through them in the
 * other order, so that each number now stands for another address space
 * than before; then its epoch wraps with a change of image, and goes on
 * with one more, whose code differs from the first image's (even and odd
 * pages swapped), to the epoch
 * the first image had.  Each time it must decode exactly as a fresh
 * decoder. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "blk_util.h"
#include "check.h"

enum { nspaces = 12, nloop = 5 };

/* At 0x1000 in every address space: nop, then (odd CR3 pages) another
 * nop; dec ecx; jnz back to the start; jmp rax.  @context is two code
 * memories, for even and odd pages. */
static const uint8_t even_code[] = { 0x90, 0xff, 0xc9, 0x75, 0xfb, 0xff, 0xe0 };
static const uint8_t odd_code[] = { 0x90, 0x90, 0xff, 0xc9, 0x75, 0xfa,
				    0xff, 0xe0 };

static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	struct mem *m = (struct mem *) context;

	return mem_read(buffer, size, asid, ip, &m[(asid->cr3 >> 12) & 1]);
}

/* Tracing starts off; each time, a PIP sets the address space, TIP.PGE
 * enables at 0x1000, the loop runs nloop times and jmp rax disables.
 * The address spaces one after the other, up or @down. */
static void build(struct tb *t, int down)
{
	int round, k, i;

	tb_init(t);
	tb_simple(t, ppt_psb);
	tb_simple(t, ppt_psbend);
	for (round = 0; round < 2; ++round)
		for (k = 0; k < nspaces; ++k) {
			int space = down ? nspaces - k : k + 1;

			tb_pip(t, (uint64_t) space << 12);
			tb_mode_exec(t, ptem_64bit);
			tb_ip(t, ppt_tip_pge, pt_ipc_sext_48, 0x1000);
			for (i = 0; i < nloop; ++i)
				tb_tnt(t, i + 1 < nloop, 1);
			tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
		}
	tb_done(t);
	CHECK_EQ(t->errors, 0);
}

/* Decode @t over @image with a fresh decoder; a full decode. */
static void fresh(struct log *l, struct tb *t, struct pt_image *image)
{
	struct pt_block_decoder *d;

	log_init(l);
	d = pt_blk_alloc_decoder(&t->config);
	if (!CHECK(d != NULL))
		return;
	CHECK_EQ(pt_blk_set_image(d, image), 0);
	run_blk_on(l, d);
	pt_blk_free_decoder(d);
	CHECK(strstr(l->text, "x ") == NULL);
	CHECK(strstr(l->text, "b 1000 1003 3\n") != NULL);
	CHECK(strstr(l->text, "b 1000 1004 4\n") != NULL);
}

/* Decode @t over @image with @d, as a fresh decoder would.  A new image
 * (even the same one set again) starts a new epoch. */
static void again(struct pt_block_decoder *d, struct tb *t,
		  struct pt_image *image, const char *what)
{
	struct log want, got;

	fresh(&want, t, image);
	CHECK_EQ(ipt_blk_set_buffer(d, t->buf, (uint8_t *) t->config.end),
		 0);
	if (pt_blk_get_image(d) != image)
		CHECK_EQ(pt_blk_set_image(d, image), 0);
	run_blk_on(&got, d);
	if (!CHECK(!strcmp(got.text, want.text)))
		printf("---- %s: got\n%s---- want:\n%s", what, got.text,
		       want.text);
}

int main(void)
{
	static struct tb up, down;
	/* Even pages, odd pages; swapped. */
	static struct mem plain[2], swapped[2];
	struct pt_image *image[3];
	struct pt_block_decoder *d;
	struct pt_event event;
	uint32_t epoch;
	int i, status;

	mem_init(&plain[0], 0x1000, even_code, sizeof(even_code));
	mem_init(&plain[1], 0x1000, odd_code, sizeof(odd_code));
	swapped[0] = plain[1];
	swapped[1] = plain[0];
	for (i = 0; i < 3; ++i) {
		image[i] = pt_image_alloc("spaces");
		if (!CHECK(image[i] != NULL))
			return check_done();
		pt_image_set_callback(image[i], read_code,
				      i ? swapped : plain);
	}
	build(&up, 0);
	build(&down, 1);

	d = pt_blk_alloc_decoder(&up.config);
	if (!CHECK(d != NULL))
		return check_done();
	again(d, &up, image[0], "first");
	epoch = d->epoch;

	/* Context numbers: the next is 2^32, i.e. zero. */
	d->ctx_next = UINT32_MAX;
	again(d, &down, image[0], "contexts wrapped");
	/* At most one new number per visit. */
	CHECK(d->ctx_next > 0 && d->ctx_next <= 2 * nspaces);
	CHECK_EQ(d->epoch, epoch);

	/* Epochs: the next image change wraps to 1 (an event, no code decoded), the
	 * one after goes on to 2, as the first image had it. */
	d->epoch = UINT32_MAX;
	CHECK_EQ(pt_blk_set_image(d, image[1]), 0);
	status = pt_blk_sync_set(d, 0);
	CHECK(status >= 0 && (status & pts_event_pending));
	CHECK(pt_blk_event(d, &event, sizeof(event)) >= 0);
	CHECK_EQ(d->epoch, 1);
	again(d, &up, image[2], "epoch wrapped");
	CHECK_EQ(d->epoch, epoch);

	pt_blk_free_decoder(d);
	for (i = 0; i < 3; ++i)
		pt_image_free(image[i]);
	return check_done();
}

/* The block decoder's caches: once code has been decoded, decoding it again
 * calls neither the image's read callback nor the instruction decoder; a
 * change of the code behind the callback shows only after
 * ipt_image_invalidate(); a different image is never served from the cache;
 * and long straight-line flows respect the block size limit. */
#include "blk_util.h"
#include "check.h"

/* v1:  0x1000 nop; 0x1001 jnz 0x1000; 0x1003 jmp rax
 * v2:  0x1000 nop; 0x1001 nop; 0x1002 nop; 0x1003 jmp rax */
static const uint8_t code_v1[] = { 0x90, 0x75, 0xfd, 0xff, 0xe0 };
static const uint8_t code_v2[] = { 0x90, 0x90, 0x90, 0xff, 0xe0 };

static const char *const log_v1 =
	"e enabled 1000\n"
	"e exec_mode 1000\n"
	"b 1000 1001 2\n"
	"b 1000 1001 2\n"
	"b 1000 1001 2\n"
	"b 1000 1001 2\n"
	"b 1000 1001 2\n"
	"b 1000 1001 2\n"
	"b 1003 1003 1\n"
	"e disabled 0\n";

static const char *const log_v2 =
	"e enabled 1000\n"
	"e exec_mode 1000\n"
	"b 1000 1003 4\n"
	"x trace stream does not match query\n";

/* Five times around the loop, then out; jmp rax disables tracing. */
static struct pt_config *trace_loop(struct tb *t)
{
	tb_init(t);
	tb_start64(t, 0x1000);
	tb_tnt(t, 0x3e, 6);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	return tb_done(t);
}

static void test_blk_invalidate(const struct pt_config *config)
{
	struct pt_block_decoder *d;
	struct pt_image *image;
	struct log l;
	struct mem m;

	mem_init(&m, 0x1000, code_v1, sizeof(code_v1));
	image = pt_image_alloc(NULL);
	d = pt_blk_alloc_decoder(config);
	CHECK(image && d);
	if (!image || !d)
		return;

	/* No page cache in the image: every image read calls back. */
	CHECK_EQ(ipt_image_set_cache_limit(image, 0), 0);
	CHECK_EQ(pt_image_set_callback(image, mem_read, &m), 0);
	CHECK_EQ(pt_blk_set_image(d, image), 0);

	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v1, "first pass"));
	CHECK(m.reads > 0);

	/* Decoded before: no reads at all. */
	m.reads = 0;
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v1, "second pass"));
	CHECK_EQ(m.reads, 0);

	/* The code changes; we are not told yet. */
	memcpy(m.bytes, code_v2, sizeof(code_v2));
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v1, "changed, not invalidated"));
	CHECK_EQ(m.reads, 0);

	/* Now we are. */
	CHECK_EQ(ipt_image_invalidate(image, NULL, 0x1000, 0x1005), 0);
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v2, "invalidated"));
	CHECK(m.reads > 0);

	/* And back, for one address space only: it is ours. */
	memcpy(m.bytes, code_v1, sizeof(code_v1));
	CHECK_EQ(ipt_image_invalidate(image, NULL, 0x1000, 0x1001), 0);
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v1, "invalidated again"));

	pt_blk_free_decoder(d);
	pt_image_free(image);
}

static void test_insn_invalidate(const struct pt_config *config)
{
	struct pt_insn_decoder *d;
	struct pt_image *image;
	struct log l, first;
	struct mem m;

	mem_init(&m, 0x1000, code_v1, sizeof(code_v1));
	image = pt_image_alloc(NULL);
	d = pt_insn_alloc_decoder(config);
	CHECK(image && d);
	if (!image || !d)
		return;

	CHECK_EQ(ipt_image_set_cache_limit(image, 0), 0);
	CHECK_EQ(pt_image_set_callback(image, mem_read, &m), 0);
	CHECK_EQ(pt_insn_set_image(d, image), 0);

	run_insn_on(&first, d);
	CHECK(strstr(first.text, "i 1001 2\ni 1000 1\n") != NULL);
	CHECK(strstr(first.text, "i 1003 2\ne disabled 0\n") != NULL);
	CHECK(m.reads > 0);

	m.reads = 0;
	run_insn_on(&l, d);
	CHECK(log_is(&l, first.text, "insn second pass"));
	CHECK_EQ(m.reads, 0);

	memcpy(m.bytes, code_v2, sizeof(code_v2));
	run_insn_on(&l, d);
	CHECK(log_is(&l, first.text, "insn changed, not invalidated"));
	CHECK_EQ(m.reads, 0);

	CHECK_EQ(ipt_image_invalidate(image, NULL, 0x1000, 0x1005), 0);
	run_insn_on(&l, d);
	/* The last instruction of the block comes with the block's error. */
	CHECK(strstr(l.text, "i 1001 1\ni 1002 1\n"
			     "x trace stream does not match query\n") != NULL);
	CHECK(m.reads > 0);

	pt_insn_free_decoder(d);
	pt_image_free(image);
}

/* v3:  0x1000 xchg ax, ax (66 90); 0x1002 nop; 0x1003 jmp rax.  Against
 * v2, the ordinary instruction at 0x1000 changes its size: the sizes
 * kept for recording runs again (the length map) must not outlive an
 * invalidation. */
static const uint8_t code_v3[] = { 0x66, 0x90, 0x90, 0xff, 0xe0 };

static void test_sizes_invalidate(const struct pt_config *config, int insn)
{
	struct pt_block_decoder *bd = NULL;
	struct pt_insn_decoder *id = NULL;
	struct pt_image *image;
	struct log l;
	struct mem m;
	int i;

	mem_init(&m, 0x1000, code_v3, sizeof(code_v3));
	image = pt_image_alloc(NULL);
	if (insn)
		id = pt_insn_alloc_decoder(config);
	else
		bd = pt_blk_alloc_decoder(config);
	CHECK(image && (bd || id));
	if (!image || !(bd || id))
		return;
	CHECK_EQ(pt_image_set_callback(image, mem_read, &m), 0);
	CHECK_EQ(insn ? pt_insn_set_image(id, image) :
			pt_blk_set_image(bd, image), 0);

	/* v3, v2, v3 again: each time invalidated, each time decoded
	 * afresh, twice (the second pass from the caches). */
	for (i = 0; i < 6; i++) {
		const uint8_t *code = (i / 2) % 2 ? code_v2 : code_v3;

		if (!(i % 2)) {
			memcpy(m.bytes, code, sizeof(code_v3));
			CHECK_EQ(ipt_image_invalidate(image, NULL, 0x1000,
						      0x1005), 0);
		}
		if (insn) {
			run_insn_on(&l, id);
			CHECK(strstr(l.text, code == code_v2 ?
				     "i 1000 1\ni 1001 1\ni 1002 1\n" :
				     "i 1000 2\ni 1002 1\n") != NULL);
		} else {
			run_blk_on(&l, bd);
			CHECK(strstr(l.text, code == code_v2 ?
				     "b 1000 1003 4\n" :
				     "b 1000 1003 3\n") != NULL);
		}
	}

	pt_insn_free_decoder(id);
	pt_blk_free_decoder(bd);
	pt_image_free(image);
}

/* Switching images, even to one at the same address, drops the cache. */
static void test_set_image(const struct pt_config *config)
{
	struct pt_block_decoder *d;
	struct pt_image *one, *two;
	struct mem m1, m2;
	struct log l;

	mem_init(&m1, 0x1000, code_v1, sizeof(code_v1));
	mem_init(&m2, 0x1000, code_v2, sizeof(code_v2));
	one = pt_image_alloc("one");
	two = pt_image_alloc("two");
	d = pt_blk_alloc_decoder(config);
	CHECK(one && two && d);
	if (!one || !two || !d)
		return;
	pt_image_set_callback(one, mem_read, &m1);
	pt_image_set_callback(two, mem_read, &m2);

	pt_blk_set_image(d, one);
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v1, "image one"));

	pt_blk_set_image(d, two);
	CHECK(pt_blk_get_image(d) == two);
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v2, "image two"));

	/* The same image object, given a different callback. */
	pt_image_set_callback(two, mem_read, &m1);
	pt_blk_set_image(d, two);
	run_blk_on(&l, d);
	CHECK(log_is(&l, log_v1, "image two, new callback"));

	/* NULL selects the decoder's own, empty, image. */
	pt_blk_set_image(d, NULL);
	CHECK(pt_blk_get_image(d) != NULL && pt_blk_get_image(d) != two);
	run_blk_on(&l, d);
	CHECK(strstr(l.text, "x no memory mapped at this address\n") != NULL);

	pt_blk_free_decoder(d);
	pt_image_free(one);
	pt_image_free(two);
}

/* An endless loop of direct jumps without trace: blocks end before their
 * 16-bit instruction count overflows, and say the trace has ended. */
static void test_block_limit(void)
{
	static const uint8_t spin[] = { 0x90, 0xeb, 0xfd };
	struct pt_block_decoder *d;
	struct pt_image *image;
	struct pt_config *config;
	struct pt_block b;
	struct pt_event ev;
	struct mem m;
	struct tb t;
	int status, i;

	mem_init(&m, 0x1000, spin, sizeof(spin));
	image = pt_image_alloc(NULL);
	pt_image_set_callback(image, mem_read, &m);

	tb_init(&t);
	tb_start64(&t, 0x1000);
	config = tb_done(&t);

	d = pt_blk_alloc_decoder(config);
	CHECK(d != NULL);
	if (!d)
		return;
	pt_blk_set_image(d, image);

	status = pt_blk_sync_forward(d);
	while (status >= 0 && (status & pts_event_pending))
		status = pt_blk_event(d, &ev, sizeof(ev));
	CHECK(status >= 0);

	for (i = 0; i < 3; ++i) {
		status = pt_blk_next(d, &b, sizeof(b));
		CHECK_EQ(status, pts_eos);
		CHECK(b.ninsn >= 0xfffe);
		CHECK_EQ(b.ip, 0x1000);
		CHECK_EQ(b.end_ip, 0x1001);
		CHECK_EQ(b.iclass, ptic_jump);
	}

	pt_blk_free_decoder(d);
	pt_image_free(image);
}

int main(void)
{
	struct pt_config *config;
	struct tb t;

	config = trace_loop(&t);
	CHECK_EQ(t.errors, 0);

	test_blk_invalidate(config);
	test_insn_invalidate(config);
	test_sizes_invalidate(config, 0);
	test_sizes_invalidate(config, 1);
	test_set_image(config);
	test_block_limit();

	return check_done();
}

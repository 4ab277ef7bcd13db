/* alloc.c - objects with allocators of their own (struct ipt_allocator).
 *
 * Each arena here counts what it hands out and checks every free: the
 * block must be one it handed out and still live, and the size must be the
 * one it was asked for.  The tests:
 *
 *   - every scenario (scenarios.h) on several conformance cases decodes
 *     the same with an arena as with the default allocator, and leaves the
 *     arena empty;
 *   - two block decoders and an instruction decoder, each with its own
 *     arena, decode at once, interleaved; an image from a fourth arena is
 *     shared by two of them; no arena sees another's blocks;
 *   - an allocator without alloc or free is refused;
 *   - an image section cache grows its list through realloc, and through
 *     alloc, copy and free when the allocator has no realloc.
 *
 *     alloc CONFORMANCE
 */
#include "ipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cases.h"
#include "scenarios.h"

struct arena {
	const char *name;
	struct {
		void *ptr;
		size_t size;
	} live[4096];
	size_t nlive;
	unsigned long allocs, frees, reallocs, errors;
	size_t bytes, peak;
	struct ipt_allocator allocator;
};

static void arena_error(struct arena *a, const char *what, size_t size)
{
	a->errors++;
	printf("     arena %s: %s (%zu bytes)\n", a->name, what, size);
}

static void *arena_alloc(void *context, size_t size)
{
	struct arena *a = (struct arena *) context;
	void *p;

	if (size == 0)
		arena_error(a, "asked for zero bytes", size);
	if (a->nlive == sizeof(a->live) / sizeof(a->live[0]))
		return NULL;
	p = malloc(size ? size : 1);
	if (!p)
		return NULL;
	a->live[a->nlive].ptr = p;
	a->live[a->nlive].size = size;
	a->nlive++;
	a->allocs++;
	a->bytes += size;
	if (a->bytes > a->peak)
		a->peak = a->bytes;
	return p;
}

/* Takes ptr off the live list; checks its size. */
static int arena_take(struct arena *a, void *ptr, size_t size)
{
	size_t i;

	for (i = 0; i < a->nlive; ++i) {
		if (a->live[i].ptr != ptr)
			continue;
		if (a->live[i].size != size)
			arena_error(a, "freed with the wrong size", size);
		a->bytes -= a->live[i].size;
		a->live[i] = a->live[--a->nlive];
		return 0;
	}
	arena_error(a, "freed a block it does not hold", size);
	return -1;
}

static void arena_free(void *context, void *ptr, size_t size)
{
	struct arena *a = (struct arena *) context;

	if (!ptr) {
		arena_error(a, "freed NULL", size);
		return;
	}
	if (arena_take(a, ptr, size) == 0) {
		a->frees++;
		free(ptr);
	}
}

static void *arena_realloc(void *context, void *ptr, size_t old_size,
			   size_t new_size)
{
	struct arena *a = (struct arena *) context;
	void *p;

	a->reallocs++;
	p = arena_alloc(context, new_size);
	if (!p)
		return NULL;
	memcpy(p, ptr, old_size < new_size ? old_size : new_size);
	arena_free(context, ptr, old_size);
	return p;
}

static struct arena *arena_new(const char *name, int with_realloc)
{
	struct arena *a = (struct arena *) calloc(1, sizeof(*a));

	if (!a)
		abort();
	a->name = name;
	a->allocator.alloc = arena_alloc;
	a->allocator.free = arena_free;
	a->allocator.context = a;
	a->allocator.realloc = with_realloc ? arena_realloc : NULL;
	return a;
}

/* Everything given back, nothing wrong: frees the arena. */
static void arena_done(struct arena *a)
{
	CHECK_EQ(a->nlive, 0);
	CHECK_EQ(a->bytes, 0);
	CHECK_EQ(a->allocs, a->frees);
	CHECK_EQ(a->errors, 0);
	free(a);
}

/* ---- every scenario, default against arena ---- */

static void test_scenarios(struct hcase *c)
{
	size_t k;

	for (k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); ++k) {
		struct arena *a = arena_new(scenarios[k].name, k & 1);
		uint64_t want, got;

		want = scenarios[k].run(c, NULL);
		got = scenarios[k].run(c, &a->allocator);
		if (!CHECK(got == want))
			printf("     %s on %s: the arena changed the decode\n",
			       scenarios[k].name, c->name);
		CHECK(a->allocs > 0);
		arena_done(a);
	}
}

/* ---- several decoders at once ---- */

/* The shared image's callback: counts its calls. */
struct counted {
	struct hcase *c;
	unsigned long calls;
};

static int counted_read(uint8_t *buffer, size_t size,
			const struct pt_asid *asid, uint64_t ip, void *context)
{
	struct counted *cr = (struct counted *) context;

	cr->calls++;
	return hcase_read(buffer, size, asid, ip, cr->c);
}

struct stepper {
	struct pt_block_decoder *blk;
	struct pt_insn_decoder *insn;
	int status, done;
	uint64_t digest;
};

/* One block or instruction (or the events before it). */
static void step(struct stepper *s)
{
	struct pt_event event;
	struct pt_block block;
	struct pt_insn insn;

	if (s->done)
		return;
	while (s->status >= 0 && (s->status & pts_event_pending)) {
		s->status = s->blk ? pt_blk_event(s->blk, &event, sizeof(event))
			: pt_insn_event(s->insn, &event, sizeof(event));
		s->digest = digest(s->digest, event.type);
	}
	if (s->status >= 0) {
		if (s->blk) {
			s->status = pt_blk_next(s->blk, &block, sizeof(block));
			if (s->status >= 0)
				s->digest = digest(s->digest, block.end_ip);
		} else {
			s->status = pt_insn_next(s->insn, &insn, sizeof(insn));
			if (s->status >= 0)
				s->digest = digest(s->digest, insn.ip);
		}
		if (s->status >= 0)
			return;
	}
	if (s->status == -pte_eos) {
		s->done = 1;
		return;
	}
	s->status = s->blk ? pt_blk_sync_forward(s->blk)
		: pt_insn_sync_forward(s->insn);
	if (s->status < 0)
		s->done = 1;
}

static uint64_t run_alone(struct hcase *c, int insn)
{
	struct stepper s;
	struct pt_config config;
	int n;

	memset(&s, 0, sizeof(s));
	hcase_config(&config, c);
	if (insn) {
		s.insn = pt_insn_alloc_decoder(&config);
		(void) pt_image_set_callback(pt_insn_get_image(s.insn),
					     hcase_read, c);
		s.status = pt_insn_sync_forward(s.insn);
	} else {
		s.blk = pt_blk_alloc_decoder(&config);
		(void) pt_image_set_callback(pt_blk_get_image(s.blk),
					     hcase_read, c);
		s.status = pt_blk_sync_forward(s.blk);
	}
	s.done = s.status < 0;
	for (n = 0; n < max_steps && !s.done; ++n)
		step(&s);
	pt_blk_free_decoder(s.blk);
	pt_insn_free_decoder(s.insn);
	return s.digest;
}

static void test_together(struct hcase *c)
{
	struct arena *a = arena_new("blk-a", 1), *b = arena_new("blk-b", 0);
	struct arena *d = arena_new("insn", 1), *img = arena_new("image", 0);
	struct pt_config config;
	struct pt_image *image;
	struct stepper s[3];
	struct counted cr;
	unsigned long img_allocs;
	int n, i;

	hcase_config(&config, c);
	memset(s, 0, sizeof(s));
	s[0].blk = ipt_blk_alloc_decoder_with(&config, &a->allocator);
	s[1].blk = ipt_blk_alloc_decoder_with(&config, &b->allocator);
	s[2].insn = ipt_insn_alloc_decoder_with(&config, &d->allocator);
	image = ipt_image_alloc_with("shared", &img->allocator);
	if (!CHECK(s[0].blk && s[1].blk && s[2].insn && image))
		return;
	img_allocs = img->allocs;
	cr.c = c;
	cr.calls = 0;
	CHECK(pt_image_set_callback(image, counted_read, &cr) == 0);
	/* blk-b and the instruction decoder share the image of the fourth
	 * arena; blk-a uses its own. */
	CHECK(pt_blk_set_image(s[1].blk, image) == 0);
	CHECK(pt_insn_set_image(s[2].insn, image) == 0);
	CHECK(pt_image_set_callback(pt_blk_get_image(s[0].blk), hcase_read,
				    c) == 0);
	s[0].status = pt_blk_sync_forward(s[0].blk);
	s[1].status = pt_blk_sync_forward(s[1].blk);
	s[2].status = pt_insn_sync_forward(s[2].insn);
	for (i = 0; i < 3; ++i)
		s[i].done = s[i].status < 0;
	for (n = 0; n < max_steps; ++n) {
		for (i = 0; i < 3; ++i)
			step(&s[i]);
	}
	CHECK(s[0].digest == run_alone(c, 0));
	CHECK(s[1].digest == s[0].digest);
	CHECK(s[2].digest == run_alone(c, 1));
	/* The shared image's page cache grew in its own arena, not in the
	 * decoders'. */
	CHECK(cr.calls == 0 || img->allocs > img_allocs);
	pt_blk_free_decoder(s[0].blk);
	pt_blk_free_decoder(s[1].blk);
	pt_insn_free_decoder(s[2].insn);
	CHECK(img->nlive > 0);
	pt_image_free(image);
	arena_done(a);
	arena_done(b);
	arena_done(d);
	arena_done(img);
}

/* ---- bad allocators, realloc ---- */

static void test_refused(void)
{
	struct ipt_allocator bad;
	struct arena *a = arena_new("refused", 1);
	struct pt_config config;
	uint8_t buf[16];

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	bad = a->allocator;
	bad.alloc = NULL;
	CHECK(!ipt_pkt_alloc_decoder_with(&config, &bad));
	CHECK(!ipt_evt_alloc_decoder_with(&config, &bad));
	CHECK(!ipt_qry_alloc_decoder_with(&config, &bad));
	CHECK(!ipt_blk_alloc_decoder_with(&config, &bad));
	CHECK(!ipt_insn_alloc_decoder_with(&config, &bad));
	CHECK(!ipt_alloc_encoder_with(&config, &bad));
	CHECK(!ipt_image_alloc_with("x", &bad));
	CHECK(!ipt_iscache_alloc_with("x", &bad));
	bad = a->allocator;
	bad.free = NULL;
	CHECK(!ipt_blk_alloc_decoder_with(&config, &bad));
	CHECK(!ipt_image_alloc_with(NULL, &bad));
	CHECK_EQ(a->allocs, 0);
	/* A bad config is refused before any allocation, or with every
	 * allocation given back. */
	CHECK(!ipt_insn_alloc_decoder_with(NULL, &a->allocator));
	CHECK(!ipt_pkt_alloc_decoder_with(NULL, &a->allocator));
	arena_done(a);
}

static void test_iscache_growth(struct hcase *c, int with_realloc)
{
	struct arena *a = arena_new("iscache", with_realloc);
	struct pt_image_section_cache *iscache;
	int i, isid = 0;

	iscache = ipt_iscache_alloc_with("grow", &a->allocator);
	if (!CHECK(iscache))
		return;
	for (i = 0; i < 40; ++i)
		isid = pt_iscache_add_file(iscache, c->image_path, 0, c->isize,
					   0x1000ull * (uint64_t) (i + 1));
	CHECK_EQ(isid, 40);
	if (with_realloc)
		CHECK(a->reallocs > 0);
	else
		CHECK_EQ(a->reallocs, 0);
	pt_iscache_free(iscache);
	arena_done(a);
}

int main(int argc, char **argv)
{
	const char *conf = argc > 1 ? argv[1] : "ipt_impl_tests/conformance/corpus";
	size_t i;

	test_refused();
	for (i = 0; i < hcase_count; ++i) {
		struct hcase c;

		if (hcase_load(&c, conf, hcase_names[i]) < 0) {
			CHECK(!"conformance case missing");
			continue;
		}
		test_scenarios(&c);
		test_together(&c);
		if (i == 0) {
			test_iscache_growth(&c, 1);
			test_iscache_growth(&c, 0);
		}
		hcase_free(&c);
	}
	return check_done();
}

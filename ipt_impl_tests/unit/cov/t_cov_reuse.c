/* t_cov_reuse - one coverage decoder, trace after trace.
 *
 * On the shipped synthesized trace (examples/synth-sample, run from the
 * project root): no allocation once warm (a counting allocator); keeping
 * and clearing the bitmap; code changed through the read callback and
 * ipt_image_invalidate is decoded again, and the edges follow it (the
 * block decoder on the new code is the reference); filter ranges; the
 * block callback; libxdc mode; a corrupt trace costs bytes up to the next
 * PSB and is counted; bad arguments. */

#include "check.h"
#include "count_alloc.h"
#include "cov_oracle.h"
#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE "examples/synth-sample"

/* ---- the sample ---- */

static int load_sample(struct omem *mem, uint8_t **trace, uint64_t *tsize)
{
	char line[1024], path[2048];
	FILE *f = fopen(SAMPLE "/image.txt", "r");
	size_t n;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long begin, end;
		char file[512];
		size_t size;
		uint8_t *bytes;

		if (sscanf(line, "%llx %llx %511s", &begin, &end, file) != 3)
			continue;
		snprintf(path, sizeof(path), SAMPLE "/%s", file);
		bytes = read_file(path, &size);
		if (!bytes || omem_add(mem, bytes, size, begin) < 0) {
			free(bytes);
			fclose(f);
			return -1;
		}
		free(bytes);
	}
	fclose(f);
	*trace = read_file(SAMPLE "/trace.pt", &n);
	*tsize = n;
	return *trace ? 0 : -1;
}

static struct omem mem;
static uint8_t *trace;
static uint64_t tsize;
static struct pt_config config;

/* The sample's image behind the read callback. */
static struct pt_image *sample_image(void)
{
	struct pt_image *image = pt_image_alloc(NULL);

	if (image)
		pt_image_set_callback(image, omem_read, &mem);
	return image;
}

/* A coverage decoder configured by @cc on @image, or NULL. */
static struct ipt_cov_decoder *open_cov(const struct ipt_cov_config *cc,
					struct pt_image *image)
{
	struct ipt_cov_decoder *cov = ipt_cov_alloc_decoder(&config, cc);

	if (cov && ipt_cov_set_image(cov, image) < 0) {
		ipt_cov_free_decoder(cov);
		cov = NULL;
	}
	return cov;
}

/* Decode with @cov and return its edges in @got. */
static int decode(struct ipt_cov_decoder *cov, int clear)
{
	if (ipt_cov_set_trace(cov, trace, trace + tsize, clear) < 0)
		return -1;
	return ipt_cov_decode(cov);
}

static void test_no_alloc_when_warm(void)
{
	struct olist got = { 0, 0, 0 };
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *cov;
	struct pt_image *image;
	static uint8_t map[1 << 16];
	unsigned long before;
	int i;

	memset(&cc, 0, sizeof(cc));
	nalloc = 0;
	image = ipt_image_alloc_with(NULL, &counting);
	cov = ipt_cov_alloc_decoder_with(&config, &cc, &counting);
	if (!CHECK(image && cov))
		goto out;
	CHECK(nalloc > 0);
	pt_image_set_callback(image, omem_read, &mem);
	ipt_cov_set_image(cov, image);
	ipt_cov_set_bitmap(cov, map, sizeof(map));
	CHECK_EQ(ipt_cov_set_cache_limit(cov, 64 << 10), 0);

	/* Warm: the run cache grows (and starts over) while it drops runs,
	 * up to its limit; then it stays. */
	for (i = 0; i < 8; ++i) {
		before = nalloc;
		CHECK_EQ(decode(cov, 1), 0);
		if (nalloc == before)
			break;
	}
	CHECK(i < 8);
	for (i = 0; i < 3; ++i) {
		before = nalloc;
		CHECK_EQ(decode(cov, 1), 0);
		CHECK_EQ(nalloc - before, 0);
	}
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(got.e);
}

/* The TNT memo: off with a limit of 0, within its limit otherwise, the
 * same bitmap either way. */
static void test_memo_limit(void)
{
	static const uint64_t limits[] = { 0, 12 << 10, 64 << 10, 1 << 20 };
	static uint8_t off[1 << 16], map[1 << 16];
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *cov;
	struct ipt_cov_status st;
	struct pt_image *image;
	size_t base = 0;
	size_t i;

	memset(&cc, 0, sizeof(cc));
	image = sample_image();
	cov = ipt_cov_alloc_decoder_with(&config, &cc, &counting);
	if (!CHECK(image && cov))
		goto out;
	ipt_cov_set_image(cov, image);
	/* A run cache that starts at its limit never grows. */
	CHECK_EQ(ipt_cov_set_cache_limit(cov, 16 << 10), 0);
	CHECK_EQ(ipt_cov_set_memo_limit(NULL, 0), -pte_invalid);
	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); ++i) {
		uint64_t bits;

		CHECK_EQ(ipt_cov_set_memo_limit(cov, limits[i]), 0);
		ipt_cov_get_status(cov, &st);
		bits = st.memo_bits;
		ipt_cov_set_bitmap(cov, i ? map : off, sizeof(map));
		CHECK_EQ(decode(cov, 1), 0);
		CHECK_EQ(decode(cov, 1), 0);
		ipt_cov_get_status(cov, &st);
		if (!i) {
			/* Warm, without a memo (the run cache done
			 * growing): what the rest holds. */
			int n;

			for (n = 0; n < 8; ++n) {
				unsigned long before = nalloc;

				CHECK_EQ(decode(cov, 1), 0);
				if (nalloc == before)
					break;
			}
			CHECK(n < 8);
			base = live;
			CHECK_EQ(st.memo_bits, bits);
			continue;
		}
		CHECK(st.memo_bits > bits);
		CHECK(live > base);
		if (!CHECK(live - base <= limits[i]))
			printf("     memo limit %llu: %zu bytes more\n",
			       (unsigned long long) limits[i], live - base);
		CHECK(!memcmp(map, off, sizeof(map)));
	}
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
}

static void test_keep_and_clear(void)
{
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *cov;
	struct ipt_cov_status st;
	struct pt_image *image;
	static uint8_t once[1 << 16], map[1 << 16];
	size_t i, twice_ok = 1, nonzero = 0;

	memset(&cc, 0, sizeof(cc));
	image = sample_image();
	cov = image ? open_cov(&cc, image) : NULL;
	if (!CHECK(image && cov))
		goto out;
	ipt_cov_set_bitmap(cov, map, sizeof(map));

	CHECK_EQ(decode(cov, 1), 0);
	memcpy(once, map, sizeof(map));
	CHECK_EQ(decode(cov, 0), 0);
	for (i = 0; i < sizeof(map); ++i) {
		nonzero += once[i] != 0;
		if (map[i] != (uint8_t) (2 * once[i]))
			twice_ok = 0;
	}
	CHECK(nonzero > 100);
	CHECK(twice_ok);
	CHECK_EQ(decode(cov, 1), 0);
	CHECK(!memcmp(map, once, sizeof(map)));
	CHECK_EQ(ipt_cov_get_status(cov, &st), 0);
	CHECK_EQ(st.errors, 0);
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
}

/* Move the target of the first conditional branch the trace takes (Jcc
 * short: 0x70-0x7f, then the displacement), invalidate, decode again:
 * the edges must be the block decoder's on the new code, and differ from
 * before. */
static void test_invalidate(void)
{
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 }, before = { 0, 0, 0 };
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *cov;
	struct pt_image *image;
	uint8_t *op = NULL;
	uint64_t page = 0;
	size_t i;

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	image = sample_image();
	cov = image ? open_cov(&cc, image) : NULL;
	if (!CHECK(image && cov))
		goto out;

	CHECK_EQ(decode(cov, 1), 0);
	for (i = 0; i < got.n && !op; ++i) {
		const struct oseg *seg;

		if (got.e[i].kind != ipt_cov_taken)
			continue;
		seg = omem_find(&mem, got.e[i].from);
		if (seg && (seg->bytes[got.e[i].from - seg->vaddr] & 0xf0) ==
			   0x70) {
			op = &seg->bytes[got.e[i].from - seg->vaddr + 1];
			page = got.e[i].from & ~0xfffull;
		}
	}
	if (!CHECK(op != NULL))
		goto out;
	olist_filter(&before, &got, ipt_cov_all);

	/* Not invalidated yet: the old code. */
	*op ^= 2;
	got.n = 0;
	CHECK_EQ(decode(cov, 1), 0);
	CHECK(olist_diff(&got, &before) < 0);

	/* Only the page that changed. */
	CHECK_EQ(ipt_image_invalidate(image, NULL, page, page + 0x1000), 0);
	got.n = 0;
	CHECK_EQ(decode(cov, 1), 0);
	oracle_edges(&want, &config, image, omem_read, &mem);
	CHECK(olist_diff(&got, &want) < 0);
	CHECK(olist_diff(&got, &before) >= 0);

	/* And back. */
	*op ^= 2;
	CHECK_EQ(ipt_image_invalidate(image, NULL, page, page + 1), 0);
	got.n = 0;
	CHECK_EQ(decode(cov, 1), 0);
	CHECK(olist_diff(&got, &before) < 0);
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(want.e);
	free(got.e);
	free(before.e);
}

static unsigned long nblocks;

static void on_block(void *context, uint64_t begin, uint64_t last)
{
	(void) context;
	if (last >= begin)
		nblocks += 1;
}

/* Ranges: only edges from inside count (enable edges: to inside); libxdc
 * mode: conditional branches only; the block callback: on first decode
 * only. */
static void test_options(void)
{
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 }, part = { 0, 0, 0 };
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *cov;
	struct pt_image *image;
	uint64_t lo = UINT64_MAX, hi = 0, mid;
	unsigned long first;
	size_t i;

	image = sample_image();
	oracle_edges(&want, &config, image, omem_read, &mem);
	for (i = 0; i < want.n; ++i) {
		if (want.e[i].from && want.e[i].from < lo)
			lo = want.e[i].from;
		if (want.e[i].from > hi)
			hi = want.e[i].from;
	}
	mid = lo + (hi - lo) / 2;

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	cc.block = on_block;
	cc.nranges = 2;
	cc.range[0].begin = lo;
	cc.range[0].end = mid;
	cc.range[1].begin = hi;
	cc.range[1].end = hi + 1;
	cov = image ? open_cov(&cc, image) : NULL;
	if (!CHECK(image && cov))
		goto out;
	nblocks = 0;
	CHECK_EQ(decode(cov, 1), 0);
	CHECK(nblocks > 0);
	part.n = 0;
	for (i = 0; i < want.n; ++i) {
		uint64_t ip = want.e[i].kind == ipt_cov_enable ?
			      want.e[i].to : want.e[i].from;

		if ((lo <= ip && ip < mid) || ip == hi)
			olist_add(&part, want.e[i].from, want.e[i].to,
				  want.e[i].kind);
	}
	CHECK(part.n > 0 && part.n < want.n);
	CHECK(olist_diff(&got, &part) < 0);
	/* Warm, the runs the cache keeps are not decoded again. */
	first = nblocks;
	nblocks = 0;
	got.n = 0;
	CHECK_EQ(decode(cov, 1), 0);
	CHECK(nblocks < first);
	CHECK(olist_diff(&got, &part) < 0);
	ipt_cov_free_decoder(cov);

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	cc.kinds = ipt_cov_return;
	cc.flags = ipt_cov_libxdc | ipt_cov_saturate;
	cov = open_cov(&cc, image);
	if (!CHECK(cov != NULL))
		goto out;
	got.n = 0;
	CHECK_EQ(decode(cov, 1), 0);
	olist_filter(&part, &want, ipt_cov_taken | ipt_cov_not_taken);
	CHECK(olist_diff(&got, &part) < 0);
	ipt_cov_free_decoder(cov);

	cov = NULL;
	cc.nranges = ipt_cov_max_ranges + 1;
	CHECK(ipt_cov_alloc_decoder(&config, &cc) == NULL);
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(want.e);
	free(got.e);
	free(part.e);
}

/* Corrupt bytes in the middle: errors are counted with the bytes skipped,
 * the decode goes on at the next PSB and still returns 0. */
static void test_errors(void)
{
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *cov;
	struct ipt_cov_status st;
	struct pt_image *image;
	static uint8_t map[1 << 10];
	uint8_t *bad;
	uint64_t i;

	bad = (uint8_t *) malloc((size_t) tsize);
	if (!CHECK(bad != NULL))
		return;
	memcpy(bad, trace, (size_t) tsize);
	for (i = tsize / 3; i < tsize / 3 + 24 && i < tsize; ++i)
		bad[i] = 0xd9;	/* not an opcode */

	memset(&cc, 0, sizeof(cc));
	image = sample_image();
	cov = image ? open_cov(&cc, image) : NULL;
	if (!CHECK(image && cov))
		goto out;
	CHECK_EQ(ipt_cov_set_bitmap(cov, map, 1000), -pte_invalid);
	CHECK_EQ(ipt_cov_set_bitmap(cov, NULL, 1024), -pte_invalid);
	CHECK_EQ(ipt_cov_set_bitmap(cov, map, sizeof(map)), 0);
	CHECK_EQ(ipt_cov_set_trace(cov, bad + 1, bad, 1), -pte_invalid);
	CHECK_EQ(ipt_cov_set_trace(cov, NULL, bad, 1), -pte_invalid);
	CHECK_EQ(ipt_cov_set_trace(cov, bad, bad, 1), 0);
	CHECK_EQ(ipt_cov_decode(cov), 0);
	CHECK_EQ(ipt_cov_set_trace(cov, bad, bad + tsize, 1), 0);
	CHECK_EQ(ipt_cov_decode(cov), 0);
	CHECK_EQ(ipt_cov_get_status(cov, &st), 0);
	CHECK(st.errors > 0);
	CHECK(st.skipped > 0 && st.skipped < tsize);
	CHECK(st.first_error < 0 && st.last_error < 0);
	CHECK(st.edges > 0);
	CHECK_EQ(ipt_cov_decode(NULL), -pte_invalid);
	CHECK_EQ(ipt_cov_get_status(cov, NULL), -pte_invalid);
out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	free(bad);
}

int main(void)
{
	if (!CHECK(load_sample(&mem, &trace, &tsize) == 0))
		return check_done();
	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + tsize;

	test_no_alloc_when_warm();
	test_memo_limit();
	test_keep_and_clear();
	test_invalidate();
	test_options();
	test_errors();

	omem_fini(&mem);
	free(trace);
	return check_done();
}

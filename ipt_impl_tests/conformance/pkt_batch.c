/* pkt_batch - ipt_pkt_next_batch and pt_pkt_next against the packet
 * decoder's general path, on every trace of the corpus.
 *
 *     pkt_batch CONFORMANCE [FILE.pt ...]
 *
 * Every distinct trace.pt under CONFORMANCE (and each FILE.pt given) is
 * decoded three ways from the same position: pt_pkt_next with a struct
 * larger than ours (which always takes the general decoder,
 * ipt__pkt_decode), pt_pkt_next (its fast path where it may), and
 * ipt_pkt_next_batch in batches of changing size.  Packets, sizes, offsets
 * after each batch and the error that ends a run must agree (packets:
 * type, size and the payload fields of the type, pkt_samples.h's
 * pkt_equal):
 *
 *   - over the whole trace, synchronizing forward after each error;
 *   - with the trace cut at every byte (for traces over 256 KiB, at every
 *     byte of the first and last 4 KiB and at 4096 cuts between), from a
 *     packet some 40 bytes before the cut, with more to come
 *     (ipt_pkt_extend, -ipt_pte_need_more, then the rest) and without;
 *   - with the trace as a wrapped ring split at every such byte
 *     (ipt_pkt_set_ring: 128 bytes before the split in place, 128 after
 *     it in another buffer), across the wrap.
 *
 * So the fast loops meet the end of their region, the end of the trace
 * and the ring's bridge at every offset from a packet's start.  Each
 * trace runs twice: as it is, and with the SKD007 erratum on (the fast
 * path leaves some CYCs to the general path for it). */
#define _XOPEN_SOURCE 700
#include "ipt.h"

#include "check.h"
#include "files.h"
#include "pkt_samples.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pt_pkt_next with this struct always takes the general path. */
struct big_packet {
	struct pt_packet packet;
	uint8_t more[8];
};

/* The batch sizes, in turn. */
static const size_t sizes[] = { 1, 2, 3, 5, 8, 13, 64, 7, 256, 4 };

/* The three decoders of one run. */
struct trio {
	struct pt_packet_decoder *ref, *one, *batch;
	unsigned int round;
	const char *name;
	unsigned long failures;
};

static void fail(struct trio *t, const char *what, uint64_t where, long long a,
		 long long b)
{
	/* The first few of each trace are enough to go on. */
	if (t->failures++ < 5)
		printf("FAIL %s: %s at offset 0x%llx: %lld != %lld\n", t->name,
		       what, (unsigned long long) where, a, b);
	CHECK(0);
}

static int same(const struct pt_packet *a, const struct pt_packet *b)
{
	return a->size == b->size && pkt_equal(a, b);
}

/* The offset of @decoder, or ~0 if it has none. */
static uint64_t offset_of(const struct pt_packet_decoder *decoder)
{
	uint64_t off;

	return pt_pkt_get_offset(decoder, &off) < 0 ? ~0ull : off;
}

/* Decode on from the three decoders' common position until an error or
 * @limit packets; compare.  Returns the error all three ended with (0 at
 * the limit); the decoders stand where they stopped. */
static int run(struct trio *t, size_t limit)
{
	struct pt_packet got[256];
	struct big_packet ref;
	struct pt_packet one;
	size_t done = 0;
	int have, i, status, ref_status = 0;

	while (done < limit) {
		size_t n = sizes[t->round++ % (sizeof(sizes) / sizeof(*sizes))];

		memset(got, 0, sizeof(got));
		have = ipt_pkt_next_batch(t->batch, got, n);
		if (have == 0 || have > (int) n) {
			fail(t, "batch count", offset_of(t->batch), have,
			     (long long) n);
			return -pte_internal;
		}
		for (i = 0; i < (have < 0 ? 1 : have); ++i) {
			uint64_t at = offset_of(t->ref);

			memset(&ref, 0, sizeof(ref));
			ref_status = pt_pkt_next(t->ref, &ref.packet,
						 sizeof(ref));
			memset(&one, 0, sizeof(one));
			status = pt_pkt_next(t->one, &one, sizeof(one));
			if (status != ref_status)
				fail(t, "pt_pkt_next status", at, status,
				     ref_status);
			else if (ref_status >= 0 &&
				 !same(&one, &ref.packet))
				fail(t, "pt_pkt_next packet", at, one.type,
				     ref.packet.type);
			if (have < 0) {
				if (have != ref_status)
					fail(t, "batch error", at, have,
					     ref_status);
				break;
			}
			if (ref_status < 0) {
				fail(t, "batch decoded past an error", at,
				     got[i].type, ref_status);
				return ref_status;
			}
			if (!same(&got[i], &ref.packet))
				fail(t, "batch packet", at, got[i].type,
				     ref.packet.type);
			if (got[i].size != (uint8_t) ref_status)
				fail(t, "batch packet size", at, got[i].size,
				     ref_status);
		}
		if (offset_of(t->batch) != offset_of(t->ref))
			fail(t, "batch offset", offset_of(t->ref),
			     (long long) offset_of(t->batch),
			     (long long) offset_of(t->ref));
		if (offset_of(t->one) != offset_of(t->ref))
			fail(t, "pt_pkt_next offset", offset_of(t->ref),
			     (long long) offset_of(t->one),
			     (long long) offset_of(t->ref));
		if (have < 0)
			return have;
		done += (size_t) have;
	}
	return 0;
}

/* Set all three to @offset; 0 or the error. */
static int sync_set(struct trio *t, uint64_t offset)
{
	int a = pt_pkt_sync_set(t->ref, offset);
	int b = pt_pkt_sync_set(t->one, offset);
	int c = pt_pkt_sync_set(t->batch, offset);

	if (a != b || a != c)
		fail(t, "sync_set", offset, b, a);
	return a;
}

/* The starts of the packets of the whole trace, for the cuts to start
 * from: decoded by pt_pkt_next, synchronizing forward after errors. */
struct starts {
	uint64_t *off;
	size_t n, cap;
};

static void starts_add(struct starts *s, uint64_t off)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->off = (uint64_t *) realloc(s->off, s->cap * sizeof(*s->off));
		if (!s->off) {
			printf("out of memory\n");
			exit(2);
		}
	}
	s->off[s->n++] = off;
}

/* The last packet start at or before @off (starts are increasing);
 * ~0 if none. */
static uint64_t start_before(const struct starts *s, uint64_t off)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->off[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? s->off[lo - 1] : ~0ull;
}

/* The whole trace, three ways, each run from a forward sync; records the
 * packet starts. */
static void whole(struct trio *t, struct starts *s)
{
	struct pt_packet_decoder *d;
	struct pt_packet packet;
	uint64_t at;
	int a, b, c;

	for (;;) {
		a = pt_pkt_sync_forward(t->ref);
		b = pt_pkt_sync_forward(t->one);
		c = pt_pkt_sync_forward(t->batch);
		if (a != b || a != c)
			fail(t, "sync_forward", offset_of(t->ref), c, a);
		if (a < 0)
			break;
		(void) run(t, ~(size_t) 0);
	}

	/* The starts, from one more decoder's pass. */
	d = pt_pkt_alloc_decoder(pt_pkt_get_config(t->ref));
	if (!d)
		return;
	while (pt_pkt_sync_forward(d) >= 0) {
		for (;;) {
			at = offset_of(d);
			if (pt_pkt_next(d, &packet, sizeof(packet)) < 0)
				break;
			if (!s->n || s->off[s->n - 1] < at)
				starts_add(s, at);
		}
	}
	pt_pkt_free_decoder(d);
}

/* Point all three at [begin, end), or at a ring's two pieces. */
static void set_buffer(struct trio *t, uint8_t *begin, uint8_t *end)
{
	CHECK_EQ(ipt_pkt_set_buffer(t->ref, begin, end), 0);
	CHECK_EQ(ipt_pkt_set_buffer(t->one, begin, end), 0);
	CHECK_EQ(ipt_pkt_set_buffer(t->batch, begin, end), 0);
}

static void set_ring(struct trio *t, uint8_t *older, uint8_t *older_end,
		     uint8_t *newer, uint8_t *newer_end)
{
	CHECK_EQ(ipt_pkt_set_ring(t->ref, older, older_end, newer, newer_end),
		 0);
	CHECK_EQ(ipt_pkt_set_ring(t->one, older, older_end, newer, newer_end),
		 0);
	CHECK_EQ(ipt_pkt_set_ring(t->batch, older, older_end, newer,
				  newer_end),
		 0);
}

static void extend(struct trio *t, uint8_t *end, int more)
{
	CHECK_EQ(ipt_pkt_extend(t->ref, end, more), 0);
	CHECK_EQ(ipt_pkt_extend(t->one, end, more), 0);
	CHECK_EQ(ipt_pkt_extend(t->batch, end, more), 0);
}

/* The trace cut at @cut, decoded from a packet some 40 bytes before;
 * then, with more to come, the cut again and the rest after it. */
static void cut_at(struct trio *t, const struct starts *s, uint8_t *trace,
		   size_t size, size_t cut)
{
	uint64_t from = start_before(s, cut > 40 ? cut - 40 : 0);
	int status;

	if (from == ~0ull || from >= cut)
		return;

	set_buffer(t, trace, trace + cut);
	if (sync_set(t, from) < 0)
		return;
	status = run(t, ~(size_t) 0);
	if (status != -pte_eos && status != -pte_bad_opc &&
	    status != -pte_bad_packet)
		fail(t, "the end of a cut trace", cut, status, -pte_eos);

	set_buffer(t, trace, trace + cut);
	extend(t, trace + cut, 1);
	if (sync_set(t, from) < 0)
		return;
	status = run(t, ~(size_t) 0);
	if (status == -ipt_pte_need_more) {
		extend(t, trace + size, 0);
		(void) run(t, 64);
	} else if (status != -pte_bad_opc && status != -pte_bad_packet) {
		fail(t, "the end for now of a cut trace", cut, status,
		     -ipt_pte_need_more);
	}
}

/* The 2 * 128 bytes around @split as a ring wrapped there. */
enum { RING_SIDE = 128 };

static void ring_at(struct trio *t, const struct starts *s, uint8_t *trace,
		    size_t size, size_t split)
{
	static uint8_t newer[RING_SIDE];
	size_t lo = split > RING_SIDE ? split - RING_SIDE : 0;
	size_t hi = size - split > RING_SIDE ? split + RING_SIDE : size;
	uint64_t from = start_before(s, split > 40 ? split - 40 : 0);

	if (from == ~0ull || from < lo || from >= split)
		return;
	memcpy(newer, trace + split, hi - split);
	set_ring(t, trace + lo, trace + split, newer, newer + (hi - split));
	if (sync_set(t, from - lo) < 0)
		return;
	(void) run(t, ~(size_t) 0);
}

/* Whether to cut at @cut of @size bytes (see the top). */
static int cut_here(size_t cut, size_t size)
{
	if (size <= 256 * 1024 || cut < 4096 || size - cut < 4096)
		return 1;
	return cut % ((size - 8192) / 4096 + 1) == 0;
}

static void one_trace(const char *path, uint8_t *trace, size_t size,
		      int skd007)
{
	struct starts s = { NULL, 0, 0 };
	struct pt_config config;
	struct trio t;
	size_t cut;

	memset(&t, 0, sizeof(t));
	t.name = path;
	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	config.errata.skd007 = skd007 ? 1 : 0;
	t.ref = pt_pkt_alloc_decoder(&config);
	t.one = pt_pkt_alloc_decoder(&config);
	t.batch = pt_pkt_alloc_decoder(&config);
	if (!CHECK(t.ref && t.one && t.batch))
		return;
	CHECK_EQ(pt_pkt_get_config(t.batch)->errata.skd007, skd007 ? 1 : 0);

	whole(&t, &s);
	for (cut = 1; cut <= size; ++cut) {
		if (!cut_here(cut, size))
			continue;
		cut_at(&t, &s, trace, size, cut);
		if (cut < size)
			ring_at(&t, &s, trace, size, cut);
	}
	free(s.off);
	pt_pkt_free_decoder(t.ref);
	pt_pkt_free_decoder(t.one);
	pt_pkt_free_decoder(t.batch);
}

/* The traces seen, by size and a hash, so that copies run once. */
static uint64_t seen[4096][2];
static size_t nseen, ntraces;

static uint64_t hash(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--)
		h = (h ^ *p++) * 1099511628211ull;
	return h;
}

static void trace_file(const char *path)
{
	uint64_t h;
	uint8_t *trace;
	size_t size, i;

	trace = read_file(path, &size);
	if (!CHECK(trace)) {
		printf("cannot read %s\n", path);
		return;
	}
	h = hash(trace, size);
	for (i = 0; i < nseen; ++i)
		if (seen[i][0] == size && seen[i][1] == h)
			break;
	if (i == nseen && nseen < sizeof(seen) / sizeof(*seen)) {
		seen[nseen][0] = size;
		seen[nseen++][1] = h;
		ntraces++;
		one_trace(path, trace, size, 0);
		one_trace(path, trace, size, 1);
	}
	free(trace);
}

static int visit(const char *path, const struct stat *st, int flag,
		 struct FTW *ftw)
{
	size_t n = strlen(path);

	(void) st;
	(void) ftw;
	if (flag == FTW_F && n >= 9 && !strcmp(path + n - 9, "/trace.pt"))
		trace_file(path);
	return 0;
}

int main(int argc, char **argv)
{
	int i;

	(void) pkt_sample;
	if (argc < 2) {
		printf("usage: pkt_batch CONFORMANCE [FILE.pt ...]\n");
		printf("0 passed, 1 failed\n");
		return 2;
	}
	if (!CHECK(nftw(argv[1], visit, 16, FTW_PHYS) == 0))
		printf("cannot walk %s\n", argv[1]);
	for (i = 2; i < argc; ++i)
		trace_file(argv[i]);
	/* The corpus has hundreds of distinct traces. */
	CHECK(ntraces >= (argc > 2 ? 1u : 100u));
	printf("%zu traces\n", ntraces);
	return check_done();
}

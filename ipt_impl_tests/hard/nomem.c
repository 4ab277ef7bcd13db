/* nomem.c - every allocation fails once.
 *
 * ipt.h is built here with a counting allocator, reachable two ways: as the
 * compile-time default (IPT_MALLOC/IPT_REALLOC/IPT_FREE) and as a runtime
 * allocator (struct ipt_allocator, with and without a realloc of its own)
 * handed to the ipt_*_with constructors.  Each scenario (scenarios.h) first
 * runs with no failures to count its allocations; then for every N it runs
 * again with the Nth allocation failing.  For every N exactly one of these
 * holds:
 *
 *   - the public call during which the allocation failed returned
 *     -pte_nomem (NULL for the allocating functions);
 *   - the call succeeded, the allocation that failed was one that only
 *     grows a cache (ipt.h marks those: IPT__CACHE_ALLOC_HOOK; its policy
 *     is that allocations that only grow a cache never fail a decode), and
 *     the whole decode came out exactly as without the failure
 *     ("absorbed").
 *
 * Either way the scenario goes on as a program would (resynchronizing,
 * retrying), frees everything, and nothing may leak.  No call may return
 * -pte_nomem without an allocation failing in it.  The runtime allocator
 * also checks that every free names a live block with the size it was
 * allocated with, and that an object made with it never touches the
 * default.
 *
 *     nomem CONFORMANCE
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counting allocator ---- */

static unsigned long nm_calls;    /* allocations attempted */
static unsigned long nm_fail_at;  /* the one to fail, 1-based; 0: none */
static unsigned long nm_failures; /* how many failed so far */
static size_t nm_fail_size;       /* the size the failed one asked for */
static int nm_in_cache;           /* inside ipt__alloc_cache */
static int nm_fail_in_cache;      /* the failed one was a cache's */
static long nm_live;              /* blocks allocated, not freed */
static unsigned long nm_bad_free; /* frees of unknown blocks, wrong sizes */

/* Which way the allocator is reached; calls the other way are counted. */
enum nm_way { nm_default, nm_runtime };
static enum nm_way nm_way;
static unsigned long nm_wrong_way;

struct nm_head {
	size_t size;
	size_t magic;
};

#define NM_MAGIC ((size_t) 0x6e6f6d656dul)

static int nm_should_fail(size_t size)
{
	if (++nm_calls == nm_fail_at) {
		nm_failures++;
		nm_fail_size = size;
		nm_fail_in_cache = nm_in_cache;
		return 1;
	}
	return 0;
}

static void *nm_malloc(size_t size)
{
	struct nm_head *h;

	if (nm_should_fail(size))
		return NULL;
	h = (struct nm_head *) malloc(sizeof(*h) + size);
	if (!h)
		abort();
	h->size = size;
	h->magic = NM_MAGIC;
	nm_live++;
	return h + 1;
}

static struct nm_head *nm_head(void *ptr)
{
	struct nm_head *h = (struct nm_head *) ptr - 1;

	if (h->magic != NM_MAGIC)
		abort();
	return h;
}

static void nm_free(void *ptr)
{
	struct nm_head *h;

	if (!ptr)
		return;
	h = nm_head(ptr);
	h->magic = 0;
	nm_live--;
	free(h);
}

static void *nm_realloc(void *ptr, size_t size)
{
	struct nm_head *h, *n;

	if (!ptr)
		return nm_malloc(size);
	if (nm_should_fail(size))
		return NULL;
	h = nm_head(ptr);
	n = (struct nm_head *) realloc(h, sizeof(*n) + size);
	if (!n)
		abort();
	n->size = size;
	return n + 1;
}

static void *nm_default_malloc(size_t size)
{
	nm_wrong_way += nm_way != nm_default;
	return nm_malloc(size);
}

static void *nm_default_realloc(void *ptr, size_t size)
{
	nm_wrong_way += nm_way != nm_default;
	return nm_realloc(ptr, size);
}

static void nm_default_free(void *ptr)
{
	nm_wrong_way += nm_way != nm_default;
	nm_free(ptr);
}

#define IPT_MALLOC(n) nm_default_malloc(n)
#define IPT_REALLOC(p, n) nm_default_realloc(p, n)
#define IPT_FREE(p) nm_default_free(p)
/* ipt.h marks the allocations that only grow a cache. */
#define IPT__CACHE_ALLOC_HOOK(inside) ((void) (nm_in_cache = (inside)))
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"

#include "check.h"
#include "cases.h"

/* The runtime allocator: the same blocks, with sized frees checked.  The
 * context must come back as given. */
static int nm_context;

static void *nm_rt_alloc(void *context, size_t size)
{
	nm_wrong_way += nm_way != nm_runtime || context != &nm_context;
	return nm_malloc(size);
}

static void nm_rt_free(void *context, void *ptr, size_t size)
{
	nm_wrong_way += nm_way != nm_runtime || context != &nm_context;
	if (!ptr || nm_head(ptr)->size != size)
		nm_bad_free++;
	nm_free(ptr);
}

static void *nm_rt_realloc(void *context, void *ptr, size_t old_size,
			   size_t new_size)
{
	nm_wrong_way += nm_way != nm_runtime || context != &nm_context;
	if (!ptr || nm_head(ptr)->size != old_size)
		nm_bad_free++;
	return nm_realloc(ptr, new_size);
}

/* ---- checking each call ---- */

/* Did an allocation fail since the last look? */
static unsigned long nm_seen;

static int nm_hit(void)
{
	if (nm_failures == nm_seen)
		return 0;
	nm_seen = nm_failures;
	return 1;
}

static const char *nm_where;
static int nm_absorbed;

static void nm_complain(int line, const char *msg)
{
	char what[256];

	snprintf(what, sizeof(what), "%s: allocation %lu: line %d %s",
		 nm_where, nm_fail_at, line, msg);
	check_report(0, __FILE__, line, what);
}

/* A call returning a status: if an allocation failed in it, the status
 * must be -pte_nomem, or the failure was absorbed (checked later); if none
 * failed, it must not be -pte_nomem. */
static int nm_status(int status, int line)
{
	if (nm_hit()) {
		if (status != -pte_nomem)
			nm_absorbed = 1;
	} else if (status == -pte_nomem)
		nm_complain(line, "returned -pte_nomem, no allocation failed");
	return status;
}

static void *nm_pointer(void *p, int line)
{
	if (nm_hit()) {
		if (p)
			nm_complain(line, "failed but an object came back");
	} else if (!p)
		nm_complain(line, "returned NULL, no allocation failed");
	return p;
}

#define S(call) nm_status((call), __LINE__)
#define P(type, call) ((type) nm_pointer((call), __LINE__))

#include "scenarios.h"

/* The allocator for a run: NULL (the default) or one of two runtime
 * ones, with and without realloc. */
static const struct ipt_allocator *nm_allocator(int way)
{
	static const struct ipt_allocator with_realloc = {
		nm_rt_alloc, nm_rt_free, &nm_context, nm_rt_realloc
	};
	static const struct ipt_allocator without_realloc = {
		nm_rt_alloc, nm_rt_free, &nm_context, NULL
	};

	nm_way = way ? nm_runtime : nm_default;
	return way == 0 ? NULL : way == 1 ? &with_realloc : &without_realloc;
}

static const char *const nm_way_names[] = {
	"default", "runtime", "runtime without realloc"
};

int main(int argc, char **argv)
{
	const char *conf = argc > 1 ? argv[1] : "ipt_impl_tests/conformance/corpus";
	unsigned long total = 0;
	unsigned long absorbed[sizeof(scenarios) / sizeof(scenarios[0])] = { 0 };
	const size_t nscenarios = sizeof(scenarios) / sizeof(scenarios[0]);
	size_t i, k;
	int way;

	for (i = 0; i < hcase_count; ++i) {
		struct hcase c;

		if (hcase_load(&c, conf, hcase_names[i]) < 0) {
			CHECK(!"conformance case missing");
			continue;
		}
		for (k = 0; k < nscenarios; ++k)
		for (way = 0; way < 3; ++way) {
			const struct ipt_allocator *a = nm_allocator(way);
			char where[256];
			unsigned long n, allocs;
			uint64_t want, got;

			snprintf(where, sizeof(where), "%s on %s, %s",
				 scenarios[k].name, c.name, nm_way_names[way]);
			nm_where = where;

			/* Count the allocations of a run without failures. */
			nm_fail_at = 0;
			nm_calls = 0;
			nm_failures = nm_seen = 0;
			want = scenarios[k].run(&c, a);
			allocs = nm_calls;
			CHECK_EQ(nm_live, 0);
			CHECK(allocs > 0);

			for (n = 1; n <= allocs; ++n) {
				nm_fail_at = n;
				nm_calls = 0;
				nm_failures = nm_seen = 0;
				nm_absorbed = 0;
				got = scenarios[k].run(&c, a);
				if (!CHECK(nm_failures == 1))
					printf("     %s: allocation %lu not "
					       "reached\n", where, n);
				if (!CHECK(nm_seen == nm_failures))
					printf("     %s: allocation %lu failed "
					       "in a call not watched\n",
					       where, n);
				if (nm_absorbed) {
					absorbed[k]++;
					if (!CHECK(got == want))
						printf("     %s: allocation "
						       "%lu failed, not "
						       "reported, and the "
						       "decode changed\n",
						       where, n);
					if (!CHECK(nm_fail_in_cache))
						printf("     %s: allocation "
						       "%lu of %zu bytes "
						       "failed, not "
						       "reported, and it "
						       "was no cache's\n",
						       where, n,
						       nm_fail_size);
				}
				if (nm_live != 0) {
					CHECK_EQ(nm_live, 0);
					printf("     %s: leak after failing "
					       "allocation %lu\n", where, n);
					nm_live = 0;
				}
				total++;
			}

			/* And it still decodes the same. */
			nm_fail_at = 0;
			got = scenarios[k].run(&c, a);
			CHECK(got == want);
			CHECK_EQ(nm_wrong_way, 0);
			CHECK_EQ(nm_bad_free, 0);
			nm_wrong_way = nm_bad_free = 0;
		}
		hcase_free(&c);
	}
	printf("nomem: %lu runs with a failing allocation; absorbed by a "
	       "cache:", total);
	for (k = 0; k < nscenarios; ++k)
		printf(" %s %lu", scenarios[k].name, absorbed[k]);
	printf("\n");
	/* The block decoder reads through the callback, so its page cache
	 * absorbs failures; the packet, event and query decoders and the
	 * encoder have no caches that grow.  (The instruction decoder reads
	 * file sections here, but its block decoder's caches may grow.) */
	for (k = 0; k < nscenarios; ++k) {
		if (!strcmp(scenarios[k].name, "blk"))
			CHECK(absorbed[k] > 0);
		else if (strcmp(scenarios[k].name, "insn"))
			CHECK_EQ(absorbed[k], 0);
	}
	return check_done();
}

/* The image's memory through a callback (>>img): address spaces passed to the
 * callback, the page cache (reads are served from it, invalidation brings
 * new bytes, the limit holds), short reads at the end of a mapping exactly
 * as the uncached callback gives them, generations, and argument errors.
 *
 * The internal interface is static, so this test compiles its own private
 * copy of the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"

#include <stddef.h>
#include <string.h>

/* A small machine: two address spaces (cr3 0x1000 and 0x2000) with their
 * own mappings, each mapping [begin, end) holding bytes derived from the
 * address space and address, plus a "version" the test bumps to change
 * memory. */
struct mapping {
	uint64_t cr3, begin, end;
};

static const struct mapping maps[] = {
	{ 0x1000, 0x400000, 0x402345 },
	/* adjacent to the first: a read crossing 0x402345 stops there */
	{ 0x1000, 0x402345, 0x403000 },
	{ 0x1000, 0x404800, 0x404810 },
	{ 0x1000, 0x7ffffffff000ull, 0x800000000000ull },
	{ 0x2000, 0x400000, 0x401000 },
	{ 0x2000, 0x401000, 0x401ff9 },
	{ 0x2000, 0xfffffffffffff000ull, 0 },
};

struct machine {
	int calls;
	/* Calls that found memory. */
	int found;
	uint8_t version;
	uint64_t last_cr3;
	size_t last_size;
	/* Changed memory: one address whose byte is patched. */
	uint64_t patch_addr;
	uint8_t patch;
};

static uint8_t mem_byte(const struct machine *m, uint64_t cr3, uint64_t addr)
{
	if (m->patch_addr && addr == m->patch_addr)
		return m->patch;
	return (uint8_t) ((addr * 7) ^ (addr >> 8) ^ (cr3 >> 12) ^ m->version);
}

static int machine_read(uint8_t *buffer, size_t size,
			const struct pt_asid *asid, uint64_t ip, void *context)
{
	struct machine *m = (struct machine *) context;
	size_t i, j, n;

	m->calls += 1;
	m->last_cr3 = asid ? asid->cr3 : 0;
	m->last_size = size;
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); ++i) {
		const struct mapping *map = &maps[i];
		uint64_t avail;

		/* A wildcard cr3 sees the first address space. */
		if (asid && asid->cr3 != map->cr3 &&
		    !(asid->cr3 == pt_asid_no_cr3 && map->cr3 == 0x1000))
			continue;
		if (ip < map->begin || (map->end && map->end <= ip))
			continue;
		/* end 0 is the top of the address space */
		avail = map->end - ip;
		n = size;
		if (avail < n)
			n = (size_t) avail;
		for (j = 0; j < n; ++j)
			buffer[j] = mem_byte(m, map->cr3, ip + j);
		m->found += 1;
		return (int) n;
	}
	return -pte_nomap;
}

static void mk_asid(struct pt_asid *asid, uint64_t cr3)
{
	pt_asid_init(asid);
	asid->cr3 = cr3;
}

static void test_errors(void)
{
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[16];
	int isid;

	image = pt_image_alloc("errors");
	CHECK(image != NULL);
	CHECK(strcmp(pt_image_name(image), "errors") == 0);
	CHECK(pt_image_name(NULL) == NULL);
	CHECK_EQ(pt_image_set_callback(NULL, machine_read, NULL), -pte_invalid);
	CHECK_EQ(ipt_image_invalidate(NULL, NULL, 0, 1), -pte_invalid);
	CHECK_EQ(ipt_image_invalidate(image, NULL, 2, 1), -pte_invalid);
	CHECK_EQ(ipt_image_set_cache_limit(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_image_copy(NULL, image), -pte_invalid);
	CHECK_EQ(pt_image_copy(image, NULL), -pte_invalid);
	CHECK_EQ(pt_image_copy(image, image), 0);
	CHECK_EQ(pt_image_remove_by_asid(NULL, NULL), -pte_invalid);
	CHECK_EQ(pt_image_remove_by_filename(image, NULL, NULL), -pte_invalid);
	CHECK_EQ(pt_image_remove_by_filename(NULL, "x", NULL), -pte_invalid);
	CHECK_EQ(pt_image_remove_by_asid(image, NULL), 0);
	CHECK_EQ(pt_image_remove_by_filename(image, "x", NULL), 0);

	/* Without a callback or sections, nothing is mapped. */
	mk_asid(&asid, 0x1000);
	CHECK_EQ(ipt__image_read(image, &isid, buf, sizeof(buf), &asid,
				 0x400000), -pte_nomap);
	CHECK_EQ(ipt__image_read(NULL, &isid, buf, sizeof(buf), &asid,
				 0x400000), -pte_internal);
	CHECK_EQ(ipt__image_read(image, NULL, buf, sizeof(buf), &asid,
				 0x400000), -pte_internal);
	pt_image_free(image);
	pt_image_free(NULL);

	image = pt_image_alloc(NULL);
	CHECK(image != NULL && pt_image_name(image) == NULL);
	pt_image_free(image);
}

/* The callback sees the decoder's address space; the cache keeps address
 * spaces apart. */
static void test_asid(void)
{
	struct machine m;
	struct pt_image *image;
	struct pt_asid a1, a2, any;
	uint8_t buf[16];
	int isid = -1;

	memset(&m, 0, sizeof(m));
	image = pt_image_alloc(NULL);
	CHECK_EQ(pt_image_set_callback(image, machine_read, &m), 0);
	mk_asid(&a1, 0x1000);
	mk_asid(&a2, 0x2000);
	pt_asid_init(&any);

	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a1, 0x400100), 16);
	CHECK_EQ(isid, 0);
	CHECK_EQ(m.last_cr3, 0x1000);
	CHECK_EQ(buf[0], mem_byte(&m, 0x1000, 0x400100));
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a2, 0x400100), 16);
	CHECK_EQ(m.last_cr3, 0x2000);
	CHECK_EQ(buf[0], mem_byte(&m, 0x2000, 0x400100));
	CHECK_EQ(m.calls, 2);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &any, 0x400100), 16);
	CHECK_EQ(m.last_cr3, pt_asid_no_cr3);
	CHECK_EQ(m.calls, 3);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a1, 0x400110), 16);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a2, 0x400110), 16);
	CHECK_EQ(buf[0], mem_byte(&m, 0x2000, 0x400110));
	CHECK_EQ(m.calls, 3);

	/* Only cr3 0x2000 has memory at 0x401800. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a1, 0x401800), 16);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a2, 0x401ff0), 9);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a2, 0x402000),
		 -pte_nomap);

	/* Invalidating one address space keeps the other's pages. */
	m.calls = 0;
	CHECK_EQ(ipt_image_invalidate(image, &a2, 0, UINT64_MAX), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a1, 0x400100), 16);
	CHECK_EQ(m.calls, 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a2, 0x400100), 16);
	CHECK_EQ(m.calls, 1);
	/* An asid with only a vmcs given matches every cr3. */
	{
		struct pt_asid vm;

		pt_asid_init(&vm);
		vm.vmcs = 0x5000;
		CHECK_EQ(ipt_image_invalidate(image, &vm, 0x400000, 0x401000),
			 0);
	}
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a1, 0x400100), 16);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 16, &a2, 0x400100), 16);
	CHECK_EQ(m.calls, 3);

	pt_image_free(image);
}

/* Repeated reads come from the cache; changed memory is seen after
 * ipt_image_invalidate, and not before. */
static void test_invalidate(void)
{
	struct machine m;
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[16];
	uint64_t gen;
	int isid, i;

	memset(&m, 0, sizeof(m));
	image = pt_image_alloc(NULL);
	gen = ipt__image_generation(image);
	CHECK_EQ(pt_image_set_callback(image, machine_read, &m), 0);
	CHECK(ipt__image_generation(image) != gen);
	mk_asid(&asid, 0x1000);

	for (i = 0; i < 1000; ++i)
		CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
					 0x400000 + (uint64_t) (i % 100) * 3),
			 15);
	CHECK_EQ(m.calls, 1);
	/* A page, and a byte to see whether the mapping goes on. */
	CHECK_EQ(m.last_size, 0x1001);

	/* A read across a page boundary fills the next page. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x400ff8), 15);
	CHECK_EQ(m.calls, 2);
	CHECK_EQ(buf[14], mem_byte(&m, 0x1000, 0x401006));
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x401800), 15);
	CHECK_EQ(m.calls, 2);

	/* Change a byte: the cache still has the old one. */
	m.patch_addr = 0x400005;
	m.patch = (uint8_t) ~mem_byte(&m, 0x1000, 0x400005);
	m.patch_addr = 0;
	{
		uint8_t old = mem_byte(&m, 0x1000, 0x400005);

		m.patch_addr = 0x400005;
		CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
					 0x400000), 15);
		CHECK_EQ(buf[5], old);
		CHECK_EQ(m.calls, 2);

		/* Invalidating elsewhere changes nothing... */
		gen = ipt__image_generation(image);
		CHECK_EQ(ipt_image_invalidate(image, &asid, 0x401000,
					      0x402000), 0);
		CHECK(ipt__image_generation(image) != gen);
		CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
					 0x400000), 15);
		CHECK_EQ(buf[5], old);
		CHECK_EQ(m.calls, 2);

		/* ...an empty range neither... */
		CHECK_EQ(ipt_image_invalidate(image, &asid, 0x400005,
					      0x400005), 0);
		CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
					 0x400000), 15);
		CHECK_EQ(buf[5], old);

		/* ...invalidating the byte brings the new one. */
		CHECK_EQ(ipt_image_invalidate(image, &asid, 0x400005,
					      0x400006), 0);
		CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
					 0x400000), 15);
		CHECK_EQ(buf[5], m.patch);
		CHECK_EQ(m.calls, 3);
	}

	/* NULL invalidates every address space. */
	m.version = 1;
	CHECK_EQ(ipt_image_invalidate(image, NULL, 0, UINT64_MAX), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x401800), 15);
	CHECK_EQ(buf[0], mem_byte(&m, 0x1000, 0x401800));
	CHECK_EQ(m.calls, 4);

	/* A new callback starts from scratch. */
	CHECK_EQ(pt_image_set_callback(image, machine_read, &m), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x401800), 15);
	CHECK_EQ(m.calls, 5);
	CHECK_EQ(pt_image_set_callback(image, NULL, NULL), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x401800),
		 -pte_nomap);

	pt_image_free(image);
}

static void test_limit(void)
{
	struct machine m;
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[16];
	int isid, i, round;

	memset(&m, 0, sizeof(m));
	image = pt_image_alloc(NULL);
	CHECK_EQ(pt_image_set_callback(image, machine_read, &m), 0);
	mk_asid(&asid, 0x1000);

	/* The default limit is IPT_IMAGE_CACHE_LIMIT. */
	CHECK_EQ(image->pages.max_pages, IPT_IMAGE_CACHE_LIMIT / 4096);

	/* Three pages' worth, rounded down. */
	CHECK_EQ(ipt_image_set_cache_limit(image, 3 * 4096 + 100), 0);
	for (round = 0; round < 2; ++round) {
		for (i = 0; i < 3; ++i)
			CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
						 0x400000 + i * 4096ull), 15);
	}
	CHECK_EQ(m.calls, 3);
	CHECK_EQ(image->pages.npages, 3);

	/* A fourth page pushes out the least recently used one (0x400000). */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
				 0x7ffffffff000ull), 15);
	CHECK_EQ(m.calls, 4);
	CHECK_EQ(image->pages.npages, 3);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x401000), 15);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x402100), 15);
	CHECK_EQ(m.calls, 4);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x400000), 15);
	CHECK_EQ(m.calls, 5);
	CHECK_EQ(image->pages.npages, 3);

	/* Many pages never hold more than the limit. */
	for (i = 0; i < 64; ++i)
		(void) ipt__image_read(image, &isid, buf, 15, &asid,
				       0x7ffffffff000ull + i * 64ull);
	CHECK(image->pages.npages <= 3);

	/* Zero turns the cache off: every read calls the callback. */
	CHECK_EQ(ipt_image_set_cache_limit(image, 0), 0);
	m.calls = 0;
	for (i = 0; i < 10; ++i)
		CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid,
					 0x400000), 15);
	CHECK_EQ(m.calls, 10);
	CHECK_EQ(m.last_size, 15);
	CHECK_EQ(image->pages.npages, 0);

	/* Less than a page is off, too. */
	CHECK_EQ(ipt_image_set_cache_limit(image, 4095), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x400000), 15);
	CHECK_EQ(m.calls, 11);
	CHECK_EQ(image->pages.npages, 0);

	pt_image_free(image);
}

/* Whatever the cache, a read gives what one call of the callback gives:
 * compare a cached and an uncached image over many reads, including reads
 * across the ends of mappings, between adjacent mappings, across pages and
 * at the top of the address space. */
static void test_same_as_uncached(void)
{
	static const uint64_t spots[] = {
		0x400000, 0x400ff0, 0x401ff8, 0x402330, 0x402340, 0x402345,
		0x402ff0, 0x403000, 0x4047f8, 0x404800, 0x404808, 0x40480f,
		0x401ff0, 0x7ffffffff000ull, 0x7ffffffffff8ull,
		0xfffffffffffff000ull, 0xfffffffffffffff8ull,
		0xffffffffffffffffull,
	};
	static const uint64_t cr3s[] = { 0x1000, 0x2000, 0x3000 };
	struct machine mc, mu;
	struct pt_image *cached, *uncached;
	uint32_t seed = 1;
	int i, mismatches = 0, ok = 0;

	memset(&mc, 0, sizeof(mc));
	memset(&mu, 0, sizeof(mu));
	cached = pt_image_alloc(NULL);
	uncached = pt_image_alloc(NULL);
	CHECK_EQ(pt_image_set_callback(cached, machine_read, &mc), 0);
	CHECK_EQ(pt_image_set_callback(uncached, machine_read, &mu), 0);
	CHECK_EQ(ipt_image_set_cache_limit(cached, 64 * 4096), 0);
	CHECK_EQ(ipt_image_set_cache_limit(uncached, 0), 0);

	for (i = 0; i < 20000; ++i) {
		struct pt_asid asid;
		uint8_t bc[64], bu[64];
		int sc, su, ic = -1, iu = -1;
		uint64_t addr;
		uint16_t size;

		seed = seed * 1103515245u + 12345u;
		mk_asid(&asid, cr3s[(seed >> 8) % 3]);
		addr = spots[(seed >> 12) % (sizeof(spots) / sizeof(spots[0]))];
		addr += (seed >> 20) % 24;
		addr -= 8;
		size = (uint16_t) (1 + (seed >> 3) % 40);

		memset(bc, 0, sizeof(bc));
		memset(bu, 0, sizeof(bu));
		sc = ipt__image_read(cached, &ic, bc, size, &asid, addr);
		su = ipt__image_read(uncached, &iu, bu, size, &asid, addr);
		if (sc != su || ic != iu ||
		    (su > 0 && memcmp(bc, bu, (size_t) su) != 0)) {
			if (mismatches++ < 5)
				printf("mismatch at %llx (cr3 %llx, %u): %d %d\n",
				       (unsigned long long) addr,
				       (unsigned long long) asid.cr3, size, sc,
				       su);
		} else if (su > 0)
			ok += 1;
	}
	CHECK_EQ(mismatches, 0);
	CHECK(ok > 5000);
	/* ...with far fewer calls (errors are not cached). */
	printf("calls finding memory: %d cached, %d uncached\n", mc.found,
	       mu.found);
	CHECK(mc.found * 20 < mu.found);

	pt_image_free(cached);
	pt_image_free(uncached);
}

/* A callback that gives fewer bytes than a page even inside a mapping only
 * costs more calls; one failing is not cached. */
static int flaky_calls;

static int flaky_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *context)
{
	int *fail = (int *) context;

	(void) asid;
	flaky_calls += 1;
	if (*fail)
		return -pte_bad_image;
	if (size > 1)
		size = 1;
	buffer[0] = (uint8_t) ip;
	return (int) size;
}

static void test_callback_errors(void)
{
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[16];
	int isid, fail = 1;

	image = pt_image_alloc(NULL);
	CHECK_EQ(pt_image_set_callback(image, flaky_read, &fail), 0);
	mk_asid(&asid, 0x1000);
	flaky_calls = 0;
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1234),
		 -pte_bad_image);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1234),
		 -pte_bad_image);
	/* Each miss asks at the page start, then at the address. */
	CHECK_EQ(flaky_calls, 4);
	fail = 0;
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1234), 1);
	CHECK_EQ(buf[0], 0x34);
	CHECK_EQ(flaky_calls, 6);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1234), 1);
	CHECK_EQ(flaky_calls, 6);
	/* The page start is known now: one call. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1235), 1);
	CHECK_EQ(buf[0], 0x35);
	CHECK_EQ(flaky_calls, 7);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1000), 1);
	CHECK_EQ(buf[0], 0x00);
	CHECK_EQ(flaky_calls, 7);
	pt_image_free(image);
}

/* Size-versioned asids: a caller's smaller struct leaves the rest wild. */
static void test_asid_copy(void)
{
	struct pt_asid user, asid;

	memset(&user, 0xab, sizeof(user));
	user.size = sizeof(user.size) + sizeof(user.cr3);
	user.cr3 = 0x1000;
	CHECK_EQ(ipt__asid_from_user(&asid, &user), 0);
	CHECK_EQ(asid.size, sizeof(asid));
	CHECK_EQ(asid.cr3, 0x1000);
	CHECK_EQ(asid.vmcs, pt_asid_no_vmcs);

	user.size = sizeof(user) + 32;
	user.vmcs = 0x2000;
	CHECK_EQ(ipt__asid_from_user(&asid, &user), 0);
	CHECK_EQ(asid.size, sizeof(asid));
	CHECK_EQ(asid.vmcs, 0x2000);

	CHECK_EQ(ipt__asid_from_user(&asid, NULL), 0);
	CHECK_EQ(asid.cr3, pt_asid_no_cr3);
	CHECK_EQ(asid.vmcs, pt_asid_no_vmcs);

	memset(&user, 0, sizeof(user));
	asid.cr3 = 0x3000;
	asid.vmcs = 0x4000;
	/* Up to vmcs: cr3 and no more (the offset differs between x86-64
	 * and 32-bit x86). */
	CHECK_EQ(ipt__asid_to_user(&user, &asid,
				   offsetof(struct pt_asid, vmcs)), 0);
	CHECK_EQ(user.size, offsetof(struct pt_asid, vmcs));
	CHECK_EQ(user.cr3, 0x3000);
	CHECK_EQ(user.vmcs, 0);
	CHECK_EQ(ipt__asid_to_user(&user, &asid, sizeof(user.size) - 1),
		 -pte_invalid);

	/* Matching: wildcards on either side. */
	{
		struct pt_asid a, b;

		pt_asid_init(&a);
		pt_asid_init(&b);
		CHECK_EQ(ipt__asid_match(&a, &b), 1);
		a.cr3 = 1;
		CHECK_EQ(ipt__asid_match(&a, &b), 1);
		b.cr3 = 2;
		CHECK_EQ(ipt__asid_match(&a, &b), 0);
		b.cr3 = 1;
		a.vmcs = 5;
		CHECK_EQ(ipt__asid_match(&a, &b), 1);
		b.vmcs = 6;
		CHECK_EQ(ipt__asid_match(&a, &b), 0);
		CHECK_EQ(ipt__asid_match(&a, NULL), -pte_internal);
	}
}

/* Memory everywhere: each byte derived from its address. */
static int everywhere_read(uint8_t *buffer, size_t size,
			   const struct pt_asid *asid, uint64_t ip,
			   void *context)
{
	size_t i;

	(void) asid;
	*(int *) context += 1;
	for (i = 0; i < size; ++i)
		buffer[i] = (uint8_t) ((ip + i) * 13 ^ (ip + i) >> 12);
	return (int) size;
}

/* The hash table grows with the entries, to the smallest power of two at
 * least the limit's pages, and what was cached stays cached through each
 * doubling. */
static void test_grow(void)
{
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[8];
	int isid, calls = 0, i, round, j;

	image = pt_image_alloc(NULL);
	CHECK_EQ(pt_image_set_callback(image, everywhere_read, &calls), 0);
	mk_asid(&asid, 0x1000);
	CHECK_EQ(ipt_image_set_cache_limit(image, 40 * 4096), 0);
	CHECK_EQ(image->pages.nbuckets, 0);
	for (round = 0; round < 2; ++round) {
		for (i = 0; i < 40; ++i) {
			uint64_t addr = 0x10000000 + i * 4096ull + 5;

			CHECK_EQ(ipt__image_read(image, &isid, buf, 8, &asid,
						 addr), 8);
			for (j = 0; j < 8; ++j)
				CHECK_EQ(buf[j], (uint8_t) ((addr + j) * 13 ^
							    (addr + j) >> 12));
			if (!round && i == 0)
				CHECK_EQ(image->pages.nbuckets, 16);
			if (!round && i == 16)
				CHECK_EQ(image->pages.nbuckets, 32);
		}
		/* The first round fills each page once; the second hits. */
		CHECK_EQ(calls, 40);
	}
	CHECK_EQ(image->pages.npages, 40);
	CHECK_EQ(image->pages.nbuckets, 64);

	/* More pages than the limit: the table stays at its size. */
	for (i = 0; i < 100; ++i)
		CHECK_EQ(ipt__image_read(image, &isid, buf, 8, &asid,
					 0x20000000 + i * 4096ull), 8);
	CHECK_EQ(image->pages.npages, 40);
	CHECK_EQ(image->pages.nbuckets, 64);
	pt_image_free(image);
}

int main(void)
{
	test_errors();
	test_asid();
	test_invalidate();
	test_limit();
	test_grow();
	test_same_as_uncached();
	test_callback_errors();
	test_asid_copy();
	return check_done();
}

/* The image under memory pressure (>>img): every allocation in turn fails,
 * and each time the image either does what was asked or says -pte_nomem,
 * leaves itself consistent, and leaks nothing.  Reads through the callback
 * never fail for want of memory: without a cache page they go straight to
 * the callback.
 *
 * The allocator is this file's own, so the test compiles its own private
 * copy of the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include <stdlib.h>

/* Allocations left before one fails (-1: none fails); with nomem_once,
 * only that one fails. */
static long nomem_countdown = -1, nomem_live;
static int nomem_once;

static int nomem_fail(void)
{
	if (nomem_countdown == 0) {
		if (nomem_once)
			nomem_countdown = -1;
		return 1;
	}
	if (nomem_countdown > 0)
		nomem_countdown -= 1;
	return 0;
}

static void *nomem_malloc(size_t size)
{
	void *p;

	if (nomem_fail())
		return NULL;
	p = malloc(size);
	if (p)
		nomem_live += 1;
	return p;
}

static void *nomem_realloc(void *ptr, size_t size)
{
	void *p;

	if (nomem_fail())
		return NULL;
	p = realloc(ptr, size);
	if (p && !ptr)
		nomem_live += 1;
	return p;
}

static void nomem_free(void *ptr)
{
	if (ptr)
		nomem_live -= 1;
	free(ptr);
}

#define IPT_MALLOC(n) nomem_malloc(n)
#define IPT_REALLOC(p, n) nomem_realloc(p, n)
#define IPT_FREE(p) nomem_free(p)
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"

#include <string.h>
#include <unistd.h>

static char dir[64], file_a[96];

static uint8_t mem_byte(uint64_t addr)
{
	return (uint8_t) (addr ^ (addr >> 8));
}

static int read_mem(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context)
{
	size_t i;

	(void) asid;
	(void) context;
	if (ip < 0x10000 || 0x20000 <= ip)
		return -pte_nomap;
	if (0x20000 - ip < size)
		size = (size_t) (0x20000 - ip);
	for (i = 0; i < size; ++i)
		buffer[i] = mem_byte(ip + i);
	return (int) size;
}

/* One run: everything the image does, with allocation number n failing
 * (and all after it, if sticky).  Counts the operations that reported
 * -pte_nomem. */
static int run(long n, int sticky, int *bad)
{
	struct pt_image_section_cache *iscache = NULL;
	struct pt_image *image, *copy;
	struct pt_asid asid;
	uint8_t buf[32];
	int status, isid, i, nomem = 0;

	nomem_countdown = n;
	nomem_once = !sticky;
	*bad = 0;
#define EXPECT(cond)                                                         \
	do {                                                                 \
		if (!(cond)) {                                               \
			printf("n=%ld sticky=%d line %d: %s\n", n, sticky,    \
			       __LINE__, #cond);                             \
			*bad += 1;                                           \
		}                                                            \
	} while (0)
#define OK_OR_NOMEM(expr)                                                    \
	do {                                                                 \
		status = (expr);                                             \
		if (status == -pte_nomem)                                    \
			nomem += 1;                                          \
		else                                                         \
			EXPECT(status >= 0);                                 \
	} while (0)

	image = pt_image_alloc("image");
	if (!image)
		return 1;
	pt_asid_init(&asid);
	EXPECT(pt_image_set_callback(image, read_mem, NULL) == 0);
	EXPECT(ipt_image_set_cache_limit(image, 4 * 4096) == 0);

	/* Callback reads: always right. */
	for (i = 0; i < 40; ++i) {
		uint64_t addr = 0x10000 + (uint64_t) i * 0x333;

		status = ipt__image_read(image, &isid, buf, 20, &asid, addr);
		EXPECT(status == 20);
		EXPECT(status != 20 || (buf[0] == mem_byte(addr) &&
					buf[19] == mem_byte(addr + 19)));
	}

	/* Sections: added whole or not at all. */
	OK_OR_NOMEM(pt_image_add_file(image, file_a, 0, 0x100, NULL, 0x1000));
	if (status == 0) {
		OK_OR_NOMEM(pt_image_add_file(image, file_a, 0x80, 0x10, NULL,
					      0x1040));
		if (status == 0) {
			status = ipt__image_read(image, &isid, buf, 1, &asid,
						 0x1040);
			if (status == -pte_nomem)
				nomem += 1;
			else
				EXPECT(status == 1 && buf[0] == 0x80);
		}
		/* Reading loads the file; without memory, -pte_nomem. */
		status = ipt__image_read(image, &isid, buf, 4, &asid, 0x1000);
		if (status == -pte_nomem)
			nomem += 1;
		else
			EXPECT(status == 4 && buf[3] == 3);
		status = ipt__image_read(image, &isid, buf, 4, &asid, 0x1050);
		if (status == -pte_nomem)
			nomem += 1;
		else
			EXPECT(status == 4 && buf[0] == 0x50);
	}

	iscache = pt_iscache_alloc("cache");
	if (iscache) {
		int ia;

		ia = pt_iscache_add_file(iscache, file_a, 0x10, 0x20, 0x3000);
		if (ia == -pte_nomem)
			nomem += 1;
		else {
			EXPECT(ia == 1);
			OK_OR_NOMEM(pt_image_add_cached(image, iscache, ia,
							NULL));
			status = pt_iscache_read(iscache, buf, 4, ia, 0x3001);
			if (status == -pte_nomem)
				nomem += 1;
			else
				EXPECT(status == 4 && buf[0] == 0x11);
		}
		status = pt_iscache_add_file(iscache, file_a, 0x10, 0x20,
					     0x4000);
		if (status == -pte_nomem)
			nomem += 1;
		else
			EXPECT(status > 0);
	}

	copy = pt_image_alloc(NULL);
	if (copy) {
		status = pt_image_copy(copy, image);
		EXPECT(status >= 0);
		nomem += status > 0;
		pt_image_free(copy);
	}
	EXPECT(pt_image_remove_by_filename(image, file_a, NULL) >= 0);
	EXPECT(ipt_image_invalidate(image, NULL, 0, UINT64_MAX) == 0);
	status = ipt__image_read(image, &isid, buf, 20, &asid, 0x10001);
	EXPECT(status == 20 && buf[0] == mem_byte(0x10001));

	pt_iscache_free(iscache);
	pt_image_free(image);
	return nomem;
#undef EXPECT
#undef OK_OR_NOMEM
}

int main(void)
{
	long n, total_allocs;
	int bad, nomem_seen = 0;
	FILE *file;

	strcpy(dir, "/tmp/ipt_nomem_XXXXXX");
	if (!mkdtemp(dir)) {
		CHECK(0);
		return check_done();
	}
	snprintf(file_a, sizeof(file_a), "%s/a.bin", dir);
	file = fopen(file_a, "wb");
	for (n = 0; n < 0x100; ++n)
		fputc((int) n, file);
	fclose(file);

	/* A run without failures, counting the allocations. */
	nomem_countdown = -1;
	nomem_live = 0;
	CHECK_EQ(run(-1, 0, &bad), 0);
	CHECK_EQ(bad, 0);
	CHECK_EQ(nomem_live, 0);
	nomem_countdown = 1000000;
	(void) run(1000000, 0, &bad);
	total_allocs = 1000000 - nomem_countdown;
	CHECK(total_allocs > 20);

	for (n = 0; n <= 2 * total_allocs + 1; ++n) {
		int sticky = n & 1;

		nomem_live = 0;
		nomem_seen += run(n / 2, sticky, &bad) > 0;
		CHECK_EQ(bad, 0);
		if (nomem_live != 0)
			printf("n=%ld: %ld allocations leaked\n", n / 2,
			       nomem_live);
		CHECK_EQ(nomem_live, 0);
	}
	CHECK(nomem_seen > 0);

	unlink(file_a);
	rmdir(dir);
	return check_done();
}

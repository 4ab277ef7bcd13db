/* One script of image and image-section-cache calls, compiled twice: with
 * -DUSE_LIBIPT against Debian's libipt (<intel-pt.h>, -lipt), otherwise
 * against ipt.h.  Each call's result is printed; img_diff.sh compares the
 * two outputs line by line.  What the public API can observe: section
 * identifiers, bytes read from the cache, error codes, and how many pieces
 * removal finds (which shows how overlapping sections were split).
 *
 * Usage: img_diff DIR (a directory to write the test files in). */
#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

#include <stdio.h>
#include <string.h>

static char fa[256], fb[256], fc[256];

static void mk(const char *name, unsigned seed, size_t size)
{
	FILE *file = fopen(name, "wb");
	size_t i;

	for (i = 0; i < size; ++i)
		fputc((int) ((i * 13 + seed) & 0xff), file);
	fclose(file);
}

static void asid(struct pt_asid *a, uint64_t cr3, uint64_t vmcs)
{
	pt_asid_init(a);
	a->cr3 = cr3;
	a->vmcs = vmcs;
}

#define SHOW(expr) printf("%-70s %d\n", #expr, (int) (expr))

static void iscache_script(void)
{
	struct pt_image_section_cache *c = pt_iscache_alloc("c");
	uint8_t buf[64];
	int st, i;

	SHOW(pt_iscache_add_file(c, fa, 0, 0x100, 0x1000));
	SHOW(pt_iscache_add_file(c, fa, 0, 0x100, 0x1000));
	SHOW(pt_iscache_add_file(c, fa, 0, 0x100, 0x2000));
	SHOW(pt_iscache_add_file(c, fa, 0x10, 0x100, 0x1000));
	SHOW(pt_iscache_add_file(c, fa, 0, 0x10000, 0x3000));
	SHOW(pt_iscache_add_file(c, fa, 0, 0x400, 0x3000));
	SHOW(pt_iscache_add_file(c, fa, 0, 0x10001, 0x3000));
	SHOW(pt_iscache_add_file(c, fa, 0, 0x3ff, 0x3000));
	SHOW(pt_iscache_add_file(c, fa, 0x3ff, 0x10, 0x4000));
	SHOW(pt_iscache_add_file(c, fa, 0x400, 0x10, 0x4000));
	SHOW(pt_iscache_add_file(c, fa, 0x500, 0x10, 0x4000));
	SHOW(pt_iscache_add_file(c, fb, 0, 0, 0x5000));
	/* libipt 2.3 says -pte_bad_file, 2.0 -pte_invalid. */
	SHOW(pt_iscache_add_file(c, "/nonexistent/file", 0, 1, 0x5000) < 0);
	SHOW(pt_iscache_add_file(c, NULL, 0, 1, 0x5000));
	SHOW(pt_iscache_add_file(NULL, fa, 0, 1, 0x5000));
	SHOW(pt_iscache_add_file(c, fb, 0x20, 0x20, 0x5000));
	SHOW(pt_iscache_add_file(c, fb, 0x20, 0x20, 0x5000));

	for (i = -1; i < 12; ++i) {
		static const uint64_t at[] = { 0x1000, 0x1001, 0x10ff, 0x1100,
					       0x2080, 0x3000, 0x33ff, 0x3400,
					       0xfff, 0x4000, 0x5000, 0x501f };
		size_t k;

		for (k = 0; k < sizeof(at) / sizeof(at[0]); ++k) {
			memset(buf, 0, sizeof(buf));
			st = pt_iscache_read(c, buf, 16, i, at[k]);
			printf("read isid %d at %llx: %d %02x %02x\n", i,
			       (unsigned long long) at[k], st, buf[0],
			       st > 1 ? buf[st - 1] : 0);
		}
	}
	SHOW(pt_iscache_read(c, buf, 0, 1, 0x1000));
	SHOW(pt_iscache_read(c, NULL, 4, 1, 0x1000));
	SHOW(pt_iscache_read(NULL, buf, 4, 1, 0x1000));
	SHOW(pt_iscache_set_limit(c, 0x100));
	SHOW(pt_iscache_read(c, buf, 64, 1, 0x1010));
	SHOW(pt_iscache_read(c, buf, 64, 5, 0x3010));
	SHOW(pt_iscache_set_limit(c, 0));
	SHOW(pt_iscache_read(c, buf, 64, 5, 0x33f0));
	SHOW(pt_iscache_set_limit(NULL, 0));
	printf("name %s\n", pt_iscache_name(c));
	pt_iscache_free(c);
}

static void image_script(void)
{
	struct pt_image_section_cache *c = pt_iscache_alloc(NULL);
	struct pt_image *img = pt_image_alloc("img"), *cp;
	struct pt_asid a1, a2, v1, any;
	int ia, ib;

	asid(&a1, 0x1000, pt_asid_no_vmcs);
	asid(&a2, 0x2000, pt_asid_no_vmcs);
	asid(&v1, pt_asid_no_cr3, 0x5000);
	pt_asid_init(&any);

	printf("name %s\n", pt_image_name(img));
	SHOW(pt_image_add_file(img, fa, 0, 0x100, NULL, 0x1000));
	SHOW(pt_image_add_file(img, fb, 0, 0x10, NULL, 0x1080));
	SHOW(pt_image_add_file(img, fc, 0, 0x10, NULL, 0x1000));
	SHOW(pt_image_add_file(img, fc, 0, 0x10, NULL, 0x10f8));
	SHOW(pt_image_add_file(img, fa, 0x400, 0x10, NULL, 0x1000));
	SHOW(pt_image_add_file(img, fa, 0x3ff, 0x10, NULL, 0x9000));
	SHOW(pt_image_add_file(img, NULL, 0, 0x10, NULL, 0x1000));
	SHOW(pt_image_add_file(NULL, fa, 0, 0x10, NULL, 0x1000));
	SHOW(pt_image_add_file(img, "/nonexistent/file", 0, 1, NULL, 0) < 0);

	SHOW(pt_image_remove_by_filename(img, fa, NULL));
	SHOW(pt_image_remove_by_filename(img, fb, NULL));
	SHOW(pt_image_remove_by_filename(img, fc, NULL));
	SHOW(pt_image_remove_by_filename(img, fc, NULL));
	SHOW(pt_image_remove_by_filename(img, NULL, NULL));

	/* Address spaces. */
	SHOW(pt_image_add_file(img, fa, 0, 0x100, &a1, 0x1000));
	SHOW(pt_image_add_file(img, fb, 0, 0x100, &a2, 0x1000));
	SHOW(pt_image_add_file(img, fc, 0, 0x20, &a1, 0x1040));
	SHOW(pt_image_add_file(img, fc, 0, 0x20, &v1, 0x1080));
	SHOW(pt_image_remove_by_filename(img, fa, &a2));
	SHOW(pt_image_remove_by_filename(img, fa, &a1));
	SHOW(pt_image_remove_by_asid(img, &a2));
	SHOW(pt_image_remove_by_asid(img, &any));
	SHOW(pt_image_remove_by_asid(NULL, &any));

	/* Copies.  (libipt copies a split section whole, at the address of
	 * each of its pieces; ipt.h copies each piece as it is mapped.  Only
	 * copies without split sections are compared here.) */
	SHOW(pt_image_add_file(img, fa, 0, 0x100, &a1, 0x1000));
	SHOW(pt_image_add_file(img, fb, 0, 0x100, &a2, 0x1000));
	SHOW(pt_image_add_file(img, fc, 0, 0x20, NULL, 0x3000));
	SHOW(pt_image_add_file(img, fa, 0x10, 0x20, NULL, 0x4000));
	cp = pt_image_alloc(NULL);
	SHOW(pt_image_add_file(cp, fc, 0, 0x20, &a2, 0x1010));
	SHOW(pt_image_add_file(cp, fb, 0, 0x20, NULL, 0x5000));
	SHOW(pt_image_copy(cp, img));
	SHOW(pt_image_copy(cp, cp));
	SHOW(pt_image_copy(NULL, img));
	SHOW(pt_image_copy(cp, NULL));
	SHOW(pt_image_remove_by_filename(cp, fa, NULL));
	SHOW(pt_image_remove_by_filename(cp, fb, NULL));
	SHOW(pt_image_remove_by_filename(cp, fc, NULL));
	pt_image_free(cp);
	SHOW(pt_image_remove_by_asid(img, NULL));

	/* Cached sections. */
	ia = pt_iscache_add_file(c, fa, 0, 0x100, 0x1000);
	ib = pt_iscache_add_file(c, fb, 0, 0x100, 0x1040);
	printf("isids %d %d\n", ia, ib);
	SHOW(pt_image_add_cached(img, c, ia, &a1));
	SHOW(pt_image_add_cached(img, c, ib, &a1));
	SHOW(pt_image_add_cached(img, c, ib, &a2));
	SHOW(pt_image_add_cached(img, c, 0, NULL));
	SHOW(pt_image_add_cached(img, c, 99, NULL));
	SHOW(pt_image_add_cached(img, NULL, ia, NULL));
	SHOW(pt_image_add_cached(NULL, c, ia, NULL));
	SHOW(pt_image_remove_by_filename(img, fa, &a1));
	SHOW(pt_image_remove_by_asid(img, &a1));
	SHOW(pt_image_remove_by_asid(img, NULL));

	pt_image_free(img);
	pt_iscache_free(c);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	snprintf(fa, sizeof(fa), "%s/a.bin", argv[1]);
	snprintf(fb, sizeof(fb), "%s/b.bin", argv[1]);
	snprintf(fc, sizeof(fc), "%s/c.bin", argv[1]);
	mk(fa, 1, 0x400);
	mk(fb, 7, 0x100);
	mk(fc, 99, 0x20);
	iscache_script();
	image_script();
	return 0;
}

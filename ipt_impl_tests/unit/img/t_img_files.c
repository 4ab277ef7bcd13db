/* File sections and the image section cache (>>img, hosted builds): adding
 * files with their validation errors, overlapping sections replacing older
 * ones, address spaces, removal by file name and address space, copies,
 * section identifiers, the cache's limit, sections before the callback, and
 * instructions spanning two sections.
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

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], file_a[96], file_b[96], file_c[96], file_big[96];

static uint8_t byte_a(uint64_t off)
{
	return (uint8_t) (off * 3 + 1);
}

static uint8_t byte_b(uint64_t off)
{
	return (uint8_t) (0xb0 ^ off);
}

static uint8_t byte_big(uint64_t off)
{
	return (uint8_t) (off ^ (off >> 8) ^ (off >> 16));
}

static int write_file(const char *name, uint8_t (*byte)(uint64_t),
		      size_t size)
{
	FILE *file = fopen(name, "wb");
	size_t i;

	if (!file)
		return -1;
	for (i = 0; i < size; ++i)
		fputc(byte(i), file);
	return fclose(file);
}

static int setup(void)
{
	strcpy(dir, "/tmp/ipt_img_XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(file_a, sizeof(file_a), "%s/a.bin", dir);
	snprintf(file_b, sizeof(file_b), "%s/b.bin", dir);
	snprintf(file_c, sizeof(file_c), "%s/code.bin", dir);
	snprintf(file_big, sizeof(file_big), "%s/big.bin", dir);
	if (write_file(file_a, byte_a, 0x1000) < 0 ||
	    write_file(file_b, byte_b, 0x100) < 0 ||
	    write_file(file_big, byte_big, 0x32100) < 0)
		return -1;
	return 0;
}

static void teardown(void)
{
	unlink(file_a);
	unlink(file_b);
	unlink(file_c);
	unlink(file_big);
	rmdir(dir);
}

static void mk_asid(struct pt_asid *asid, uint64_t cr3)
{
	pt_asid_init(asid);
	asid->cr3 = cr3;
}

/* Reads one byte; returns it, or the error code below -255. */
static int peek(struct pt_image *image, const struct pt_asid *asid,
		uint64_t addr, int *isid)
{
	uint8_t b;
	int status;

	status = ipt__image_read(image, isid, &b, 1, asid, addr);
	if (status < 0)
		return status - 256;
	return b;
}

static void test_add_file(void)
{
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[32];
	int isid = -1;

	image = pt_image_alloc("files");
	pt_asid_init(&asid);

	CHECK_EQ(pt_image_add_file(NULL, file_a, 0, 0x1000, NULL, 0x1000),
		 -pte_invalid);
	CHECK_EQ(pt_image_add_file(image, NULL, 0, 0x1000, NULL, 0x1000),
		 -pte_invalid);
	/* The offset must lie in the file. */
	CHECK_EQ(pt_image_add_file(image, file_a, 0x1000, 0x10, NULL, 0x1000),
		 -pte_invalid);
	CHECK_EQ(pt_image_add_file(image, "/nonexistent/ipt/file", 0, 0x10,
				   NULL, 0x1000), -pte_bad_file);

	/* The size is cut to the file: 0x100 bytes from offset 0xf00. */
	CHECK_EQ(pt_image_add_file(image, file_a, 0xf00, 0x10000, NULL,
				   0x10000), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x10000), 15);
	CHECK_EQ(isid, 0);
	CHECK_EQ(buf[0], byte_a(0xf00));
	CHECK_EQ(buf[14], byte_a(0xf0e));
	/* Reads stop at the section's end. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x100f8), 8);
	CHECK_EQ(buf[7], byte_a(0xfff));
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x10100),
		 -pte_nomap);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0xffff),
		 -pte_nomap);

	/* A zero size maps nothing. */
	CHECK_EQ(pt_image_add_file(image, file_b, 0, 0, NULL, 0x20000), 0);
	CHECK_EQ(peek(image, &asid, 0x20000, &isid), -pte_nomap - 256);

	pt_image_free(image);
}

/* A newer section hides what it overlaps of older ones in the same address
 * space; what is left of them stays mapped. */
static void test_overlap(void)
{
	struct pt_image *image, *copy;
	struct pt_asid asid, a1, a2;
	uint8_t buf[32];
	int isid, i;

	image = pt_image_alloc(NULL);
	pt_asid_init(&asid);

	CHECK_EQ(pt_image_add_file(image, file_a, 0, 0x1000, NULL, 0x1000), 0);
	CHECK_EQ(pt_image_add_file(image, file_b, 0x10, 0x20, NULL, 0x1080),
		 0);
	for (i = 0x1000; i < 0x2000; ++i) {
		int want = (0x1080 <= i && i < 0x10a0)
				   ? byte_b((uint64_t) i - 0x1080 + 0x10)
				   : byte_a((uint64_t) i - 0x1000);

		if (peek(image, &asid, (uint64_t) i, &isid) != want) {
			CHECK_EQ(peek(image, &asid, (uint64_t) i, &isid),
				 want);
			break;
		}
	}
	CHECK_EQ(i, 0x2000);
	/* The front part of a.bin ends where b.bin begins. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x107c), 4);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1098), 8);
	CHECK_EQ(buf[0], byte_b(0x28));
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x10a0), 15);
	CHECK_EQ(buf[0], byte_a(0xa0));

	/* A copy reads the same, split parts included. */
	copy = pt_image_alloc("copy");
	CHECK_EQ(pt_image_copy(copy, image), 0);
	for (i = 0x0ff0; i < 0x2010; ++i) {
		int ic = -1, ii = -1;

		if (peek(copy, &asid, (uint64_t) i, &ic) !=
			    peek(image, &asid, (uint64_t) i, &ii) ||
		    ic != ii) {
			CHECK_EQ(peek(copy, &asid, (uint64_t) i, &ic),
				 peek(image, &asid, (uint64_t) i, &ii));
			break;
		}
	}
	CHECK_EQ(i, 0x2010);
	CHECK_EQ(ipt__image_read(copy, &isid, buf, 15, &asid, 0x107c), 4);

	/* Removing b.bin leaves a hole. */
	CHECK_EQ(pt_image_remove_by_filename(image, file_b, NULL), 1);
	CHECK_EQ(peek(image, &asid, 0x1080, &isid), -pte_nomap - 256);
	CHECK_EQ(peek(image, &asid, 0x107f, &isid), byte_a(0x7f));
	/* Both parts of a.bin are a.bin's. */
	CHECK_EQ(pt_image_remove_by_filename(image, file_a, NULL), 2);
	CHECK_EQ(peek(image, &asid, 0x1000, &isid), -pte_nomap - 256);
	CHECK_EQ(pt_image_remove_by_filename(image, file_a, NULL), 0);
	/* The copy is unaffected. */
	CHECK_EQ(peek(copy, &asid, 0x1080, &isid), byte_b(0x10));
	pt_image_free(copy);

	/* Different address spaces don't overlap. */
	mk_asid(&a1, 0x1000);
	mk_asid(&a2, 0x2000);
	CHECK_EQ(pt_image_add_file(image, file_a, 0, 0x100, &a1, 0x5000), 0);
	CHECK_EQ(pt_image_add_file(image, file_b, 0, 0x100, &a2, 0x5000), 0);
	CHECK_EQ(peek(image, &a1, 0x5010, &isid), byte_a(0x10));
	CHECK_EQ(peek(image, &a2, 0x5010, &isid), byte_b(0x10));
	CHECK_EQ(peek(image, &a1, 0x5100, &isid), -pte_nomap - 256);
	/* A wildcard address space finds either; the one found last comes
	 * first. */
	CHECK_EQ(peek(image, &asid, 0x5010, &isid), byte_b(0x10));
	CHECK_EQ(peek(image, &a1, 0x5010, &isid), byte_a(0x10));
	CHECK_EQ(peek(image, &asid, 0x5010, &isid), byte_a(0x10));
	/* Removal by file name honours the address space. */
	CHECK_EQ(pt_image_remove_by_filename(image, file_a, &a2), 0);
	CHECK_EQ(pt_image_remove_by_asid(image, &a1), 1);
	CHECK_EQ(peek(image, &a1, 0x5010, &isid), -pte_nomap - 256);
	CHECK_EQ(peek(image, &a2, 0x5010, &isid), byte_b(0x10));

	/* A section in a wildcard address space replaces overlapped parts in
	 * every address space. */
	CHECK_EQ(pt_image_add_file(image, file_a, 0, 0x10, NULL, 0x5008), 0);
	CHECK_EQ(peek(image, &a2, 0x5008, &isid), byte_a(0));
	CHECK_EQ(peek(image, &a2, 0x5007, &isid), byte_b(7));
	CHECK_EQ(peek(image, &a2, 0x5018, &isid), byte_b(0x18));
	CHECK_EQ(pt_image_remove_by_asid(image, NULL), 3);
	CHECK_EQ(peek(image, &a2, 0x5007, &isid), -pte_nomap - 256);

	pt_image_free(image);
}

static int callback_calls;

static int read_ff(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		   uint64_t ip, void *context)
{
	(void) asid;
	(void) ip;
	(void) context;
	callback_calls += 1;
	memset(buffer, 0xff, size);
	return (int) size;
}

/* Sections come before the callback; a read in a section stops at its end
 * even when the callback has memory beyond. */
static void test_sections_then_callback(void)
{
	struct pt_image *image;
	struct pt_asid asid;
	uint8_t buf[32];
	int isid = -1;

	image = pt_image_alloc(NULL);
	pt_asid_init(&asid);
	CHECK_EQ(pt_image_set_callback(image, read_ff, NULL), 0);
	CHECK_EQ(pt_image_add_file(image, file_b, 0, 0x100, NULL, 0x1000), 0);
	callback_calls = 0;
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1010), 15);
	CHECK_EQ(buf[0], byte_b(0x10));
	CHECK_EQ(callback_calls, 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x10f8), 8);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x1100), 15);
	CHECK_EQ(buf[0], 0xff);
	CHECK_EQ(callback_calls, 1);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0xff8), 15);
	CHECK_EQ(buf[14], 0xff);
	pt_image_free(image);
}

static void test_iscache(void)
{
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct pt_asid asid, a1;
	uint8_t buf[32];
	int isid, i1, i2, i3, i4;
	uint64_t gen;

	iscache = pt_iscache_alloc(NULL);
	CHECK(iscache != NULL);
	CHECK(pt_iscache_name(iscache) == NULL);
	pt_iscache_free(iscache);
	pt_iscache_free(NULL);
	iscache = pt_iscache_alloc("cache");
	CHECK(iscache != NULL);
	CHECK(strcmp(pt_iscache_name(iscache), "cache") == 0);
	CHECK(pt_iscache_name(NULL) == NULL);

	CHECK_EQ(pt_iscache_add_file(NULL, file_a, 0, 0x100, 0x1000),
		 -pte_invalid);
	CHECK_EQ(pt_iscache_add_file(iscache, NULL, 0, 0x100, 0x1000),
		 -pte_invalid);
	CHECK_EQ(pt_iscache_add_file(iscache, file_a, 0x1000, 0x100, 0x1000),
		 -pte_invalid);
	CHECK_EQ(pt_iscache_add_file(iscache, "/nonexistent/ipt/file", 0,
				     0x100, 0x1000), -pte_bad_file);

	/* Identifiers count from one; the same range at the same address is
	 * the same entry, also when its size had to be cut to the file. */
	i1 = pt_iscache_add_file(iscache, file_a, 0, 0x100, 0x1000);
	CHECK_EQ(i1, 1);
	CHECK_EQ(pt_iscache_add_file(iscache, file_a, 0, 0x100, 0x1000), 1);
	i2 = pt_iscache_add_file(iscache, file_a, 0, 0x100, 0x8000);
	CHECK_EQ(i2, 2);
	i3 = pt_iscache_add_file(iscache, file_b, 0x80, 0x1000, 0x3000);
	CHECK_EQ(i3, 3);
	CHECK_EQ(pt_iscache_add_file(iscache, file_b, 0x80, 0x2000, 0x3000),
		 3);
	CHECK_EQ(pt_iscache_add_file(iscache, file_b, 0x80, 0x80, 0x3000), 3);
	i4 = pt_iscache_add_file(iscache, file_b, 0x80, 0x7f, 0x3000);
	CHECK_EQ(i4, 4);
	/* Entries 1 and 2 share one section. */
	CHECK(iscache->entries[0].section == iscache->entries[1].section);
	CHECK(iscache->entries[2].section != iscache->entries[3].section);

	/* pt_iscache_read */
	CHECK_EQ(pt_iscache_read(NULL, buf, 4, i1, 0x1000), -pte_invalid);
	CHECK_EQ(pt_iscache_read(iscache, NULL, 4, i1, 0x1000), -pte_invalid);
	CHECK_EQ(pt_iscache_read(iscache, buf, 0, i1, 0x1000), -pte_invalid);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, 0, 0x1000), -pte_bad_image);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, 5, 0x1000), -pte_bad_image);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, -1, 0x1000), -pte_bad_image);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i1, 0xfff), -pte_nomap);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i1, 0x1100), -pte_nomap);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i1, 0x1010), 4);
	CHECK_EQ(buf[0], byte_a(0x10));
	CHECK_EQ(pt_iscache_read(iscache, buf, 32, i1, 0x10f0), 16);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i2, 0x8010), 4);
	CHECK_EQ(buf[0], byte_a(0x10));
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i3, 0x3000), 4);
	CHECK_EQ(buf[0], byte_b(0x80));
	CHECK_EQ(pt_iscache_read(iscache, buf, 32, i4, 0x3070), 15);

	/* pt_image_add_cached */
	image = pt_image_alloc(NULL);
	pt_asid_init(&asid);
	mk_asid(&a1, 0x1000);
	CHECK_EQ(pt_image_add_cached(NULL, iscache, i1, NULL), -pte_invalid);
	CHECK_EQ(pt_image_add_cached(image, NULL, i1, NULL), -pte_invalid);
	CHECK_EQ(pt_image_add_cached(image, iscache, 0, NULL), -pte_bad_image);
	CHECK_EQ(pt_image_add_cached(image, iscache, 9, NULL), -pte_bad_image);
	gen = ipt__image_generation(image);
	CHECK_EQ(pt_image_add_cached(image, iscache, i1, &a1), 0);
	CHECK(ipt__image_generation(image) != gen);
	CHECK_EQ(pt_image_add_cached(image, iscache, i3, NULL), 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &a1, 0x1004), 15);
	CHECK_EQ(isid, i1);
	CHECK_EQ(buf[0], byte_a(4));
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x3004), 15);
	CHECK_EQ(isid, i3);
	CHECK_EQ(buf[0], byte_b(0x84));
	CHECK_EQ(peek(image, &a1, 0x1100, &isid), -pte_nomap - 256);

	/* Sections can be removed by their file name. */
	CHECK_EQ(pt_image_remove_by_filename(image, file_a, NULL), 1);
	CHECK_EQ(peek(image, &a1, 0x1004, &isid), -pte_nomap - 256);

	/* The limit: loaded sections beyond it are dropped, and reads still
	 * work (from the file). */
	CHECK(iscache->used >= 0x100);
	CHECK_EQ(pt_iscache_set_limit(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_iscache_set_limit(iscache, 0x80), 0);
	CHECK(iscache->used <= 0x80);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i1, 0x1010), 4);
	CHECK_EQ(buf[0], byte_a(0x10));
	CHECK(iscache->used <= 0x80);
	CHECK_EQ(pt_iscache_set_limit(iscache, 0x100), 0);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i1, 0x1010), 4);
	CHECK_EQ(iscache->used, 0x100);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i3, 0x3000), 4);
	CHECK_EQ(iscache->used, 0x80);
	CHECK_EQ(pt_iscache_read(iscache, buf, 4, i4, 0x3000), 4);
	CHECK(iscache->used <= 0x100);
	CHECK_EQ(pt_iscache_set_limit(iscache, 0), 0);
	CHECK_EQ(iscache->used, 0);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x3004), 15);
	CHECK_EQ(buf[14], byte_b(0x92));
	CHECK_EQ(iscache->used, 0);

	/* The image keeps its sections when the cache goes. */
	pt_iscache_free(iscache);
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x3004), 15);
	CHECK_EQ(isid, i3);
	CHECK_EQ(buf[0], byte_b(0x84));
	pt_image_free(image);
}

/* An instruction whose bytes lie in two sections decodes, truncated, with
 * the first section's identifier. */
static void test_insn_across_sections(void)
{
	static const uint8_t code[] = {
		0x90, 0x90, 0xe8, 0x10, 0x00, 0x00, 0x00, 0xc3,
	};
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	struct pt_asid asid;
	FILE *file;
	int ia, ib;

	file = fopen(file_c, "wb");
	CHECK(file != NULL);
	if (!file)
		return;
	fwrite(code, 1, sizeof(code), file);
	fclose(file);

	iscache = pt_iscache_alloc(NULL);
	image = pt_image_alloc(NULL);
	pt_asid_init(&asid);
	/* code[0..4) at 0x1000 and code[4..8) at 0x1004 */
	ia = pt_iscache_add_file(iscache, file_c, 0, 4, 0x1000);
	ib = pt_iscache_add_file(iscache, file_c, 4, 4, 0x1004);
	CHECK(ia > 0 && ib > 0 && ia != ib);
	CHECK_EQ(pt_image_add_cached(image, iscache, ia, NULL), 0);
	CHECK_EQ(pt_image_add_cached(image, iscache, ib, NULL), 0);

	memset(&insn, 0, sizeof(insn));
	insn.mode = ptem_64bit;
	insn.ip = 0x1002;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), 0);
	CHECK_EQ(insn.size, 5);
	CHECK_EQ(insn.iclass, ptic_call);
	CHECK_EQ(insn.isid, ia);
	CHECK_EQ(insn.truncated, 1);

	insn.ip = 0x1007;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), 0);
	CHECK_EQ(insn.iclass, ptic_return);
	CHECK_EQ(insn.isid, ib);
	CHECK_EQ(insn.truncated, 0);

	/* With the second part gone, the call can't be decoded. */
	CHECK_EQ(pt_image_remove_by_filename(image, file_c, NULL), 2);
	CHECK_EQ(pt_image_add_cached(image, iscache, ia, NULL), 0);
	insn.ip = 0x1002;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), -pte_bad_insn);
	insn.ip = 0x1000;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), 0);
	CHECK_EQ(insn.size, 1);

	pt_image_free(image);
	pt_iscache_free(iscache);
}

/* A big file is read in chunks (IPT__CHUNK_SIZE, a power of two no more
 * than 64 KiB), as they are needed. */
static void test_chunks(void)
{
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct ipt__section *section;
	struct pt_asid asid;
	uint8_t buf[64];
	const uint64_t cs = IPT__CHUNK_SIZE;
	int isid, i, wrong = 0;

	image = pt_image_alloc(NULL);
	pt_asid_init(&asid);
	CHECK_EQ(pt_image_add_file(image, file_big, 0x100, UINT64_MAX, NULL,
				   0x400000), 0);
	section = image->sections->section;
	CHECK_EQ(section->size, 0x32000);
	CHECK_EQ(section->nchunks, 0);

	/* Across a chunk's end. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x40fff8), 15);
	CHECK_EQ(buf[0], byte_big(0x100 + 0xfff8));
	CHECK_EQ(buf[14], byte_big(0x100 + 0x10006));
	CHECK_EQ(section->nchunks, (0x32000 + cs - 1) / cs);
	CHECK_EQ(section->loaded, 2 * cs);
	/* The short last chunk, and the section's end. */
	CHECK_EQ(ipt__image_read(image, &isid, buf, 15, &asid, 0x431ff8), 8);
	CHECK_EQ(buf[7], byte_big(0x100 + 0x31fff));
	CHECK_EQ(section->loaded, 2 * cs + (0x32000 - 0x31fff / cs * cs));
	for (i = 0; i < 0x32000; i += 0x333) {
		if (ipt__image_read(image, &isid, buf, 1, &asid,
				    0x400000 + (uint64_t) i) != 1 ||
		    buf[0] != byte_big(0x100 + (uint64_t) i))
			wrong += 1;
	}
	CHECK_EQ(wrong, 0);
	CHECK_EQ(section->loaded, 0x32000);
	pt_image_free(image);

	/* In an image section cache, loaded chunks count against its limit. */
	iscache = pt_iscache_alloc(NULL);
	isid = pt_iscache_add_file(iscache, file_big, 0, 0x30000, 0x1000000);
	CHECK_EQ(isid, 1);
	CHECK_EQ(pt_iscache_read(iscache, buf, 64, isid, 0x1020000), 64);
	CHECK_EQ(buf[63], byte_big(0x2003f));
	CHECK_EQ(iscache->used, cs);
	CHECK_EQ(pt_iscache_read(iscache, buf, 64, isid, 0x1000010), 64);
	CHECK_EQ(iscache->used, 2 * cs);
	CHECK_EQ(pt_iscache_set_limit(iscache, 2 * cs), 0);
	CHECK_EQ(iscache->used, 2 * cs);
	/* Too big for the limit now: read from the file, nothing kept. */
	CHECK_EQ(pt_iscache_read(iscache, buf, 64, isid, 0x1010000), 64);
	CHECK_EQ(buf[0], byte_big(0x10000));
	CHECK_EQ(iscache->used, 2 * cs);
	CHECK_EQ(pt_iscache_set_limit(iscache, cs), 0);
	CHECK_EQ(iscache->used, 0);
	CHECK_EQ(pt_iscache_read(iscache, buf, 64, isid, 0x1000010), 64);
	CHECK_EQ(buf[0], byte_big(0x10));
	CHECK_EQ(iscache->used, 0);
	pt_iscache_free(iscache);
}

int main(void)
{
	if (setup() < 0) {
		printf("cannot write test files\n");
		CHECK(0);
		return check_done();
	}
	test_add_file();
	test_overlap();
	test_sections_then_callback();
	test_iscache();
	test_insn_across_sections();
	test_chunks();
	teardown();
	return check_done();
}

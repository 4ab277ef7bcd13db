/* files.h - whole files in and out of memory, for the tests that load
 * traces and code from the corpus or write cases of their own.
 *
 *     uint8_t *read_file(const char *path, size_t *size)
 *
 * returns a malloc'd buffer (one byte more than the file, so that an empty
 * file still gets one) and its size in *size, or NULL with *size zero.
 *
 *     int write_file(const char *path, const void *data, size_t size)
 *
 * writes size bytes (size > 0) to a new or truncated file; 1 on success,
 * 0 on any failure. */
#ifndef IPT_TESTS_FILES_H
#define IPT_TESTS_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
__attribute__((unused))
#endif
static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	*size = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = (uint8_t *) malloc((size_t) n + 1);
		if (buf && fread(buf, 1, (size_t) n, f) != (size_t) n) {
			free(buf);
			buf = NULL;
		}
		if (buf)
			*size = (size_t) n;
	}
	fclose(f);
	return buf;
}

#if defined(__GNUC__)
__attribute__((unused))
#endif
static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return 0;
	ok = fwrite(data, size, 1, f) == 1;
	return (fclose(f) == 0) && ok;
}

#endif /* IPT_TESTS_FILES_H */

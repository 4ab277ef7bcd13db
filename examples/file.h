/* file.h - the files ptdump and ptxed read: the trace, and code.
 *
 * A file's bytes are mapped where the system maps files, so that a trace
 * or code file of any size is there at once and its pages are read as
 * the decoders first touch them (on whichever thread touches them
 * first); elsewhere, or where a file cannot be mapped, they are read into
 * a buffer.  The messages are those of libipt's tools.  It is included
 * after ipt.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* EX_FILE_NO_MMAP: always read. */
#if (defined(__unix__) || defined(__APPLE__)) && !defined(EX_FILE_NO_MMAP)
#include <sys/mman.h>
#include <unistd.h>
#define EX_FILE_MMAP 1
#endif

/* A file's bytes, mapped or in a buffer of ours. */
struct ex_file {
	uint8_t *bytes;
	size_t size;
	/* The mapping, or NULL if @bytes is a buffer to free. */
	void *map;
	size_t map_size;
};

static void ex_file_release(struct ex_file *file)
{
#ifdef EX_FILE_MMAP
	if (file->map)
		(void) munmap(file->map, file->map_size);
	else
#endif
		free(file->bytes);
	memset(file, 0, sizeof(*file));
}

/* Map @size bytes of @file from @begin into @out.  Returns 0 on success,
 * -1 if the file cannot be mapped (it is read then). */
static int ex_file_map(struct ex_file *out, FILE *file, long begin,
		       long size)
{
#ifdef EX_FILE_MMAP
	long page = sysconf(_SC_PAGESIZE);
	long base;
	void *map;

	if (page <= 0 || size <= 0)
		return -1;

	base = begin - begin % page;
	map = mmap(NULL, (size_t) (size + (begin - base)), PROT_READ,
		   MAP_PRIVATE, fileno(file), (off_t) base);
	if (map == MAP_FAILED)
		return -1;

	out->map = map;
	out->map_size = (size_t) (size + (begin - base));
	out->bytes = (uint8_t *) map + (begin - base);
	out->size = (size_t) size;
	return 0;
#else
	(void) out;
	(void) file;
	(void) begin;
	(void) size;
	return -1;
#endif
}

/* Load [@offset; @offset + @size) of @filename, or up to its end if @size
 * is zero, into @out.  With @clamp (code), a range past the file's end
 * ends there and a failure is what a file section's would be: a negative
 * pte_* code, nothing printed (-pte_bad_file if the file cannot be read,
 * -pte_invalid for @offset at or past its end), so that code read into
 * our own memory fails as code in file sections does.  Without (the
 * trace), a range past the end is an error, and a failure is printed and
 * returns -1. */
static int ex_file_load(struct ex_file *out, const char *filename,
			uint64_t offset, uint64_t size, int clamp,
			const char *prog)
{
	uint8_t *content;
	FILE *file;
	long fsize, begin, end;
	int err = clamp ? -pte_bad_file : -1;

	memset(out, 0, sizeof(*out));
	errno = 0;
	file = fopen(filename, "rb");
	if (!file) {
		if (!clamp)
			fprintf(stderr, "%s: failed to open %s: %d.\n", prog,
				filename, errno);
		return err;
	}

	if (fseek(file, 0, SEEK_END) || (fsize = ftell(file)) < 0) {
		if (!clamp)
			fprintf(stderr,
				"%s: failed to determine size of %s: %d.\n",
				prog, filename, errno);
		goto err_file;
	}

	begin = (long) offset;
	if (((uint64_t) begin != offset) || (fsize <= begin)) {
		if (clamp)
			err = -pte_invalid;
		else
			fprintf(stderr, "%s: bad offset 0x%" PRIx64
				" into %s.\n", prog, offset, filename);
		goto err_file;
	}

	end = fsize;
	if (size) {
		uint64_t range_end = offset + size;

		if (range_end < offset ||
		    ((uint64_t) end < range_end && !clamp)) {
			if (clamp)
				err = -pte_invalid;
			else
				fprintf(stderr, "%s: bad range 0x%" PRIx64
					" in %s.\n", prog, range_end,
					filename);
			goto err_file;
		}

		if (range_end < (uint64_t) end)
			end = (long) range_end;
	}

	fsize = end - begin;
	if (!ex_file_map(out, file, begin, fsize)) {
		fclose(file);
		return 0;
	}

	content = (uint8_t *) malloc((size_t) fsize);
	if (!content) {
		if (clamp)
			err = -pte_nomem;
		else
			fprintf(stderr, "%s: failed to allocated memory %s.\n",
				prog, filename);
		goto err_file;
	}

	if (fseek(file, begin, SEEK_SET) ||
	    fread(content, (size_t) fsize, 1u, file) != 1) {
		if (!clamp)
			fprintf(stderr, "%s: failed to load %s: %d.\n", prog,
				filename, errno);
		free(content);
		goto err_file;
	}

	fclose(file);

	out->bytes = content;
	out->size = (size_t) fsize;
	return 0;

err_file:
	fclose(file);
	return err;
}

/* decode.c - the decoding loop of README.md's "Use" section, as a program.
 *
 *     decode TRACE CODE ADDRESS [OFFSET [SIZE]]
 *
 * The "guest" is one flat piece of memory: SIZE bytes (the rest of the
 * file by default) of the file CODE from OFFSET (0) on, at ADDRESS in
 * every address space.  decode() prints the address of each instruction
 * the trace executes, one 16-hex-digit line each, and returns 0 at the end
 * of the trace.  Exit status: 0, or 1 with a message on stderr.
 *
 * Everything between the two "README" lines is README.md's code block,
 * character for character (make test checks it: tools/decode-check). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct guest {
	uint8_t *code;
	size_t size;
	uint64_t base;
};

/* Copy guest memory at @ip; return the number of bytes copied, or a
 * negative pte_* error if nothing is there. */
static int my_guest_read(void *ctx, uint64_t cr3, uint64_t ip, uint8_t *buf,
			 size_t size);

/* ---- README ---- */
#define IPT_IMPLEMENTATION          /* in exactly one .c file */
#include "ipt.h"                    /* link with -lZydis */

static int read_mem(uint8_t *buf, size_t size, const struct pt_asid *asid,
                    uint64_t ip, void *ctx)
{ return my_guest_read(ctx, asid->cr3, ip, buf, size); }  /* bytes read */

int decode(uint8_t *trace, size_t len, void *guest)
{
        struct pt_config config;
        struct pt_insn insn;
        struct pt_insn_decoder *dec;
        int status;

        pt_config_init(&config);
        config.begin = trace;
        config.end = trace + len;
        dec = pt_insn_alloc_decoder(&config);
        pt_image_set_callback(pt_insn_get_image(dec), read_mem, guest);
        while ((status = pt_insn_sync_forward(dec)) >= 0) {
                for (;;) {
                        while (status & pts_event_pending) {
                                struct pt_event ev;
                                status = pt_insn_event(dec, &ev, sizeof(ev));
                                if (status < 0) break;
                        }
                        if (status < 0) break;
                        status = pt_insn_next(dec, &insn, sizeof(insn));
                        if (status < 0) break;
                        printf("%016llx\n", (unsigned long long) insn.ip);
                }
        }
        pt_insn_free_decoder(dec);
        return status == -pte_eos ? 0 : status;
}
/* ---- README ---- */

static int my_guest_read(void *ctx, uint64_t cr3, uint64_t ip, uint8_t *buf,
			 size_t size)
{
	const struct guest *g = ctx;
	uint64_t off;

	(void) cr3;
	if (ip < g->base || ip - g->base >= g->size)
		return -pte_nomap;
	off = ip - g->base;
	if (size > g->size - off)
		size = (size_t) (g->size - off);
	memcpy(buf, g->code + off, size);
	return (int) size;
}

/* Read all of @path into a new buffer; NULL if it cannot be read. */
static uint8_t *load(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(n ? (size_t) n : 1)) &&
	    fread(buf, 1, (size_t) n, f) == (size_t) n) {
		*size = (size_t) n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* A number as C writes it (0x... hex, 0... octal, decimal); 0 if it is
 * not one. */
static int number(const char *s, uint64_t *value)
{
	char *end;

	if (!*s || *s == '-')
		return 0;
	*value = strtoull(s, &end, 0);
	return !*end;
}

int main(int argc, char **argv)
{
	struct guest g;
	uint8_t *trace, *file;
	size_t tsize, fsize;
	uint64_t offset = 0, size = 0;
	int status;

	if (argc < 4 || argc > 6 || !number(argv[3], &g.base) ||
	    (argc > 4 && !number(argv[4], &offset)) ||
	    (argc > 5 && !number(argv[5], &size))) {
		fprintf(stderr,
			"usage: %s TRACE CODE ADDRESS [OFFSET [SIZE]]\n",
			argv[0]);
		return 1;
	}
	trace = load(argv[1], &tsize);
	if (!trace) {
		fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
		return 1;
	}
	file = load(argv[2], &fsize);
	if (!file || offset > fsize || size > fsize - offset) {
		fprintf(stderr, "%s: cannot read %s%s\n", argv[0], argv[2],
			file ? " at that offset and size" : "");
		free(trace);
		free(file);
		return 1;
	}
	g.code = file + offset;
	g.size = argc > 5 ? (size_t) size : fsize - (size_t) offset;
	status = decode(trace, tsize, &g);
	if (status < 0)
		fprintf(stderr, "%s: %s\n", argv[0], pt_errstr(pt_errcode(status)));
	free(trace);
	free(file);
	return status < 0;
}

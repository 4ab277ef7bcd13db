/* seg_split - decoding a trace in pieces gives what decoding it in one
 * piece gives, through the API (seg_split.h), with the instruction and the
 * block decoder:
 *
 *   - the shipped sample trace (examples/synth-sample) four times over:
 *     four PSB segments, each of which must join the next;
 *   - the same with a few bytes broken, in many ways: errors, resyncs and
 *     joins that must be refused must all come out as in one piece;
 *   - traces given on the command line, as ptsynth writes them:
 *         seg_split [DIR NAME]...   decodes DIR/NAME.pt over DIR/image.txt
 *
 * Run from the repository root.  Ends with "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "../../ipt.h"
#include "seg_split.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, const char *name)
{
	if (ok) {
		passed += 1;
		return;
	}
	failed += 1;
	printf("FAIL %s: %s\n", name, what);
}

/* ---- code memory: the files of an image.txt ---- */

struct area {
	uint64_t start;
	uint8_t *bytes;
	size_t size;
};

struct memory {
	struct area areas[64];
	size_t n;
};

static int read_memory(uint8_t *buffer, size_t size,
		       const struct pt_asid *asid, uint64_t ip, void *context)
{
	const struct memory *mem = (const struct memory *) context;
	size_t i;

	(void) asid;
	for (i = 0; i < mem->n; ++i) {
		const struct area *a = &mem->areas[i];
		size_t left;

		if (ip < a->start || ip - a->start >= a->size)
			continue;
		left = a->size - (size_t) (ip - a->start);
		if (size > left)
			size = left;
		memcpy(buffer, a->bytes + (ip - a->start), size);
		return (int) size;
	}
	return -pte_nomap;
}

static uint8_t *load(const char *path, size_t *size)
{
	uint8_t *buf;
	FILE *f;
	long n;

	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return NULL;
	}
	buf = (uint8_t *) malloc(n ? (size_t) n : 1);
	if (buf && n && fread(buf, (size_t) n, 1, f) != 1) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*size = (size_t) n;
	return buf;
}

static int load_image(struct memory *mem, const char *dir)
{
	char path[4096], line[4096], file[2048];
	uint64_t start, end;
	FILE *f;

	snprintf(path, sizeof(path), "%s/image.txt", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	mem->n = 0;
	while (fgets(line, sizeof(line), f) && mem->n < 64) {
		struct area *a = &mem->areas[mem->n];

		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %2047s", &start,
			   &end, file) != 3)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		a->start = start;
		a->bytes = load(path, &a->size);
		if (!a->bytes) {
			fclose(f);
			return -1;
		}
		mem->n += 1;
	}
	fclose(f);
	return 0;
}

static void free_image(struct memory *mem)
{
	while (mem->n)
		free(mem->areas[--mem->n].bytes);
}

/* Both decoders on one trace.  @min_joins: how many joins there must be
 * (the PSBs of a trace as specified all join). */
static void check_trace(uint8_t *trace, size_t size, struct memory *mem,
			const char *name, size_t steps, size_t min_joins,
			int insn_too)
{
	struct ss_code code = { read_memory, mem };
	struct ss_budget budget = { steps, 0 };
	struct pt_config config;
	size_t joins;
	int insn;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	for (insn = 0; insn <= insn_too; ++insn) {
		char what[64];

		snprintf(what, sizeof(what), "%s decoder: in pieces",
			 insn ? "instruction" : "block");
		check(ss_check(&config, &code, insn, &budget, &joins), what,
		      name);
		if (min_joins) {
			snprintf(what, sizeof(what), "%s decoder: %zu joins",
				 insn ? "instruction" : "block", joins);
			check(joins >= min_joins, what, name);
		}
	}
}

/* xorshift: the same broken traces on every run. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void sample_tests(void)
{
	const char *dir = "examples/synth-sample";
	struct memory mem;
	uint8_t *one, *trace, *broken;
	size_t size, i, k;
	uint64_t seed = 0x5eed5e9;
	char path[256];

	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	one = load(path, &size);
	if (!one || load_image(&mem, dir) < 0) {
		check(0, "cannot load", dir);
		free(one);
		return;
	}
	trace = (uint8_t *) malloc(size * 4);
	broken = (uint8_t *) malloc(size * 4);
	if (!trace || !broken)
		abort();
	for (i = 0; i < 4; ++i)
		memcpy(trace + i * size, one, size);

	check_trace(trace, size * 4, &mem, "sample x4", (size_t) -1, 3, 1);

	/* Broken bytes: the block decoder 150 times, the instruction
	 * decoder 20 times. */
	for (k = 0; k < 170; ++k) {
		size_t nflip = 1 + rnd(&seed) % 4, f;
		char name[64];

		memcpy(broken, trace, size * 4);
		for (f = 0; f < nflip; ++f)
			broken[rnd(&seed) % (size * 4)] = (uint8_t) rnd(&seed);
		snprintf(name, sizeof(name), "sample x4, broken %zu", k);
		check_trace(broken, size * 4, &mem, name, 400000, 0,
			    k >= 150);
	}

	free(broken);
	free(trace);
	free(one);
	free_image(&mem);
}

int main(int argc, char **argv)
{
	int i;

	sample_tests();

	for (i = 1; i + 1 < argc; i += 2) {
		struct memory mem;
		uint8_t *trace;
		char path[4096], name[4200];
		size_t size;

		snprintf(path, sizeof(path), "%s/%s.pt", argv[i], argv[i + 1]);
		snprintf(name, sizeof(name), "%s/%s", argv[i], argv[i + 1]);
		trace = load(path, &size);
		if (!trace || load_image(&mem, argv[i]) < 0) {
			check(0, "cannot load", name);
			free(trace);
			continue;
		}
		check_trace(trace, size, &mem, name, (size_t) -1, 0, 1);
		free(trace);
		free_image(&mem);
	}

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

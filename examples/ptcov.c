/* ptcov - edge coverage of an Intel PT trace, as a fuzzer would take it.
 *
 * This example turns a trace into an AFL-style edge bitmap with ipt.h's
 * coverage decoder (ipt_cov_*), the way a hardware-assisted fuzzer does
 * after each run of its target: one decoder, kept warm, decoding the same
 * or the next trace again and again.  It serves the code through the
 * image's read-memory callback from memory of its own, as a fuzzer serves
 * guest memory, and shows how to reuse a decoder across traces with
 * ipt_cov_set_trace.
 *
 *   ptcov [--cpu F/M[/S]] [--filter LO-HI]... [--libxdc] [--edges]
 *         [--bitmap FILE] [--size N] [--repeat N] [--memo BYTES]
 *         --raw FILE[:START-END]:ADDR ... [--raw-list FILE] --pt TRACE
 *
 * It decodes the trace once with a fresh decoder (the first pass), then
 * --repeat more times with the same decoder (warm passes, default 10),
 * clearing the bitmap before each (untimed), and prints the trace size,
 * the edges counted in one pass, how many distinct edges there are, the
 * processor time per pass and the speed of the first and the warm passes
 * (decoding alone, as libxdc's benchmark times it), and a 64-bit
 * FNV-1a hash of the bitmap.  --edges prints "from to count kind" lines
 * sorted by (from, to, kind) instead; --bitmap writes the raw bitmap of
 * one pass (--size bytes, a power of two, default 65536).  --libxdc counts
 * what libxdc counts, into the bitmap libxdc makes.  --filter (up to four)
 * counts only edges from within [LO, HI).  --raw-list reads "VADDR SIZE
 * FILE" lines, file names relative to the list, for images of many pages.
 * --memo bounds the decoder's TNT memo (ipt_cov_set_memo_limit; 0 turns
 * it off), to see what it is worth; the output does not change.
 *
 * Build:  cc -O2 -Wall -Wextra -Werror -I. -o examples/ptcov \
 *             examples/ptcov.c -lZydis
 */

#define IPT_IMPLEMENTATION
#include "ipt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- code memory ---- */

struct ptcov_segment {
	uint64_t vaddr;
	uint64_t size;
	uint8_t *bytes;
	size_t order;
};

struct ptcov_memory {
	struct ptcov_segment *seg;
	size_t nseg;
	size_t cap;
};

/* By address; where two overlap, the later one wins. */
static int ptcov_seg_cmp(const void *a, const void *b)
{
	const struct ptcov_segment *x = (const struct ptcov_segment *) a;
	const struct ptcov_segment *y = (const struct ptcov_segment *) b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int ptcov_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *context)
{
	const struct ptcov_memory *mem = (const struct ptcov_memory *) context;
	const struct ptcov_segment *best = NULL;
	size_t lo = 0, hi = mem->nseg, idx;
	uint64_t left;

	(void) asid;

	/* The last segment starting at or below @ip; overlapping ones are
	 * rare, so look back a little for a later one covering @ip. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mem->seg[mid].vaddr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (idx = lo; idx > 0 && lo - idx < 16; --idx) {
		const struct ptcov_segment *seg = &mem->seg[idx - 1];

		if (ip - seg->vaddr < seg->size &&
		    (!best || seg->order > best->order))
			best = seg;
	}
	if (!best)
		return -pte_nomap;

	left = best->size - (ip - best->vaddr);
	if (left < size)
		size = (size_t) left;
	memcpy(buffer, best->bytes + (ip - best->vaddr), size);
	return (int) size;
}

static int ptcov_mem_add(struct ptcov_memory *mem, uint8_t *bytes,
			 uint64_t size, uint64_t vaddr)
{
	if (mem->nseg == mem->cap) {
		size_t cap = mem->cap ? mem->cap * 2 : 64;
		struct ptcov_segment *seg;

		seg = (struct ptcov_segment *) realloc(mem->seg,
						       cap * sizeof(*seg));
		if (!seg)
			return -1;
		mem->seg = seg;
		mem->cap = cap;
	}
	mem->seg[mem->nseg].vaddr = vaddr;
	mem->seg[mem->nseg].size = size;
	mem->seg[mem->nseg].bytes = bytes;
	mem->seg[mem->nseg].order = mem->nseg;
	mem->nseg += 1;
	return 0;
}

/* Read [@offset, @offset + @size) of @name (to its end if @size is 0). */
static uint8_t *ptcov_load(const char *name, uint64_t offset, uint64_t size,
			   uint64_t *psize)
{
	uint8_t *bytes;
	FILE *file;
	long end;

	file = fopen(name, "rb");
	if (!file) {
		fprintf(stderr, "ptcov: cannot open %s: %s.\n", name,
			strerror(errno));
		return NULL;
	}
	if (fseek(file, 0, SEEK_END) || (end = ftell(file)) < 0 ||
	    (uint64_t) end <= offset ||
	    (size && (uint64_t) end - offset < size)) {
		fprintf(stderr, "ptcov: bad range in %s.\n", name);
		fclose(file);
		return NULL;
	}
	if (!size)
		size = (uint64_t) end - offset;
	bytes = (uint8_t *) malloc((size_t) size);
	if (!bytes || fseek(file, (long) offset, SEEK_SET) ||
	    fread(bytes, (size_t) size, 1, file) != 1) {
		fprintf(stderr, "ptcov: cannot read %s.\n", name);
		free(bytes);
		fclose(file);
		return NULL;
	}
	fclose(file);
	*psize = size;
	return bytes;
}

/* FILE[:START-END]:ADDR */
static int ptcov_raw(struct ptcov_memory *mem, char *arg)
{
	uint64_t addr, start = 0, end = 0, size;
	char *sep, *rest, *range;
	uint8_t *bytes;

	sep = strrchr(arg, ':');
	if (!sep || !sep[1])
		return -1;
	errno = 0;
	addr = strtoull(sep + 1, &rest, 0);
	if (errno || *rest)
		return -1;
	*sep = 0;

	range = strrchr(arg, ':');
	if (range && strchr(range, '-')) {
		start = strtoull(range + 1, &rest, 0);
		if (*rest == '-') {
			end = strtoull(rest + 1, &rest, 0);
			if (!*rest && end > start)
				*range = 0;
			else
				start = end = 0;
		} else {
			start = 0;
		}
	}

	bytes = ptcov_load(arg, start, end - start, &size);
	if (!bytes)
		return -1;
	return ptcov_mem_add(mem, bytes, size, addr);
}

/* Lines of "VADDR SIZE FILE", file names relative to the list. */
static int ptcov_raw_list(struct ptcov_memory *mem, const char *list)
{
	char line[4096], path[8192];
	const char *slash;
	int dirlen = 0;
	FILE *file;

	slash = strrchr(list, '/');
	if (slash)
		dirlen = (int) (slash - list + 1);

	file = fopen(list, "r");
	if (!file) {
		fprintf(stderr, "ptcov: cannot open %s.\n", list);
		return -1;
	}
	while (fgets(line, sizeof(line), file)) {
		unsigned long long vaddr, size;
		char name[4096];
		uint64_t got;
		uint8_t *bytes;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%llx %llx %4095s", &vaddr, &size, name) != 3) {
			fprintf(stderr, "ptcov: bad line in %s: %s", list, line);
			fclose(file);
			return -1;
		}
		if (name[0] == '/')
			snprintf(path, sizeof(path), "%s", name);
		else
			snprintf(path, sizeof(path), "%.*s%s", dirlen, list,
				 name);
		bytes = ptcov_load(path, 0, size, &got);
		if (!bytes || ptcov_mem_add(mem, bytes, got, vaddr) < 0) {
			fclose(file);
			return -1;
		}
	}
	fclose(file);
	return 0;
}

/* ---- edges ---- */

struct ptcov_edge {
	uint64_t from;
	uint64_t to;
	uint32_t kind;
	uint32_t count;
};

/* An open-addressing set of edges with their counts. */
struct ptcov_edges {
	struct ptcov_edge *slot;
	size_t cap;
	size_t n;
};

static uint64_t ptcov_edge_hash(uint64_t from, uint64_t to, uint32_t kind)
{
	uint64_t h = from * 0x9e3779b97f4a7c15ull ^ to * 0xc2b2ae3d27d4eb4full;

	return (h ^ kind ^ (h >> 29)) * 0xff51afd7ed558ccdull;
}

static int ptcov_edges_grow(struct ptcov_edges *set)
{
	struct ptcov_edges big;
	size_t i;

	big.cap = set->cap ? set->cap * 2 : 1024;
	big.n = 0;
	big.slot = (struct ptcov_edge *) calloc(big.cap, sizeof(*big.slot));
	if (!big.slot)
		return -1;
	for (i = 0; i < set->cap; ++i) {
		const struct ptcov_edge *e = &set->slot[i];
		size_t at;

		if (!e->count)
			continue;
		at = ptcov_edge_hash(e->from, e->to, e->kind) & (big.cap - 1);
		while (big.slot[at].count)
			at = (at + 1) & (big.cap - 1);
		big.slot[at] = *e;
		big.n += 1;
	}
	free(set->slot);
	*set = big;
	return 0;
}

static void ptcov_on_edge(void *context, uint64_t from, uint64_t to,
			  enum ipt_cov_kind kind)
{
	struct ptcov_edges *set = (struct ptcov_edges *) context;
	struct ptcov_edge *e;
	size_t at;

	if ((set->n + 1) * 2 > set->cap && ptcov_edges_grow(set) < 0) {
		fprintf(stderr, "ptcov: out of memory.\n");
		exit(1);
	}
	at = ptcov_edge_hash(from, to, (uint32_t) kind) & (set->cap - 1);
	for (;; at = (at + 1) & (set->cap - 1)) {
		e = &set->slot[at];
		if (!e->count) {
			e->from = from;
			e->to = to;
			e->kind = (uint32_t) kind;
			set->n += 1;
			break;
		}
		if (e->from == from && e->to == to &&
		    e->kind == (uint32_t) kind)
			break;
	}
	e->count += 1;
}

static int ptcov_edge_cmp(const void *a, const void *b)
{
	const struct ptcov_edge *x = (const struct ptcov_edge *) a;
	const struct ptcov_edge *y = (const struct ptcov_edge *) b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->kind < y->kind ? -1 : x->kind > y->kind;
}

static const char *ptcov_kind_name(uint32_t kind)
{
	switch (kind) {
	case ipt_cov_taken: return "taken";
	case ipt_cov_not_taken: return "not-taken";
	case ipt_cov_jump: return "jump";
	case ipt_cov_call: return "call";
	case ipt_cov_return: return "return";
	case ipt_cov_far: return "far";
	case ipt_cov_async: return "async";
	case ipt_cov_enable: return "enable";
	case ipt_cov_disable: return "disable";
	default: return "?";
	}
}

/* ---- decoding ---- */

/* Processor time of the process: what the decoder costs, not what other
 * processes on a loaded machine take from it. */
static double ptcov_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* One pass over @trace with @cov into its bitmap, @bitmap of @size bytes,
 * cleared first.  Returns the seconds the decode took, or a negative
 * value on failure.  Clearing is not timed: a fuzzer clears the bitmap
 * whatever fills it (libxdc's own benchmark leaves it out too). */
static double ptcov_pass(struct ipt_cov_decoder *cov, const uint8_t *trace,
			 size_t size, uint8_t *bitmap, size_t bitmap_size)
{
	double begin;

	memset(bitmap, 0, bitmap_size);
	begin = ptcov_now();
	if (ipt_cov_set_trace(cov, trace, trace + size, 0) < 0 ||
	    ipt_cov_decode(cov) < 0)
		return -1.0;
	return ptcov_now() - begin;
}

/* A whole number, decimal or 0x hex. */
static int ptcov_number(const char *arg, uint64_t *value)
{
	char *rest;

	errno = 0;
	*value = strtoull(arg, &rest, 0);
	return errno || !*arg || *rest || *arg == '-' ? -1 : 0;
}

static void ptcov_usage(void)
{
	fprintf(stderr,
		"usage: ptcov [--cpu F/M[/S]] [--filter LO-HI]... [--libxdc] "
		"[--edges]\n"
		"             [--bitmap FILE] [--size N] [--repeat N] "
		"[--memo BYTES]\n"
		"             --raw FILE[:START-END]:ADDR ... "
		"[--raw-list FILE] --pt TRACE\n");
}

int main(int argc, char *argv[])
{
	struct ipt_cov_config cc;
	struct ipt_cov_status st0, st1, st;
	struct ipt_cov_decoder *cov = NULL;
	struct ptcov_memory mem = { NULL, 0, 0 };
	struct ptcov_edges set = { NULL, 0, 0 };
	struct pt_config config;
	struct pt_image *image = NULL;
	const char *bitmap_file = NULL, *pt_file = NULL;
	uint64_t trace_size = 0, hash, size = 65536, nonzero = 0;
	uint64_t memo = UINT64_MAX;
	unsigned long repeat = 10, i;
	uint8_t *trace = NULL, *bitmap = NULL;
	double first, warm = 0.0;
	int edges = 0, err = 1, idx;

	memset(&cc, 0, sizeof(cc));
	pt_config_init(&config);

	for (idx = 1; idx < argc; ++idx) {
		const char *arg = argv[idx];
		char *val = idx + 1 < argc ? argv[idx + 1] : NULL;

		if (!strcmp(arg, "--libxdc")) {
			cc.flags |= ipt_cov_libxdc;
			continue;
		}
		if (!strcmp(arg, "--edges")) {
			edges = 1;
			continue;
		}
		if (!val) {
			ptcov_usage();
			goto out;
		}
		idx += 1;
		if (!strcmp(arg, "--cpu")) {
			if (ipt_cpu_parse(&config.cpu, val) < 0 ||
			    pt_cpu_errata(&config.errata, &config.cpu) < 0) {
				fprintf(stderr, "ptcov: bad cpu %s.\n", val);
				goto out;
			}
		} else if (!strcmp(arg, "--filter")) {
			unsigned long long lo, hi;
			char dash;

			if (cc.nranges == ipt_cov_max_ranges ||
			    sscanf(val, "%llx%c%llx", &lo, &dash, &hi) != 3 ||
			    dash != '-' || hi <= lo) {
				fprintf(stderr, "ptcov: bad filter %s.\n", val);
				goto out;
			}
			cc.range[cc.nranges].begin = lo;
			cc.range[cc.nranges].end = hi;
			cc.nranges += 1;
		} else if (!strcmp(arg, "--bitmap")) {
			bitmap_file = val;
		} else if (!strcmp(arg, "--size")) {
			if (ptcov_number(val, &size) < 0 || !size ||
			    (size & (size - 1)) || size > (1ull << 31)) {
				fprintf(stderr, "ptcov: bad size %s.\n", val);
				goto out;
			}
		} else if (!strcmp(arg, "--repeat")) {
			uint64_t n;

			if (ptcov_number(val, &n) < 0 || n > 1000000) {
				fprintf(stderr, "ptcov: bad repeat %s.\n",
					val);
				goto out;
			}
			repeat = (unsigned long) n;
		} else if (!strcmp(arg, "--memo")) {
			if (ptcov_number(val, &memo) < 0 ||
			    memo == UINT64_MAX) {
				fprintf(stderr, "ptcov: bad memo %s.\n", val);
				goto out;
			}
		} else if (!strcmp(arg, "--raw")) {
			if (ptcov_raw(&mem, val) < 0) {
				fprintf(stderr, "ptcov: bad --raw %s.\n", val);
				goto out;
			}
		} else if (!strcmp(arg, "--raw-list")) {
			if (ptcov_raw_list(&mem, val) < 0)
				goto out;
		} else if (!strcmp(arg, "--pt")) {
			pt_file = val;
		} else {
			ptcov_usage();
			goto out;
		}
	}
	if (!pt_file || !mem.nseg) {
		ptcov_usage();
		goto out;
	}
	qsort(mem.seg, mem.nseg, sizeof(*mem.seg), ptcov_seg_cmp);

	trace = ptcov_load(pt_file, 0, 0, &trace_size);
	bitmap = (uint8_t *) calloc(1, (size_t) size);
	image = pt_image_alloc(NULL);
	if (!trace || !bitmap || !image ||
	    pt_image_set_callback(image, ptcov_read, &mem) < 0)
		goto out;
	config.begin = trace;
	config.end = trace + trace_size;

	/* The first pass: a fresh decoder, cold caches. */
	cov = ipt_cov_alloc_decoder(&config, &cc);
	if (!cov || ipt_cov_set_image(cov, image) < 0 ||
	    ipt_cov_set_bitmap(cov, bitmap, (size_t) size) < 0 ||
	    (memo != UINT64_MAX && ipt_cov_set_memo_limit(cov, memo) < 0))
		goto out;
	ipt_cov_get_status(cov, &st0);
	first = ptcov_pass(cov, trace, (size_t) trace_size, bitmap,
			   (size_t) size);
	ipt_cov_get_status(cov, &st1);
	if (first < 0.0)
		goto out;

	for (i = 0; i < repeat; ++i) {
		double t = ptcov_pass(cov, trace, (size_t) trace_size,
				      bitmap, (size_t) size);

		if (t < 0.0)
			goto out;
		warm += t;
	}
	ipt_cov_free_decoder(cov);

	/* Once more, untimed, for the edges themselves. */
	cc.edge = ptcov_on_edge;
	cc.context = &set;
	cov = ipt_cov_alloc_decoder(&config, &cc);
	if (!cov || ipt_cov_set_image(cov, image) < 0 ||
	    ipt_cov_set_bitmap(cov, bitmap, (size_t) size) < 0 ||
	    (memo != UINT64_MAX && ipt_cov_set_memo_limit(cov, memo) < 0) ||
	    ptcov_pass(cov, trace, (size_t) trace_size, bitmap,
		       (size_t) size) < 0.0)
		goto out;
	ipt_cov_get_status(cov, &st);

	hash = 0xcbf29ce484222325ull;
	for (i = 0; i < size; ++i) {
		hash = (hash ^ bitmap[i]) * 0x100000001b3ull;
		nonzero += bitmap[i] != 0;
	}

	if (bitmap_file) {
		FILE *file = fopen(bitmap_file, "wb");

		if (!file || fwrite(bitmap, (size_t) size, 1, file) != 1) {
			fprintf(stderr, "ptcov: cannot write %s.\n",
				bitmap_file);
			if (file)
				fclose(file);
			goto out;
		}
		fclose(file);
	}

	if (edges) {
		struct ptcov_edge *list;
		size_t n = 0;

		list = (struct ptcov_edge *) malloc((set.n + 1) *
						    sizeof(*list));
		if (!list)
			goto out;
		for (i = 0; i < set.cap; ++i)
			if (set.slot[i].count)
				list[n++] = set.slot[i];
		qsort(list, n, sizeof(*list), ptcov_edge_cmp);
		for (i = 0; i < n; ++i)
			printf("%016" PRIx64 " %016" PRIx64 " %u %s\n",
			       list[i].from, list[i].to, list[i].count,
			       ptcov_kind_name(list[i].kind));
		free(list);
	} else {
		double mb = (double) trace_size / (1024.0 * 1024.0);

		printf("trace bytes:    %" PRIu64 "\n", trace_size);
		printf("edges:          %" PRIu64 "\n", st1.edges - st0.edges);
		printf("distinct edges: %zu\n", set.n);
		printf("bitmap entries: %" PRIu64 " of %" PRIu64 "\n",
		       nonzero, size);
		printf("errors:         %" PRIu64 ", %" PRIu64
		       " bytes skipped", st.errors, st.skipped);
		if (st.errors)
			printf(" (first: %s, last: %s)",
			       pt_errstr(pt_errcode(st.first_error)),
			       pt_errstr(pt_errcode(st.last_error)));
		printf("\n");
		printf("first pass:     %.3f ms, %.1f MB/s\n", first * 1e3,
		       first > 0.0 ? mb / first : 0.0);
		if (repeat)
			printf("warm passes:    %.3f ms, %.1f MB/s (%lu)\n",
			       warm * 1e3 / (double) repeat,
			       warm > 0.0 ? mb * (double) repeat / warm : 0.0,
			       repeat);
		printf("bitmap hash:    %016" PRIx64 "\n", hash);
	}
	err = 0;

out:
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	for (i = 0; i < mem.nseg; ++i)
		free(mem.seg[i].bytes);
	free(mem.seg);
	free(set.slot);
	free(bitmap);
	free(trace);
	return err;
}

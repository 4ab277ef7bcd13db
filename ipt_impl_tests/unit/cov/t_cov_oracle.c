/* t_cov_oracle - the coverage decoder against the block decoder.
 *
 * For each trace: the edges ipt_cov reports (edge callback, in order) must
 * be the edges cov_oracle.h derives from pt_blk_next's blocks and
 * pt_blk_event's events; with all kinds, and with each kind alone; on a
 * fresh decoder (first pass) and on the same decoder again (warm caches);
 * and the bitmap must be the documented function of those edges, wrapping
 * and saturating, also without an edge callback.  With ipt_cov_pause, pages withheld at random and
 * supplied on each fault give the edges and bitmap of the decode with all
 * code present.
 *
 *   t_cov_oracle [manifest MANIFEST]... [synth DIR]...
 *                [synth-trace DIR NAME]... [list LIST TRACE]...
 *
 * MANIFEST: a conformance MANIFEST; its ptxed cases are used (--raw and
 * --cpu arguments).  DIR: a ptsynth directory (image.txt, trace.pt, or
 * NAME.pt: synth/run-synth checks each real-program trace it makes).
 * LIST TRACE: a "VADDR SIZE FILE" list and a trace. */

#include "check.h"
#include "cov_oracle.h"
#include "../hv/fault_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *load(const char *name, uint64_t offset, uint64_t size,
		     uint64_t *psize)
{
	FILE *f = fopen(name, "rb");
	uint8_t *buf;
	long end;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (end = ftell(f)) < 0 ||
	    (uint64_t) end <= offset) {
		fclose(f);
		return NULL;
	}
	if (!size || size > (uint64_t) end - offset)
		size = (uint64_t) end - offset;
	buf = (uint8_t *) malloc((size_t) size);
	if (!buf || fseek(f, (long) offset, SEEK_SET) ||
	    fread(buf, (size_t) size, 1, f) != 1) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*psize = size;
	return buf;
}

static int add_file(struct omem *mem, const char *name, uint64_t offset,
		    uint64_t size, uint64_t vaddr)
{
	uint64_t got;
	uint8_t *buf = load(name, offset, size, &got);
	int status;

	if (!buf)
		return -1;
	status = omem_add(mem, buf, got, vaddr);
	free(buf);
	return status;
}

static unsigned long traces, edges_seen, faults_seen, fault_traces;
static unsigned long memo_bits;
/* TNT bits through a memo of a few entries. */
static unsigned long small_bits;

/* Decode @config with ipt_cov_pause over @m, supplying each page it stops
 * at; the edges in @got and the bitmap in @map.  Returns the final
 * status of ipt_cov_decode. */
static int decode_paused(const struct pt_config *config, struct gmem *m,
			 struct olist *got, uint8_t *map, size_t size)
{
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct ipt_fault fault;
	struct pt_image *image;
	int status = -pte_nomem, n;

	memset(&cc, 0, sizeof(cc));
	cc.flags = ipt_cov_pause;
	cc.edge = olist_on_edge;
	cc.context = got;
	got->n = 0;
	image = pt_image_alloc(NULL);
	cov = ipt_cov_alloc_decoder(config, &cc);
	m->image = image;
	if (image && cov && pt_image_set_callback(image, gmem_read, m) >= 0 &&
	    ipt_cov_set_image(cov, image) >= 0 &&
	    ipt_cov_set_bitmap(cov, map, size) >= 0 &&
	    ipt_cov_set_trace(cov, config->begin, config->end, 1) >= 0) {
		for (n = 0; n < 1000000; ++n) {
			status = ipt_cov_decode(cov);
			if (status != -pte_nomap)
				break;
			/* Code that is not there at all stays missing: the
			 * decode goes on past it as past an error. */
			if (ipt_cov_get_fault(cov, &fault, sizeof(fault)) <= 0)
				break;
			if (gmem_release(m, fault.addr) && !(m->faults & 1))
				(void) ipt_image_invalidate(image, &fault.asid,
					fault.addr & ~0xfffull,
					(fault.addr & ~0xfffull) + 0x1000);
		}
	}
	ipt_cov_free_decoder(cov);
	pt_image_free(image);
	m->image = NULL;
	return status;
}

/* Pages withheld at random, supplied on demand: the same as with all code
 * there. */
static void check_faults(const char *name, const struct pt_config *config,
			 const struct omem *mem)
{
	static uint8_t map[1 << 16], whole[1 << 16];
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 };
	struct gmem m;
	uint64_t seed;
	int i;

	if (mem->nseg > GMEM_REGIONS)
		return;
	memset(&m, 0, sizeof(m));
	for (i = 0; i < mem->nseg; ++i)
		gmem_add(&m, mem->seg[i].vaddr, mem->seg[i].bytes,
			 mem->seg[i].size);
	CHECK_EQ(decode_paused(config, &m, &want, whole, sizeof(whole)), 0);
	for (seed = 1; seed <= 3; ++seed) {
		unsigned long before;
		long at;

		m.pct = 40;
		m.seed = seed;
		m.nreleased = 0;
		before = m.faults;
		CHECK_EQ(decode_paused(config, &m, &got, map, sizeof(map)), 0);
		at = olist_diff(&got, &want);
		if (!CHECK(at < 0))
			printf("     %s, seed %d: edge %ld of %zu/%zu after %lu "
			       "faults\n", name, (int) seed, at, got.n, want.n,
			       m.faults - before);
		CHECK(!memcmp(map, whole, sizeof(map)));
		faults_seen += m.faults - before;
	}
	fault_traces += 1;
	free(m.released);
	free(want.e);
	free(got.e);
}

/* One trace: every check. */
static void check_trace(const char *name, const struct pt_config *config,
			struct omem *mem)
{
	static const uint32_t kinds[] = {
		ipt_cov_taken, ipt_cov_not_taken, ipt_cov_jump, ipt_cov_call,
		ipt_cov_return, ipt_cov_far, ipt_cov_async, ipt_cov_enable,
		ipt_cov_disable
	};
	struct olist want = { 0, 0, 0 }, got = { 0, 0, 0 }, part = { 0, 0, 0 };
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct ipt_cov_status st;
	struct pt_image *image;
	static uint8_t map[1 << 16], expect[1 << 16];
	size_t k;
	int pass;

	image = pt_image_alloc(NULL);
	if (!CHECK(image != NULL))
		return;
	pt_image_set_callback(image, omem_read, mem);
	oracle_edges(&want, config, image, omem_read, mem);

	memset(&cc, 0, sizeof(cc));
	cc.edge = olist_on_edge;
	cc.context = &got;
	cov = ipt_cov_alloc_decoder(config, &cc);
	if (!CHECK(cov != NULL))
		goto out;
	CHECK_EQ(ipt_cov_set_image(cov, image), 0);
	CHECK_EQ(ipt_cov_set_bitmap(cov, map, sizeof(map)), 0);

	/* First pass, then warm, all kinds; the bitmap each time.  Then
	 * without the TNT memo, and with one of 16 entries that keep
	 * replacing each other. */
	for (pass = 0; pass < 4; ++pass) {
		long at;

		if (pass == 2)
			CHECK_EQ(ipt_cov_set_memo_limit(cov, 0), 0);
		if (pass == 3) {
			/* 16 entries with their edges, the spare one and the
			 * filter, and a little. */
			CHECK_EQ(ipt_cov_set_memo_limit(cov, 24 << 10), 0);
			if (CHECK(ipt_cov_get_status(cov, &st) == 0))
				small_bits -= (unsigned long) st.memo_bits;
		}
		got.n = 0;
		CHECK_EQ(ipt_cov_set_trace(cov, config->begin, config->end, 1),
			 0);
		CHECK_EQ(ipt_cov_decode(cov), 0);
		if (pass == 3 && CHECK(ipt_cov_get_status(cov, &st) == 0))
			small_bits += (unsigned long) st.memo_bits;
		at = olist_diff(&got, &want);
		if (!CHECK(at < 0)) {
			printf("     %s, pass %d: edge %ld of %zu/%zu", name,
			       pass, at, got.n, want.n);
			if ((size_t) at < got.n)
				printf(", got %" PRIx64 "->%" PRIx64 " %x",
				       got.e[at].from, got.e[at].to,
				       got.e[at].kind);
			if ((size_t) at < want.n)
				printf(", want %" PRIx64 "->%" PRIx64 " %x",
				       want.e[at].from, want.e[at].to,
				       want.e[at].kind);
			printf("\n");
		}
		memset(expect, 0, sizeof(expect));
		olist_bitmap(expect, sizeof(expect), &want, 0);
		CHECK(!memcmp(map, expect, sizeof(map)));
	}
	if (CHECK(ipt_cov_get_status(cov, &st) == 0))
		memo_bits += (unsigned long) st.memo_bits;
	ipt_cov_free_decoder(cov);

	/* Without an edge callback (the memo keeps no edges, the way a
	 * fuzzer runs it), first pass and warm: the same bitmap. */
	cc.edge = NULL;
	cov = ipt_cov_alloc_decoder(config, &cc);
	if (CHECK(cov != NULL)) {
		ipt_cov_set_image(cov, image);
		ipt_cov_set_bitmap(cov, map, sizeof(map));
		for (pass = 0; pass < 2; ++pass) {
			CHECK_EQ(ipt_cov_set_trace(cov, config->begin,
						   config->end, 1), 0);
			CHECK_EQ(ipt_cov_decode(cov), 0);
			if (!CHECK(!memcmp(map, expect, sizeof(map))))
				printf("     %s, no callback, pass %d\n", name,
				       pass);
		}
		ipt_cov_free_decoder(cov);
	}
	cc.edge = olist_on_edge;

	/* Each kind alone, saturating, on a decoder of its own. */
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); ++k) {
		cc.kinds = kinds[k];
		cc.flags = ipt_cov_saturate;
		got.n = 0;
		cov = ipt_cov_alloc_decoder(config, &cc);
		if (!CHECK(cov != NULL))
			break;
		ipt_cov_set_image(cov, image);
		ipt_cov_set_bitmap(cov, map, sizeof(map));
		ipt_cov_set_trace(cov, config->begin, config->end, 1);
		CHECK_EQ(ipt_cov_decode(cov), 0);
		olist_filter(&part, &want, kinds[k]);
		if (!CHECK(olist_diff(&got, &part) < 0))
			printf("     %s: kind %x\n", name, kinds[k]);
		memset(expect, 0, sizeof(expect));
		olist_bitmap(expect, sizeof(expect), &part, 1);
		CHECK(!memcmp(map, expect, sizeof(map)));
		ipt_cov_free_decoder(cov);
	}

	check_faults(name, config, mem);
	traces += 1;
	edges_seen += want.n;
out:
	pt_image_free(image);
	free(want.e);
	free(got.e);
	free(part.e);
}

/* A ptxed line of a MANIFEST: its --raw and --cpu arguments. */
static void run_manifest_line(const char *dir, char *line)
{
	char path[16384], *tok, *save = NULL, *name;
	struct pt_config config;
	struct omem mem;
	uint64_t size;
	uint8_t *trace;
	int next_raw = 0, next_cpu = 0, next_pt = 0, ok = 1;
	char ptfile[16384] = "";

	if (strncmp(line, "ptxed\t", 6))
		return;
	name = line + 6;
	tok = strchr(name, '\t');
	if (!tok)
		return;
	*tok++ = 0;

	memset(&mem, 0, sizeof(mem));
	pt_config_init(&config);
	for (tok = strtok_r(tok, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (next_raw) {
			char *colon = strrchr(tok, ':'), *range;
			uint64_t vaddr, begin = 0, end = 0;

			next_raw = 0;
			if (!colon)
				continue;
			vaddr = strtoull(colon + 1, NULL, 0);
			*colon = 0;
			range = strrchr(tok, ':');
			if (range) {
				*range++ = 0;
				begin = strtoull(range, &range, 0);
				if (*range == '-')
					end = strtoull(range + 1, NULL, 0);
			}
			snprintf(path, sizeof(path), "%s/cases/%s/%s", dir,
				 name, tok);
			if (add_file(&mem, path, begin,
				     end > begin ? end - begin : 0, vaddr) < 0)
				ok = 0;
		} else if (next_cpu) {
			next_cpu = 0;
			if (ipt_cpu_parse(&config.cpu, tok) >= 0)
				pt_cpu_errata(&config.errata, &config.cpu);
		} else if (next_pt) {
			next_pt = 0;
			snprintf(ptfile, sizeof(ptfile), "%s/cases/%s/%s", dir,
				 name, tok);
		} else if (!strcmp(tok, "--raw")) {
			next_raw = 1;
		} else if (!strcmp(tok, "--cpu")) {
			next_cpu = 1;
		} else if (!strcmp(tok, "--pt")) {
			next_pt = 1;
		} else if (!strcmp(tok, "--elf")) {
			ok = 0;
		}
	}

	trace = ok && ptfile[0] ? load(ptfile, 0, 0, &size) : NULL;
	if (trace) {
		config.begin = trace;
		config.end = trace + size;
		check_trace(name, &config, &mem);
	} else {
		printf("     %s: not loaded (needs --elf or a file)\n", name);
		CHECK(0);
	}
	free(trace);
	omem_fini(&mem);
}

static void run_manifest(const char *manifest)
{
	char dir[4096], line[8192];
	const char *slash = strrchr(manifest, '/');
	FILE *f = fopen(manifest, "r");

	if (!CHECK(f != NULL))
		return;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int) (slash - manifest) : 1,
		 slash ? manifest : ".");
	while (fgets(line, sizeof(line), f))
		run_manifest_line(dir, line);
	fclose(f);
}

/* Code from a listing of "VADDR SIZE FILE" lines (with @ends, "BEGIN END
 * FILE"), file names relative to the listing, and a trace. */
static void run_files(const char *listing, int ends, const char *tracefile)
{
	char path[8192], line[4096];
	const char *slash = strrchr(listing, '/');
	int dirlen = slash ? (int) (slash - listing + 1) : 0;
	struct pt_config config;
	struct omem mem;
	uint64_t size;
	uint8_t *trace;
	FILE *f;

	memset(&mem, 0, sizeof(mem));
	f = fopen(listing, "r");
	if (!CHECK(f != NULL))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long vaddr, bytes;
		char file[2048];

		if (sscanf(line, "%llx %llx %2047s", &vaddr, &bytes, file) != 3)
			continue;
		if (ends)
			bytes -= vaddr;
		snprintf(path, sizeof(path), "%.*s%s", dirlen, listing, file);
		CHECK_EQ(add_file(&mem, path, 0, bytes, vaddr), 0);
	}
	fclose(f);

	trace = load(tracefile, 0, 0, &size);
	if (CHECK(trace != NULL)) {
		pt_config_init(&config);
		config.begin = trace;
		config.end = trace + size;
		check_trace(tracefile, &config, &mem);
	}
	free(trace);
	omem_fini(&mem);
}

/* A ptsynth directory: image.txt and NAME.pt. */
static void run_synth(const char *dir, const char *name)
{
	char image[4096], trace[4096];

	snprintf(image, sizeof(image), "%s/image.txt", dir);
	snprintf(trace, sizeof(trace), "%s/%s.pt", dir, name);
	run_files(image, 1, trace);
}

int main(int argc, char *argv[])
{
	int i;

	for (i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "manifest") && i + 1 < argc)
			run_manifest(argv[++i]);
		else if (!strcmp(argv[i], "synth") && i + 1 < argc)
			run_synth(argv[++i], "trace");
		else if (!strcmp(argv[i], "synth-trace") && i + 2 < argc) {
			run_synth(argv[i + 1], argv[i + 2]);
			i += 2;
		}
		else if (!strcmp(argv[i], "list") && i + 2 < argc) {
			run_files(argv[i + 1], 0, argv[i + 2]);
			i += 2;
		} else {
			printf("usage: %s [manifest M]... [synth DIR]... "
			       "[synth-trace DIR NAME]... [list LIST TRACE]...\n",
			       argv[0]);
			CHECK(0);
		}
	}
	CHECK(traces > 0);
	CHECK(faults_seen > 0 || !fault_traces);
	/* The TNT memo took part (the sample alone has enough TNT). */
	CHECK(memo_bits > 0);
	CHECK(small_bits > 0);
	printf("%lu traces, %lu edges; %lu traces with pages withheld, %lu "
	       "faults; %lu TNT bits through the memo, %lu through a small "
	       "one\n", traces, edges_seen, fault_traces, faults_seen,
	       memo_bits, small_bits);
	return check_done();
}

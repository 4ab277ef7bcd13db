/* hv_cases.h - the traces the hypervisor-agent tests decode: each ptxed
 * case of a conformance corpus (MANIFEST, trace.pt, --raw images, --cpu,
 * address filters) or a ptsynth directory (image.txt, trace.pt), as a
 * configuration and a struct gmem of its code.
 *
 *     hv_corpus(DIR, fn)      calls fn on every ptxed case of DIR
 *     hv_synth(DIR, fn)       calls fn on the ptsynth directory DIR
 *     hv_cases(argc, argv, fn)  both, as the command line says
 */
#ifndef HV_CASES_H
#define HV_CASES_H

#include "fault_util.h"
#include "check.h"
#include "files.h"

/* A case: its trace, configuration and code. */
struct hcase {
	char name[256];
	struct pt_config config;
	uint8_t *trace;
	uint8_t *files[GMEM_REGIONS];
	int nfiles;
	struct gmem mem;
	/* The same code as file sections: where each region of @mem comes
	 * from. */
	struct {
		char path[512];
		uint64_t offset;
	} from[GMEM_REGIONS];
};

static HV_UNUSED void hcase_free(struct hcase *c)
{
	int i;

	for (i = 0; i < c->nfiles; ++i)
		free(c->files[i]);
	free(c->trace);
	free(c->mem.released);
}

/* Map @path's bytes [@offset, @end) at @vaddr (@end 0: to its end). */
static HV_UNUSED int hcase_map(struct hcase *c, const char *path, uint64_t offset,
		     uint64_t end, uint64_t vaddr)
{
	size_t size;
	uint8_t *bytes;

	if (c->nfiles == GMEM_REGIONS)
		return 0;
	bytes = read_file(path, &size);
	if (!bytes)
		return 0;
	c->files[c->nfiles++] = bytes;
	if (!end || end > size)
		end = size;
	if (offset >= end)
		return 1;
	if (c->mem.n < GMEM_REGIONS) {
		snprintf(c->from[c->mem.n].path, sizeof(c->from[0].path),
			 "%s", path);
		c->from[c->mem.n].offset = offset;
	}
	return gmem_add(&c->mem, vaddr, bytes + offset, end - offset);
}

/* --raw FILE[:OFFSET[-END]]:VADDR */
static HV_UNUSED int hcase_raw(struct hcase *c, const char *dir, const char *val)
{
	char file[512], path[2048];
	const char *first = strchr(val, ':'), *last = strrchr(val, ':');
	uint64_t offset = 0, end = 0;

	if (!first || (size_t) (first - val) >= sizeof(file))
		return 0;
	memcpy(file, val, (size_t) (first - val));
	file[first - val] = 0;
	if (first != last) {
		char *rest;

		offset = strtoull(first + 1, &rest, 0);
		if (*rest == '-')
			end = strtoull(rest + 1, NULL, 0) + 1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return hcase_map(c, path, offset, end, strtoull(last + 1, NULL, 0));
}

static HV_UNUSED int hcase_arg(struct hcase *c, const char *dir, const char *opt,
		     const char *val)
{
	if (!strcmp(opt, "--raw"))
		return hcase_raw(c, dir, val);
	if (!strcmp(opt, "--cpu")) {
		if (ipt_cpu_parse(&c->config.cpu, val) < 0)
			return 0;
		if (c->config.cpu.vendor)
			(void) pt_cpu_errata(&c->config.errata,
					     &c->config.cpu);
		return 1;
	}
	if (!strncmp(opt, "--filter:addr", 13) && opt[13] >= '0' &&
	    opt[13] <= '3') {
		uint64_t v = strtoull(val, NULL, 0);
		int n = opt[13] - '0';

		if (!strcmp(opt + 14, "_cfg"))
			c->config.addr_filter.config.addr_cfg |=
				(v & 0xf) << (4 * n);
		else if (!strcmp(opt + 14, "_a"))
			(&c->config.addr_filter.addr0_a)[2 * n] = v;
		else if (!strcmp(opt + 14, "_b"))
			(&c->config.addr_filter.addr0_a)[2 * n + 1] = v;
	}
	return 1;
}

/* Add @c's code to @image as file sections (hosted builds). */
static HV_UNUSED int hcase_sections(const struct hcase *c,
				    struct pt_image *image)
{
	int i;

	for (i = 0; i < c->mem.n; ++i)
		if (pt_image_add_file(image, c->from[i].path,
				      c->from[i].offset, c->mem.r[i].size,
				      NULL, c->mem.r[i].vaddr) < 0)
			return 0;
	return 1;
}

static HV_UNUSED int hcase_trace(struct hcase *c, const char *path)
{
	size_t size;

	c->trace = read_file(path, &size);
	if (!c->trace)
		return 0;
	pt_config_init(&c->config);
	c->config.begin = c->trace;
	c->config.end = c->trace + size;
	return 1;
}

/* One ptxed line of a MANIFEST. */
static HV_UNUSED int hcase_load_ptxed(struct hcase *c, const char *corpus,
			    const char *name, char *args)
{
	char dir[1024], path[1200];
	char *tok, *opt = NULL;

	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(dir, sizeof(dir), "%s/cases/%s", corpus, name);
	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	if (!hcase_trace(c, path))
		return 0;
	for (tok = strtok(args, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
		if (opt) {
			if (!hcase_arg(c, dir, opt, tok))
				return 0;
			opt = NULL;
		} else if (!strcmp(tok, "--raw") || !strcmp(tok, "--cpu") ||
			   !strncmp(tok, "--filter:", 9)) {
			opt = tok;
		}
	}
	return 1;
}

/* A ptsynth directory: image.txt says "START END FILE ..." per line. */
static HV_UNUSED int hcase_load_synth(struct hcase *c, const char *dir)
{
	char path[2048], line[1024], file[512];
	FILE *f;

	snprintf(c->name, sizeof(c->name), "%s", dir);
	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	if (!hcase_trace(c, path))
		return 0;
	snprintf(path, sizeof(path), "%s/image.txt", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (sscanf(line, "%llx %llx %511s", &start, &end, file) != 3)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (!hcase_map(c, path, 0, end - start, start)) {
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return 1;
}

/* Calls @fn on each ptxed case of the corpus at @corpus. */
static HV_UNUSED void hv_corpus(const char *corpus, void (*fn)(struct hcase *))
{
	char path[1024], line[4096];
	FILE *manifest;

	snprintf(path, sizeof(path), "%s/MANIFEST", corpus);
	manifest = fopen(path, "r");
	if (!CHECK(manifest != NULL)) {
		printf("     %s\n", path);
		return;
	}
	while (fgets(line, sizeof(line), manifest)) {
		char *tool = strtok(line, "\t");
		char *name = strtok(NULL, "\t");
		char *args = strtok(NULL, "\n");
		struct hcase c;

		if (!tool || !name || !args || strcmp(tool, "ptxed"))
			continue;
		memset(&c, 0, sizeof(c));
		if (CHECK(hcase_load_ptxed(&c, corpus, name, args)))
			fn(&c);
		else
			printf("     cannot load %s\n", name);
		hcase_free(&c);
	}
	fclose(manifest);
}

/* Calls @fn on the ptsynth directory @dir. */
static HV_UNUSED void hv_synth(const char *dir, void (*fn)(struct hcase *))
{
	struct hcase c;

	memset(&c, 0, sizeof(c));
	if (CHECK(hcase_load_synth(&c, dir)))
		fn(&c);
	hcase_free(&c);
}

/* Calls @fn on every case the command line names: corpus directories,
 * and ptsynth directories after --synth. */
static HV_UNUSED void hv_cases(int argc, char **argv,
			       void (*fn)(struct hcase *))
{
	int i;

	for (i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--synth") && i + 1 < argc)
			hv_synth(argv[++i], fn);
		else
			hv_corpus(argv[i], fn);
	}
}

#endif

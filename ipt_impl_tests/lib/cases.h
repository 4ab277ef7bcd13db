/* cases.h - load a conformance case for the hardening tests.
 *
 * hcase_load(&c, CONFORMANCE, "loop-tnt") reads the case's trace.pt and
 * image.bin and, from the libipt suite's MANIFEST ptxed line, the address
 * the image is loaded at and the CPU.  Hosted test code only. */
#ifndef IPT_HARD_CASES_H
#define IPT_HARD_CASES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hcase {
	char name[128];
	char image_path[1024];
	uint8_t *trace, *image;
	size_t tsize, isize;
	uint64_t base;
	unsigned family, model, stepping;
};

static inline uint8_t *hcase_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = (uint8_t *) malloc(n > 0 ? (size_t) n : 1);
	if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*size = (size_t) n;
	return buf;
}

/* 0 on success, -1 (with a message) if the case is not there. */
static inline int hcase_load(struct hcase *c, const char *conf, const char *name)
{
	char path[1024], line[2048];
	FILE *m;
	int found = 0;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(path, sizeof(path), "%s/libipt/MANIFEST", conf);
	m = fopen(path, "r");
	if (!m) {
		fprintf(stdout, "no MANIFEST at %s\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), m)) {
		size_t n = strlen(name);
		const char *s;

		if (strncmp(line, "ptxed\t", 6) || strncmp(line + 6, name, n) ||
		    line[6 + n] != '\t')
			continue;
		s = strstr(line, "image.bin:");
		if (s)
			c->base = strtoull(s + 10, NULL, 0);
		s = strstr(line, "--cpu ");
		if (s)
			sscanf(s + 6, "%u/%u/%u", &c->family, &c->model,
			       &c->stepping);
		found = 1;
		break;
	}
	fclose(m);
	if (!found) {
		fprintf(stdout, "no ptxed case %s\n", name);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/libipt/cases/%s/trace.pt", conf, name);
	c->trace = hcase_file(path, &c->tsize);
	snprintf(c->image_path, sizeof(c->image_path),
		 "%s/libipt/cases/%s/image.bin", conf, name);
	c->image = hcase_file(c->image_path, &c->isize);
	if (!c->trace || !c->image) {
		fprintf(stdout, "cannot read case %s\n", name);
		return -1;
	}
	return 0;
}

static inline void hcase_free(struct hcase *c)
{
	free(c->trace);
	free(c->image);
}

#ifdef IPT_H
/* Guest memory for pt_image_set_callback: the case's image at its base. */
static inline int hcase_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *context)
{
	const struct hcase *c = (const struct hcase *) context;
	uint64_t off;

	(void) asid;
	if (ip < c->base || ip - c->base >= c->isize)
		return -pte_nomap;
	off = ip - c->base;
	if (size > c->isize - off)
		size = (size_t) (c->isize - off);
	memcpy(buffer, c->image + off, size);
	return (int) size;
}

/* A decoder configuration for the case's trace and CPU. */
static inline void hcase_config(struct pt_config *config, const struct hcase *c)
{
	pt_config_init(config);
	config->begin = c->trace;
	config->end = c->trace + c->tsize;
	if (c->family) {
		config->cpu.vendor = pcv_intel;
		config->cpu.family = (uint16_t) c->family;
		config->cpu.model = (uint8_t) c->model;
		config->cpu.stepping = (uint8_t) c->stepping;
		(void) pt_cpu_errata(&config->errata, &config->cpu);
	}
}
#endif

/* The trace and image cases the hardening tests decode: flow, compressed
 * returns, events, TSX, power, timing, resync after errors. */
static const char *const hcase_names[] = {
	"loop-tnt",
	"call_direct-ret_compressed",
	"ptet-vmexit-vmentry",
	"psb-tsx_abort-tip-fup-tip_pgd",
	"mwait-pwre-exstop_ip-fup-ovf",
	"ptxed-resync-nomap-tip",
	"mtc-ovf_keep-cyc",
	"ptw",
	"int-iret",
	"ovf-timing-fup",
};

enum { hcase_count = sizeof(hcase_names) / sizeof(hcase_names[0]) };

#endif

/* blk_agree CASES_DIR: the block and the instruction decoder agree on every
 * ptxed case of a conformance suite.
 *
 * For each `ptxed` line of CASES_DIR/MANIFEST, the trace is decoded once
 * with each decoder over the case's --raw images, with the case's CPU
 * errata and address filter.  Then each block must match the instructions
 * the instruction decoder gives for it (first IP, last IP, count, mode,
 * speculative flag), and both must report the same events, in the same
 * order, with the same IPs and times, and the same errors at the same
 * places.  Decoding errors resynchronize forward, as ptxed does.
 *
 * Prints one line per disagreeing case and "N passed, N failed". */
#include "ipt.h"
#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item {
	/* 'b' block, 'i' instruction, 'e' event, 'x' error */
	char kind;
	uint8_t speculative;
	uint8_t mode;
	uint16_t ninsn;
	int code;
	uint64_t ip;
	uint64_t end_ip;
	struct pt_event ev;
};

struct items {
	struct item *v;
	size_t n, cap;
	int overflow;
};

enum { MAX_ITEMS = 1 << 20 };

static struct item *items_add(struct items *it, char kind)
{
	struct item *x;

	if (it->n == MAX_ITEMS) {
		it->overflow = 1;
		return NULL;
	}
	if (it->n == it->cap) {
		size_t cap = it->cap ? it->cap * 2 : 1024;
		struct item *v;

		v = (struct item *) realloc(it->v, cap * sizeof(*v));
		if (!v) {
			it->overflow = 1;
			return NULL;
		}
		it->v = v;
		it->cap = cap;
	}
	x = &it->v[it->n++];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	return x;
}

static void add_error(struct items *it, int code)
{
	struct item *x = items_add(it, 'x');

	if (x)
		x->code = code;
}

static void add_event(struct items *it, const struct pt_event *ev)
{
	struct item *x = items_add(it, 'e');

	if (x)
		x->ev = *ev;
}

static void run_blk(struct items *it, const struct pt_config *config,
		    struct pt_image *image)
{
	struct pt_block_decoder *d;
	int status;

	d = pt_blk_alloc_decoder(config);
	if (!d) {
		add_error(it, -pte_nomem);
		return;
	}
	pt_blk_set_image(d, image);

	status = pt_blk_sync_forward(d);
	while (!it->overflow) {
		struct pt_block b;
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			add_error(it, status);
			status = pt_blk_sync_forward(d);
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_blk_event(d, &ev, sizeof(ev));
			if (status >= 0)
				add_event(it, &ev);
			continue;
		}

		status = pt_blk_next(d, &b, sizeof(b));
		if (b.ninsn) {
			struct item *x = items_add(it, 'b');

			if (x) {
				x->ip = b.ip;
				x->end_ip = b.end_ip;
				x->ninsn = b.ninsn;
				x->mode = (uint8_t) b.mode;
				x->speculative = b.speculative;
			}
		}
	}
	pt_blk_free_decoder(d);
}

static void run_insn(struct items *it, const struct pt_config *config,
		     struct pt_image *image)
{
	struct pt_insn_decoder *d;
	int status;

	d = pt_insn_alloc_decoder(config);
	if (!d) {
		add_error(it, -pte_nomem);
		return;
	}
	pt_insn_set_image(d, image);

	status = pt_insn_sync_forward(d);
	while (!it->overflow) {
		struct pt_insn insn;
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			add_error(it, status);
			status = pt_insn_sync_forward(d);
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status >= 0)
				add_event(it, &ev);
			continue;
		}

		status = pt_insn_next(d, &insn, sizeof(insn));
		/* Even with an error the instruction may have been decoded:
		 * the last one of a block comes with the block's status. */
		if (insn.iclass != ptic_error) {
			struct item *x = items_add(it, 'i');

			if (x) {
				x->ip = insn.ip;
				x->mode = (uint8_t) insn.mode;
				x->speculative = insn.speculative;
			}
		}
	}
	pt_insn_free_decoder(d);
}

/* Do the events agree in what a user can see? */
static int same_event(const struct pt_event *a, const struct pt_event *b)
{
	if (a->type != b->type || a->ip_suppressed != b->ip_suppressed ||
	    a->status_update != b->status_update ||
	    a->has_tsc != b->has_tsc)
		return 0;
	if (a->has_tsc && (a->tsc != b->tsc || a->lost_mtc != b->lost_mtc ||
			   a->lost_cyc != b->lost_cyc))
		return 0;
	return memcmp(&a->variant, &b->variant, sizeof(a->variant)) == 0;
}

/* Returns NULL if @blk and @ins agree, else what disagrees. */
static const char *compare(const struct items *blk, const struct items *ins,
			   size_t *where)
{
	size_t i, j = 0;

	if (blk->overflow || ins->overflow)
		return "too much output";

	for (i = 0; i < blk->n; ++i) {
		const struct item *a = &blk->v[i];
		uint16_t k;

		*where = i;
		switch (a->kind) {
		case 'b':
			if (j + a->ninsn > ins->n)
				return "block past the instructions";
			for (k = 0; k < a->ninsn; ++k) {
				const struct item *b = &ins->v[j + k];

				if (b->kind != 'i')
					return "block count";
				if (b->mode != a->mode ||
				    b->speculative != a->speculative)
					return "block mode or speculation";
			}
			if (ins->v[j].ip != a->ip)
				return "block start";
			if (ins->v[j + a->ninsn - 1].ip != a->end_ip)
				return "block end";
			j += a->ninsn;
			break;

		case 'e':
			if (j >= ins->n || ins->v[j].kind != 'e')
				return "event missing";
			if (!same_event(&a->ev, &ins->v[j].ev))
				return "event differs";
			j += 1;
			break;

		case 'x':
			if (j >= ins->n || ins->v[j].kind != 'x')
				return "error missing";
			if (ins->v[j].code != a->code)
				return "error differs";
			j += 1;
			break;
		}
	}
	*where = blk->n;
	return j == ins->n ? NULL : "instructions past the blocks";
}

/* Apply one ptxed argument that matters for decoding.  Returns 0 if the
 * case cannot be run (an image file is missing). */
static int apply_arg(const char *dir, const char *opt, const char *val,
		     struct pt_config *config, struct pt_image *image)
{
	if (!strcmp(opt, "--raw")) {
		char file[512], path[2048];
		const char *colon = strrchr(val, ':');
		const char *first = strchr(val, ':');
		uint64_t base, offset = 0;

		if (!colon || (size_t) (first - val) >= sizeof(file))
			return 0;
		memcpy(file, val, (size_t) (first - val));
		file[first - val] = 0;
		base = strtoull(colon + 1, NULL, 0);
		if (first != colon)
			offset = strtoull(first + 1, NULL, 0);
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		return pt_image_add_file(image, path, offset, UINT64_MAX, NULL,
					 base) >= 0;
	}
	if (!strcmp(opt, "--cpu")) {
		if (ipt_cpu_parse(&config->cpu, val) < 0)
			return 0;
		if (config->cpu.vendor)
			(void) pt_cpu_errata(&config->errata, &config->cpu);
		return 1;
	}
	if (!strncmp(opt, "--filter:addr", 13) && opt[13] >= '0' &&
	    opt[13] <= '3') {
		uint64_t v = strtoull(val, NULL, 0);
		int n = opt[13] - '0';
		const char *what = opt + 14;

		if (!strcmp(what, "_cfg"))
			config->addr_filter.config.addr_cfg |=
				(v & 0xf) << (4 * n);
		else if (!strcmp(what, "_a"))
			(&config->addr_filter.addr0_a)[2 * n] = v;
		else if (!strcmp(what, "_b"))
			(&config->addr_filter.addr0_a)[2 * n + 1] = v;
		return 1;
	}
	return 1;
}

/* Returns 1 if the decoders agree, 0 if not, -1 if the case was skipped. */
static int run_case(const char *cases, const char *name, char *args)
{
	char dir[1024], path[1200];
	struct pt_config config;
	struct pt_image *image;
	struct items blk, ins;
	const char *why;
	uint8_t *trace;
	size_t size = 0, where = 0;
	char *tok, *opt = NULL;
	int ok = 1;

	snprintf(dir, sizeof(dir), "%s/cases/%s", cases, name);
	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	trace = read_file(path, &size);
	if (!trace)
		return -1;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	image = pt_image_alloc(name);

	for (tok = strtok(args, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
		if (opt) {
			ok = ok && apply_arg(dir, opt, tok, &config, image);
			opt = NULL;
		} else if (!strcmp(tok, "--raw") || !strcmp(tok, "--cpu") ||
			   !strncmp(tok, "--filter:", 9)) {
			opt = tok;
		}
	}
	if (!ok) {
		pt_image_free(image);
		free(trace);
		return -1;
	}

	memset(&blk, 0, sizeof(blk));
	memset(&ins, 0, sizeof(ins));
	run_blk(&blk, &config, image);
	run_insn(&ins, &config, image);

	why = compare(&blk, &ins, &where);
	if (why)
		printf("FAIL %s: %s at block-decoder item %zu\n", name, why,
		       where);

	free(blk.v);
	free(ins.v);
	pt_image_free(image);
	free(trace);
	return why ? 0 : 1;
}

int main(int argc, char **argv)
{
	char path[1024], line[4096];
	unsigned long passed = 0, failed = 0, skipped = 0;
	FILE *manifest;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CASES_DIR\n", argv[0]);
		printf("0 passed, 1 failed\n");
		return 1;
	}

	snprintf(path, sizeof(path), "%s/MANIFEST", argv[1]);
	manifest = fopen(path, "r");
	if (!manifest) {
		printf("%s: cannot open\n0 passed, 1 failed\n", path);
		return 1;
	}

	while (fgets(line, sizeof(line), manifest)) {
		char *tool = strtok(line, "\t");
		char *name = strtok(NULL, "\t");
		char *args = strtok(NULL, "\n");
		int r;

		if (!tool || !name || !args || strcmp(tool, "ptxed"))
			continue;

		r = run_case(argv[1], name, args);
		if (r > 0)
			passed += 1;
		else if (!r)
			failed += 1;
		else
			skipped += 1;
	}
	fclose(manifest);

	/* Every case but those with missing files must run. */
	if (!passed)
		failed += 1;
	printf("%lu skipped\n%lu passed, %lu failed\n", skipped, passed,
	       failed);
	return failed ? 1 : 0;
}

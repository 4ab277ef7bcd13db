/* nomem.c - every allocation fails once.
 *
 * ipt.h is built here with a counting allocator (IPT_MALLOC/IPT_REALLOC/
 * IPT_FREE).  Each scenario - a full decode with one of the decoders, the
 * image with file sections and the section cache, the encoder - first runs
 * with no failures to count its allocations; then for every N it runs again
 * with the Nth allocation failing.  Each public call during which an
 * allocation failed must return -pte_nomem (NULL for the allocating
 * functions); after that the scenario goes on as a program would
 * (resynchronizing, retrying) and frees everything; nothing may leak.
 *
 * One exception: a cache that cannot get memory may do without (the image's
 * page cache reads uncached then).  A call that succeeds although an
 * allocation failed is accepted only if the whole decode then comes out
 * exactly as without the failure; such runs are counted as "absorbed".
 *
 *     nomem CONFORMANCE
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the counting allocator ---- */

static unsigned long nm_calls;    /* allocations attempted */
static unsigned long nm_fail_at;  /* the one to fail, 1-based; 0: none */
static unsigned long nm_failures; /* how many failed so far */
static long nm_live;              /* blocks allocated, not freed */

struct nm_head {
	size_t size;
	size_t magic;
};

#define NM_MAGIC ((size_t) 0x6e6f6d656dul)

static int nm_should_fail(void)
{
	if (++nm_calls == nm_fail_at) {
		nm_failures++;
		return 1;
	}
	return 0;
}

static void *nm_malloc(size_t size)
{
	struct nm_head *h;

	if (nm_should_fail())
		return NULL;
	h = (struct nm_head *) malloc(sizeof(*h) + size);
	if (!h)
		abort();
	h->size = size;
	h->magic = NM_MAGIC;
	nm_live++;
	return h + 1;
}

static void nm_free(void *ptr)
{
	struct nm_head *h;

	if (!ptr)
		return;
	h = (struct nm_head *) ptr - 1;
	if (h->magic != NM_MAGIC)
		abort();
	h->magic = 0;
	nm_live--;
	free(h);
}

static void *nm_realloc(void *ptr, size_t size)
{
	struct nm_head *h, *n;

	if (!ptr)
		return nm_malloc(size);
	if (nm_should_fail())
		return NULL;
	h = (struct nm_head *) ptr - 1;
	if (h->magic != NM_MAGIC)
		abort();
	n = (struct nm_head *) realloc(h, sizeof(*n) + size);
	if (!n)
		abort();
	n->size = size;
	return n + 1;
}

#define IPT_MALLOC(n) nm_malloc(n)
#define IPT_REALLOC(p, n) nm_realloc(p, n)
#define IPT_FREE(p) nm_free(p)
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "../../ipt.h"

#include "../check.h"
#include "cases.h"

/* ---- checking each call ---- */

/* Did an allocation fail since the last look? */
static unsigned long nm_seen;

static int nm_hit(void)
{
	if (nm_failures == nm_seen)
		return 0;
	nm_seen = nm_failures;
	return 1;
}

static const char *nm_where;
static int nm_absorbed;

/* A call returning a status: if an allocation failed in it, the status
 * must be -pte_nomem, or the failure was absorbed (checked later). */
static int nm_status(int status, int line)
{
	(void) line;
	if (nm_hit() && status != -pte_nomem)
		nm_absorbed = 1;
	return status;
}

static void *nm_pointer(void *p, int line)
{
	if (nm_hit() && p) {
		char what[256];

		snprintf(what, sizeof(what),
			 "%s: allocation %lu failed but line %d returned an "
			 "object", nm_where, nm_fail_at, line);
		check_report(0, __FILE__, line, what);
	}
	return p;
}

#define S(call) nm_status((call), __LINE__)
#define P(type, call) ((type) nm_pointer((call), __LINE__))

/* Decoding goes on after an error for at most this many steps. */
enum { max_steps = 20000 };

static void config_for(struct pt_config *config, struct hcase *c)
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

/* ---- the scenarios: each returns a digest of what it decoded ---- */

static uint64_t digest(uint64_t d, uint64_t v)
{
	return (d ^ v) * 0x100000001b3ull;
}

static uint64_t sc_pkt(struct hcase *c)
{
	struct pt_packet_decoder *decoder;
	struct pt_config config;
	struct pt_packet packet;
	uint64_t d = 0;
	int steps = 0, status;

	config_for(&config, c);
	decoder = P(struct pt_packet_decoder *, pt_pkt_alloc_decoder(&config));
	if (!decoder)
		return 1;
	while (S(pt_pkt_sync_forward(decoder)) >= 0 && steps < max_steps) {
		while ((status = S(pt_pkt_next(decoder, &packet,
						 sizeof(packet)))) >= 0 &&
		       ++steps < max_steps)
			d = digest(d, packet.type);
		if (status == -pte_eos)
			break;
	}
	pt_pkt_free_decoder(decoder);
	return d;
}

static uint64_t sc_evt(struct hcase *c)
{
	struct pt_event_decoder *decoder;
	struct pt_config config;
	struct pt_event event;
	uint64_t d = 0;
	int steps = 0, status;

	config_for(&config, c);
	decoder = P(struct pt_event_decoder *, pt_evt_alloc_decoder(&config));
	if (!decoder)
		return 1;
	while (S(pt_evt_sync_forward(decoder)) >= 0 && steps < max_steps) {
		while ((status = S(pt_evt_next(decoder, &event,
						 sizeof(event)))) >= 0 &&
		       ++steps < max_steps)
			d = digest(d, event.type);
		if (status == -pte_eos)
			break;
	}
	pt_evt_free_decoder(decoder);
	return d;
}

static uint64_t sc_qry(struct hcase *c)
{
	struct pt_query_decoder *decoder;
	struct pt_config config;
	struct pt_event event;
	uint64_t d = 0, ip;
	int steps = 0, status, taken;

	config_for(&config, c);
	decoder = P(struct pt_query_decoder *, pt_qry_alloc_decoder(&config));
	if (!decoder)
		return 1;
	while ((status = S(pt_qry_sync_forward(decoder, &ip))) >= 0 &&
	       steps < max_steps) {
		for (; ++steps < max_steps;) {
			if (status & pts_event_pending) {
				status = S(pt_qry_event(decoder, &event,
							sizeof(event)));
				d = digest(d, event.type);
			} else {
				status = S(pt_qry_cond_branch(decoder, &taken));
				if (status == -pte_bad_query)
					status = S(pt_qry_indirect_branch(
						decoder, &ip));
				d = digest(d, (uint64_t) status);
			}
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
	}
	pt_qry_free_decoder(decoder);
	return d;
}

/* The block decoder reads code through a callback on its own image. */
static uint64_t sc_blk(struct hcase *c)
{
	struct pt_block_decoder *decoder;
	struct pt_config config;
	struct pt_block block;
	struct pt_event event;
	uint64_t d = 0;
	int steps = 0, status;

	config_for(&config, c);
	decoder = P(struct pt_block_decoder *, pt_blk_alloc_decoder(&config));
	if (!decoder)
		return 1;
	if (S(pt_image_set_callback(pt_blk_get_image(decoder), hcase_read,
				    c)) < 0)
		goto out;
	while ((status = S(pt_blk_sync_forward(decoder))) >= 0 &&
	       steps < max_steps) {
		for (; ++steps < max_steps;) {
			while (status >= 0 && (status & pts_event_pending)) {
				status = S(pt_blk_event(decoder, &event,
							sizeof(event)));
				d = digest(d, event.type);
			}
			if (status < 0)
				break;
			status = S(pt_blk_next(decoder, &block,
					       sizeof(block)));
			if (status < 0)
				break;
			d = digest(d, block.end_ip);
		}
		if (status == -pte_eos)
			break;
	}
out:
	pt_blk_free_decoder(decoder);
	return d;
}

/* The instruction decoder reads code from a file section, through the
 * section cache, in an image copied from another. */
static uint64_t sc_insn(struct hcase *c)
{
	struct pt_image_section_cache *iscache;
	struct pt_image *image, *copy = NULL;
	struct pt_insn_decoder *decoder = NULL;
	struct pt_config config;
	struct pt_insn insn;
	struct pt_event event;
	uint64_t d = 0;
	int steps = 0, status, isid;

	iscache = P(struct pt_image_section_cache *,
		    pt_iscache_alloc("nomem"));
	image = P(struct pt_image *, pt_image_alloc("nomem"));
	copy = P(struct pt_image *, pt_image_alloc(NULL));
	if (!iscache || !image || !copy)
		goto out;
	isid = S(pt_iscache_add_file(iscache, c->image_path, 0, c->isize,
				     c->base));
	if (isid < 0)
		goto out;
	if (S(pt_image_add_cached(image, iscache, isid, NULL)) < 0)
		goto out;
	/* A second section, removed again. */
	if (S(pt_image_add_file(image, c->image_path, 0, c->isize, NULL,
				c->base + 0x100000000ull)) >= 0)
		(void) S(pt_image_remove_by_filename(image, c->image_path,
						     NULL));
	if (S(pt_image_copy(copy, image)) < 0)
		goto out;

	config_for(&config, c);
	decoder = P(struct pt_insn_decoder *, pt_insn_alloc_decoder(&config));
	if (!decoder)
		goto out;
	if (S(pt_insn_set_image(decoder, copy)) < 0)
		goto out;
	while ((status = S(pt_insn_sync_forward(decoder))) >= 0 &&
	       steps < max_steps) {
		for (; ++steps < max_steps;) {
			while (status >= 0 && (status & pts_event_pending)) {
				status = S(pt_insn_event(decoder, &event,
							 sizeof(event)));
				d = digest(d, event.type);
			}
			if (status < 0)
				break;
			status = S(pt_insn_next(decoder, &insn, sizeof(insn)));
			if (status < 0)
				break;
			d = digest(d, insn.ip);
		}
		if (status == -pte_eos)
			break;
	}
out:
	pt_insn_free_decoder(decoder);
	pt_image_free(copy);
	pt_image_free(image);
	pt_iscache_free(iscache);
	return d;
}

static uint64_t sc_enc(struct hcase *c)
{
	struct pt_encoder *encoder;
	struct pt_config config;
	struct pt_packet packet;
	uint8_t buf[64];
	uint64_t offset = 0;

	(void) c;
	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	encoder = P(struct pt_encoder *, pt_alloc_encoder(&config));
	if (!encoder)
		return 1;
	memset(&packet, 0, sizeof(packet));
	packet.type = ppt_psb;
	(void) S(pt_enc_next(encoder, &packet));
	packet.type = ppt_psbend;
	(void) S(pt_enc_next(encoder, &packet));
	(void) S(pt_enc_get_offset(encoder, &offset));
	pt_free_encoder(encoder);
	return offset;
}

struct scenario {
	const char *name;
	uint64_t (*run)(struct hcase *c);
};

static const struct scenario scenarios[] = {
	{ "pkt", sc_pkt }, { "evt", sc_evt }, { "qry", sc_qry },
	{ "blk", sc_blk }, { "insn", sc_insn }, { "enc", sc_enc },
};

int main(int argc, char **argv)
{
	const char *conf = argc > 1 ? argv[1] : "../shared/conformance";
	unsigned long total = 0, absorbed = 0;
	size_t i, k;

	for (i = 0; i < hcase_count; ++i) {
		struct hcase c;

		if (hcase_load(&c, conf, hcase_names[i]) < 0) {
			CHECK(!"conformance case missing");
			continue;
		}
		for (k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); ++k) {
			char where[256];
			unsigned long n, allocs;
			uint64_t want, got;

			snprintf(where, sizeof(where), "%s on %s",
				 scenarios[k].name, c.name);
			nm_where = where;

			/* Count the allocations of a run without failures. */
			nm_fail_at = 0;
			nm_calls = 0;
			want = scenarios[k].run(&c);
			allocs = nm_calls;
			CHECK_EQ(nm_live, 0);

			for (n = 1; n <= allocs; ++n) {
				nm_fail_at = n;
				nm_calls = 0;
				nm_failures = nm_seen = 0;
				nm_absorbed = 0;
				got = scenarios[k].run(&c);
				if (nm_absorbed) {
					absorbed++;
					if (!CHECK(got == want))
						printf("     %s: allocation %lu "
						       "failed, not reported, "
						       "and the decode "
						       "changed\n", where, n);
				}
				if (!CHECK(nm_failures == 1))
					printf("     %s: allocation %lu not "
					       "reached\n", where, n);
				if (nm_live != 0) {
					CHECK_EQ(nm_live, 0);
					printf("     %s: leak after failing "
					       "allocation %lu\n", where, n);
					nm_live = 0;
				}
				total++;
			}

			/* And it still decodes the same. */
			nm_fail_at = 0;
			got = scenarios[k].run(&c);
			CHECK(got == want);
		}
		hcase_free(&c);
	}
	printf("nomem: %lu runs with a failing allocation, %lu of them "
	       "absorbed by a cache\n", total, absorbed);
	return check_done();
}

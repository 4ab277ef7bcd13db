/* memory.c - the most memory each decoder takes, whatever the trace.
 *
 * The packet, event and query decoders and the encoder take one fixed
 * allocation each.  A block or instruction decoder takes its own, a
 * decoded-instruction cache of fixed size, a run cache that grows up to its
 * limit, with it a length map of fixed most size and a memo of Zydis'
 * answers of fixed size, and its own image (used unless the caller sets another), whose page
 * cache grows up to the image's limit.  README's "Memory" table gives these
 * numbers; this test computes them from the implementation's sizes and
 * limits and checks them against what the decoders really allocate:
 *
 *   - on a trace that sends a decoder to more code pages than its image may
 *     cache and more straight-line runs than its run cache may hold, the
 *     peak reaches the bound (within the last page and the last doubling)
 *     and never passes it;
 *   - the same with smaller limits set at run time;
 *   - the same with an allocator that has a realloc (the run cache then
 *     doubles in place), one that moves every block it resizes to a new
 *     start, so the table's alignment changes; the decode is the same;
 *   - the other decoders' peak is their one allocation, on the same trace.
 *
 * It prints the table for the default build.
 *
 *     memory
 */
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "blk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a counting allocator ---- */

struct counter {
	size_t bytes, peak;
	struct ipt_allocator allocator;
};

static void *count_alloc(void *context, size_t size)
{
	struct counter *c = (struct counter *) context;
	void *p = malloc(size);

	if (p) {
		c->bytes += size;
		if (c->bytes > c->peak)
			c->peak = c->bytes;
	}
	return p;
}

static void count_free(void *context, void *ptr, size_t size)
{
	struct counter *c = (struct counter *) context;

	if (ptr)
		c->bytes -= size;
	free(ptr);
}

/* ---- the same with a realloc that always moves: each block sits at
 * one of three offsets behind a header that remembers where its memory
 * starts, so a resized block's start changes modulo 64 ---- */

static unsigned moves, reallocs;

static void counted(struct counter *c, size_t add, size_t sub)
{
	c->bytes += add;
	c->bytes -= sub;
	if (c->bytes > c->peak)
		c->peak = c->bytes;
}

static void *moved_block(size_t size)
{
	uint8_t *raw = (uint8_t *) malloc(size + 64), *p;

	if (!raw)
		return NULL;
	p = raw + 16 + 16 * (moves++ % 3);
	memcpy(p - sizeof(raw), &raw, sizeof(raw));
	return p;
}

static void moved_free(void *ptr)
{
	uint8_t *raw;

	memcpy(&raw, (uint8_t *) ptr - sizeof(raw), sizeof(raw));
	free(raw);
}

static void *count_moving_alloc(void *context, size_t size)
{
	void *p = moved_block(size);

	if (p)
		counted((struct counter *) context, size, 0);
	return p;
}

static void count_moving_free(void *context, void *ptr, size_t size)
{
	if (!ptr)
		return;
	counted((struct counter *) context, 0, size);
	moved_free(ptr);
}

/* A realloc of one's own: the old and the new block count as one. */
static void *count_moving_realloc(void *context, void *ptr, size_t old_size,
				  size_t new_size)
{
	void *p = moved_block(new_size);

	if (!p)
		return NULL;
	memcpy(p, ptr, old_size < new_size ? old_size : new_size);
	moved_free(ptr);
	reallocs += 1;
	counted((struct counter *) context, new_size, old_size);
	return p;
}

static int with_realloc;

static void counter_init(struct counter *c)
{
	memset(c, 0, sizeof(*c));
	c->allocator.alloc = count_alloc;
	c->allocator.free = count_free;
	c->allocator.context = c;
	if (with_realloc) {
		c->allocator.alloc = count_moving_alloc;
		c->allocator.free = count_moving_free;
		c->allocator.realloc = count_moving_realloc;
	}
}

/* ---- code everywhere: "nop; jmp rax" (90 ff e0) at every address that
 * is a multiple of four, so that runs have an ordinary instruction for the
 * length map ---- */

static int nop_jmp_rax_everywhere(uint8_t *buffer, size_t size,
				  const struct pt_asid *asid, uint64_t ip,
				  void *context)
{
	static const uint8_t code[4] = { 0x90, 0xff, 0xe0, 0x90 };
	size_t i;

	(void) asid;
	(void) context;
	for (i = 0; i < size; i++)
		buffer[i] = code[(ip + i) & 3];
	return (int) size;
}

/* PSB+ then one TIP per page, to @npages pages 16 KiB apart (two runs per
 * page: the page's start and an address inside). */
static uint8_t *tip_trace(unsigned npages, struct pt_config *config)
{
	size_t cap = 64 + (size_t) npages * 2 * 8;
	uint8_t *buf = (uint8_t *) malloc(cap);
	struct pt_encoder *enc;
	struct pt_packet p;
	uint64_t end = 0;
	unsigned i;

	pt_config_init(config);
	config->begin = buf;
	config->end = buf + cap;
	enc = pt_alloc_encoder(config);
	if (!buf || !enc)
		abort();
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	(void) pt_enc_next(enc, &p);
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	(void) pt_enc_next(enc, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_fup;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = 0x10000000;
	(void) pt_enc_next(enc, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	(void) pt_enc_next(enc, &p);
	for (i = 0; i < 2 * npages; i++) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_tip;
		p.payload.ip.ipc = pt_ipc_sext_48;
		p.payload.ip.ip = 0x10000000 + (uint64_t) (i / 2) * 0x4000 +
				  (i & 1) * 0x100;
		if (pt_enc_next(enc, &p) < 0)
			abort();
	}
	(void) pt_enc_get_offset(enc, &end);
	pt_free_encoder(enc);
	config->end = buf + end;
	return buf;
}

/* ---- the bounds ---- */

/* An image's page cache at @limit bytes: its entries and their buckets. */
static size_t image_bound(uint64_t limit)
{
	uint64_t pages = ipt__pcache_pages(limit);
	uint64_t buckets = 16;

	while (buckets < pages && buckets < IPT__PAGE_BUCKETS_MAX)
		buckets <<= 1;
	return sizeof(struct pt_image) +
	       (size_t) (pages * sizeof(struct ipt__page) +
			 buckets * sizeof(struct ipt__page *));
}

/* The length map: its slots, each a page's map. */
static size_t lmap_bound(void)
{
	return IPT__LMAP_SLOTS * (sizeof(struct ipt__blk_lmap) +
				  sizeof(struct ipt__blk_lmap *));
}

/* A block or instruction decoder with its own image: the decoder, its
 * instruction cache, its run cache at @rlimit and, with a run cache, its
 * length map and the memo of Zydis' answers, its image. */
static size_t blk_bound(size_t decoder, uint64_t rlimit, uint64_t ilimit)
{
	return decoder +
	       (sizeof(struct ipt__blk_icache_entry) << IPT_BLK_ICACHE_BITS) +
	       (size_t) rlimit + IPT__RUN_ALIGN +
	       (rlimit ? lmap_bound() + sizeof(struct ipt__ild_memo) : 0) +
	       image_bound(ilimit);
}

/* ---- the decoders, each with its own counter ---- */

/* What the last peak_blk decoded. */
static struct log last;

static size_t peak_blk(const struct pt_config *config, uint64_t rlimit,
		       uint64_t ilimit, int insn)
{
	struct counter c;
	struct log l;
	uint64_t offset = 0;
	int status;

	/* The last jump has no TIP left: decoding ends at the end of the
	 * trace, with an error. */
	counter_init(&c);
	if (insn) {
		struct pt_insn_decoder *d =
			ipt_insn_alloc_decoder_with(config, &c.allocator);

		if (!CHECK(d != NULL))
			return 0;
		(void) ipt_insn_set_cache_limit(d, rlimit);
		(void) ipt_image_set_cache_limit(pt_insn_get_image(d), ilimit);
		pt_image_set_callback(pt_insn_get_image(d), nop_jmp_rax_everywhere,
				      NULL);
		run_insn_on(&l, d);
		status = pt_insn_get_offset(d, &offset);
		pt_insn_free_decoder(d);
	} else {
		struct pt_block_decoder *d =
			ipt_blk_alloc_decoder_with(config, &c.allocator);

		if (!CHECK(d != NULL))
			return 0;
		(void) ipt_blk_set_cache_limit(d, rlimit);
		(void) ipt_image_set_cache_limit(pt_blk_get_image(d), ilimit);
		pt_image_set_callback(pt_blk_get_image(d), nop_jmp_rax_everywhere,
				      NULL);
		run_blk_on(&l, d);
		status = pt_blk_get_offset(d, &offset);
		pt_blk_free_decoder(d);
	}
	CHECK(status >= 0 &&
	      offset == (uint64_t) (config->end - config->begin));
	CHECK_EQ(c.bytes, 0);
	last = l;
	return c.peak;
}

/* The peak must not pass the bound, and must come within @slack of it:
 * the limits were reached. */
static void check_blk(const struct pt_config *config, uint64_t rlimit,
		      uint64_t ilimit, int insn)
{
	size_t decoder = insn ? sizeof(struct pt_insn_decoder)
			      : sizeof(struct pt_block_decoder);
	size_t bound = blk_bound(decoder, rlimit, ilimit);
	/* The run cache doubles: it may stop at half its limit.  Beside a
	 * run cache the instruction cache keeps its small size. */
	size_t slack = (size_t) rlimit / 2 + 2 * sizeof(struct ipt__page) +
		       IPT__RUN_ALIGN +
		       (sizeof(struct ipt__blk_icache_entry) <<
			IPT_BLK_ICACHE_BITS);
	static struct log plain;

	for (with_realloc = 0; with_realloc < 2; ++with_realloc) {
		size_t peak;

		reallocs = 0;
		peak = peak_blk(config, rlimit, ilimit, insn);
		/* With a realloc, the run cache grew in place. */
		CHECK(with_realloc ? reallocs > 0 : reallocs == 0);

		CHECK(peak <= bound);
		CHECK(peak + slack >= bound);
		if (!with_realloc)
			plain = last;
		else
			CHECK(plain.len == last.len &&
			      !memcmp(plain.text, last.text, plain.len));
		printf("%s%s, run cache limit %llu, image cache limit %llu: "
		       "peak %zu, bound %zu\n", insn ? "insn" : "blk",
		       with_realloc ? " (realloc)" : "",
		       (unsigned long long) rlimit,
		       (unsigned long long) ilimit, peak, bound);
	}
	with_realloc = 0;
}

static size_t peak_small(const struct pt_config *config, int which)
{
	struct counter c;
	struct pt_packet p;
	struct pt_event ev;
	uint64_t ip;

	counter_init(&c);
	switch (which) {
	case 0: {
		struct pt_packet_decoder *d =
			ipt_pkt_alloc_decoder_with(config, &c.allocator);

		if (d && pt_pkt_sync_forward(d) >= 0)
			while (pt_pkt_next(d, &p, sizeof(p)) >= 0)
				;
		pt_pkt_free_decoder(d);
		break;
	}
	case 1: {
		struct pt_event_decoder *d =
			ipt_evt_alloc_decoder_with(config, &c.allocator);

		if (d && pt_evt_sync_forward(d) >= 0)
			while (pt_evt_next(d, &ev, sizeof(ev)) >= 0)
				;
		pt_evt_free_decoder(d);
		break;
	}
	case 2: {
		struct pt_query_decoder *d =
			ipt_qry_alloc_decoder_with(config, &c.allocator);
		int status = d ? pt_qry_sync_forward(d, &ip) : -pte_nomem;

		while (status >= 0) {
			if (status & pts_event_pending)
				status = pt_qry_event(d, &ev, sizeof(ev));
			else
				status = pt_qry_indirect_branch(d, &ip);
		}
		pt_qry_free_decoder(d);
		break;
	}
	default: {
		struct pt_encoder *e =
			ipt_alloc_encoder_with(config, &c.allocator);

		memset(&p, 0, sizeof(p));
		p.type = ppt_pad;
		if (e)
			while (pt_enc_next(e, &p) >= 0)
				;
		pt_free_encoder(e);
		break;
	}
	}
	CHECK_EQ(c.bytes, 0);
	return c.peak;
}

int main(void)
{
	struct pt_config config;
	uint8_t *trace;
	size_t box[4] = {
		sizeof(struct ipt__pkt_box), sizeof(struct ipt__evt_box),
		sizeof(struct ipt__qry_box), sizeof(struct ipt__enc_box)
	};
	const char *names[4] = { "packet", "event", "query", "encoder" };
	int i;

	/* More pages than the default image cache holds, more runs than the
	 * default run cache does. */
	trace = tip_trace(20000, &config);
	check_blk(&config, IPT_BLK_CACHE_LIMIT, IPT_IMAGE_CACHE_LIMIT, 0);
	check_blk(&config, IPT_BLK_CACHE_LIMIT, IPT_IMAGE_CACHE_LIMIT, 1);
	check_blk(&config, 64 << 10, 1 << 20, 0);
	check_blk(&config, 256 << 10, 1 << 20, 1);

	printf("most memory per object, default build:\n");
	for (i = 0; i < 4; i++) {
		size_t peak = peak_small(&config, i);

		CHECK_EQ(peak, box[i]);
		printf("  %-8s decoder %zu bytes\n", names[i], box[i]);
	}
	printf("  block    decoder %zu bytes + instruction cache %zu + runs "
	       "%u + length map %zu + Zydis memo %zu + image %zu = %.1f MiB\n",
	       sizeof(struct pt_block_decoder),
	       sizeof(struct ipt__blk_icache_entry) << IPT_BLK_ICACHE_BITS,
	       (unsigned) IPT_BLK_CACHE_LIMIT + IPT__RUN_ALIGN, lmap_bound(),
	       sizeof(struct ipt__ild_memo),
	       image_bound(IPT_IMAGE_CACHE_LIMIT),
	       blk_bound(sizeof(struct pt_block_decoder), IPT_BLK_CACHE_LIMIT,
			 IPT_IMAGE_CACHE_LIMIT) / 1048576.0);
	printf("  insn     decoder %zu bytes, the rest as above = %.1f MiB\n",
	       sizeof(struct pt_insn_decoder),
	       blk_bound(sizeof(struct pt_insn_decoder), IPT_BLK_CACHE_LIMIT,
			 IPT_IMAGE_CACHE_LIMIT) / 1048576.0);
	free(trace);
	return check_done();
}

/* The run cache of the block and instruction decoders: it grows with the
 * code (a block decoder's keeping its runs), so that once it has grown,
 * decoding the same code again hardly reads through the callback (a few
 * runs may collide in the hashed table); a small limit bounds it, and then
 * the callback is asked again; any limit, even none, decodes the same; the
 * table takes no more memory than the limit (a counting allocator);
 * straight lines wrap at 4 GiB outside 64-bit mode; and a place where no
 * run can be recorded is not read again at every step, until the image
 * is invalidated. */
#include "blk_util.h"
#include "check.h"
#include "count_alloc.h"

#include <stdlib.h>

/* NCOND times "jnz +0" (both ways lead on), then "jmp rax" back to the
 * start: NCOND runs of one instruction each, more than the instruction
 * cache and the first run table hold. */
enum { NCOND = 6000, BASE = 0x10000 };

static uint8_t chain[NCOND * 2 + 2];

struct chain_mem {
	unsigned long reads;
};

static int chain_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *context)
{
	struct chain_mem *m = (struct chain_mem *) context;
	uint64_t off;

	(void) asid;
	m->reads += 1;
	if (ip < BASE || ip >= BASE + sizeof(chain))
		return -pte_nomap;
	off = ip - BASE;
	if (size > sizeof(chain) - off)
		size = (size_t) (sizeof(chain) - off);
	memcpy(buffer, chain + off, size);
	return (int) size;
}

/* An image reading through @read with @context, with @cache_limit bytes
 * of page cache (~0: the default). */
static struct pt_image *callback_image(read_memory_callback_t *read,
				       void *context, uint64_t cache_limit)
{
	struct pt_image *image;

	image = pt_image_alloc(NULL);
	CHECK(image != NULL);
	if (!image)
		return NULL;
	if (cache_limit != ~0ull)
		CHECK_EQ(ipt_image_set_cache_limit(image, cache_limit), 0);
	CHECK_EQ(pt_image_set_callback(image, read, context), 0);
	return image;
}

/* An image reading the chain through chain_read, counting into @m, with
 * @cache_limit bytes of page cache (~0: the default). */
static struct pt_image *chain_image(struct chain_mem *m, uint64_t cache_limit)
{
	memset(m, 0, sizeof(*m));
	return callback_image(chain_read, m, cache_limit);
}

/* The chain's code, and its trace: around the chain twice (pseudo-random
 * directions), then out. */
static uint8_t chain_trace[4096];

static struct pt_config chain_config(void)
{
	struct pt_config config;
	struct pt_encoder *enc;
	struct pt_packet p;
	uint64_t offset = 0, rnd = 0x2545f4914f6cdd1dull;
	int pass, left;
	size_t i;

	for (i = 0; i < NCOND; ++i) {
		chain[2 * i] = 0x75;
		chain[2 * i + 1] = 0x00;
	}
	chain[2 * NCOND] = 0xff;
	chain[2 * NCOND + 1] = 0xe0;

	pt_config_init(&config);
	config.begin = chain_trace;
	config.end = chain_trace + sizeof(chain_trace);
	enc = pt_alloc_encoder(&config);
	CHECK(enc != NULL);
	if (!enc)
		return config;

	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	CHECK(pt_enc_next(enc, &p) >= 0);
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	CHECK(pt_enc_next(enc, &p) >= 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_fup;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = BASE;
	CHECK(pt_enc_next(enc, &p) >= 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	CHECK(pt_enc_next(enc, &p) >= 0);

	for (pass = 0; pass < 2; ++pass) {
		for (left = NCOND; left > 0; left -= 47) {
			memset(&p, 0, sizeof(p));
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			p.type = ppt_tnt_64;
			p.payload.tnt.bit_size = (uint8_t) (left < 47 ? left : 47);
			p.payload.tnt.payload = rnd &
				((1ull << p.payload.tnt.bit_size) - 1);
			CHECK(pt_enc_next(enc, &p) >= 0);
		}
		memset(&p, 0, sizeof(p));
		p.type = pass ? ppt_tip_pgd : ppt_tip;
		p.payload.ip.ipc = pass ? pt_ipc_suppressed : pt_ipc_sext_48;
		p.payload.ip.ip = pass ? 0 : BASE;
		CHECK(pt_enc_next(enc, &p) >= 0);
	}

	CHECK(pt_enc_get_offset(enc, &offset) >= 0);
	pt_free_encoder(enc);
	config.end = chain_trace + offset;
	return config;
}

/* A digest of what a decoder reports, and how much. */
struct digest {
	uint64_t hash;
	unsigned long items;
	int status;
};

static void digest_add(struct digest *d, uint64_t value)
{
	d->hash = (d->hash ^ value) * 0x100000001b3ull;
	d->items += 1;
}

static struct digest blk_pass(struct pt_block_decoder *dec)
{
	struct digest d;
	int status;

	memset(&d, 0, sizeof(d));
	status = pt_blk_sync_set(dec, 0);
	while (status >= 0) {
		struct pt_block b;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_blk_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
			digest_add(&d, ev.type);
		}
		if (status < 0)
			break;
		status = pt_blk_next(dec, &b, sizeof(b));
		if (status < 0)
			break;
		digest_add(&d, b.ip);
		digest_add(&d, b.end_ip);
		digest_add(&d, b.ninsn);
		digest_add(&d, b.iclass);
	}
	d.status = status;
	return d;
}

static struct digest insn_pass(struct pt_insn_decoder *dec)
{
	struct digest d;
	int status;

	memset(&d, 0, sizeof(d));
	status = pt_insn_sync_set(dec, 0);
	while (status >= 0) {
		struct pt_insn insn;
		uint8_t i;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_insn_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
			digest_add(&d, ev.type);
		}
		if (status < 0)
			break;
		status = pt_insn_next(dec, &insn, sizeof(insn));
		if (status < 0)
			break;
		digest_add(&d, insn.ip);
		digest_add(&d, insn.iclass);
		digest_add(&d, insn.mode);
		for (i = 0; i < insn.size; ++i)
			digest_add(&d, insn.raw[i]);
	}
	d.status = status;
	return d;
}

/* Decode the chain three times with one decoder under @limit (~0: the
 * default), from the allocator @a (NULL: the default one).  The first pass
 * gives @first; @reads is what each pass read. */
static void blk_thrice(const struct pt_config *config, struct pt_image *image,
		      struct chain_mem *m, uint64_t limit,
		      struct digest *first, unsigned long reads[3],
		      const struct ipt_allocator *a)
{
	struct pt_block_decoder *dec;
	struct digest second;

	dec = ipt_blk_alloc_decoder_with(config, a);
	CHECK(dec != NULL);
	if (!dec)
		return;
	CHECK_EQ(pt_blk_set_image(dec, image), 0);
	if (limit != ~0ull)
		CHECK_EQ(ipt_blk_set_cache_limit(dec, limit), 0);

	m->reads = 0;
	*first = blk_pass(dec);
	reads[0] = m->reads;
	m->reads = 0;
	second = blk_pass(dec);
	reads[1] = m->reads;
	CHECK_EQ(second.hash, first->hash);
	m->reads = 0;
	second = blk_pass(dec);
	reads[2] = m->reads;

	CHECK_EQ(second.hash, first->hash);
	CHECK_EQ(second.items, first->items);
	pt_blk_free_decoder(dec);
}

static void insn_thrice(const struct pt_config *config, struct pt_image *image,
		       struct chain_mem *m, uint64_t limit,
		       struct digest *first, unsigned long reads[3],
		        const struct ipt_allocator *a)
{
	struct pt_insn_decoder *dec;
	struct digest second;

	dec = ipt_insn_alloc_decoder_with(config, a);
	CHECK(dec != NULL);
	if (!dec)
		return;
	CHECK_EQ(pt_insn_set_image(dec, image), 0);
	if (limit != ~0ull)
		CHECK_EQ(ipt_insn_set_cache_limit(dec, limit), 0);

	m->reads = 0;
	*first = insn_pass(dec);
	reads[0] = m->reads;
	m->reads = 0;
	second = insn_pass(dec);
	reads[1] = m->reads;
	CHECK_EQ(second.hash, first->hash);
	m->reads = 0;
	second = insn_pass(dec);
	reads[2] = m->reads;

	CHECK_EQ(second.hash, first->hash);
	CHECK_EQ(second.items, first->items);
	pt_insn_free_decoder(dec);
}

/* With the default limit, the third pass reads less than 2% of what the
 * first read, and a block decoder's second pass less than 5% (its table
 * keeps its runs as it grows); with a table too small for the chain, the
 * third reads more than half of that again. */
static void check_reads(uint64_t limit, const unsigned long reads[3],
			const char *what)
{
	int ok;

	if (limit == ~0ull)
		ok = reads[2] * 50 < reads[0] &&
		     (strcmp(what, "blk") || reads[1] * 20 < reads[0]);
	else
		ok = reads[2] * 2 > reads[0];
	if (!CHECK(ok))
		printf("     %s, limit %llx: %lu reads, then %lu, %lu\n",
		       what, (unsigned long long) limit, reads[0], reads[1],
		       reads[2]);
}

static void test_chain(void)
{
	static const uint64_t limits[] = { 0, 64, 192, 4096, 1 << 16, ~0ull };
	struct digest blk_ref, insn_ref;
	struct pt_config config;
	struct chain_mem m;
	struct pt_image *image;
	size_t i;

	config = chain_config();
	/* Every read of the image calls back. */
	image = chain_image(&m, 0);
	if (!image)
		return;

	memset(&blk_ref, 0, sizeof(blk_ref));
	memset(&insn_ref, 0, sizeof(insn_ref));
	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); ++i) {
		struct digest d;
		unsigned long reads[3] = { 0, 0, 0 };

		blk_thrice(&config, image, &m, limits[i], &d, reads, NULL);
		/* enabled, exec_mode, NCOND + 1 blocks of 4 items, twice,
		 * disabled */
		CHECK_EQ(d.items, 2 + 2 * (NCOND + 1) * 4 + 1);
		CHECK_EQ(d.status, -pte_eos);
		if (i == 0)
			blk_ref = d;
		CHECK_EQ(d.hash, blk_ref.hash);
		check_reads(limits[i], reads, "blk");

		insn_thrice(&config, image, &m, limits[i], &d, reads, NULL);
		CHECK_EQ(d.status, -pte_eos);
		if (i == 0)
			insn_ref = d;
		CHECK_EQ(d.hash, insn_ref.hash);
		check_reads(limits[i], reads, "insn");
	}

	CHECK_EQ(ipt_blk_set_cache_limit(NULL, 0), -pte_invalid);
	CHECK_EQ(ipt_insn_set_cache_limit(NULL, 0), -pte_invalid);
	pt_image_free(image);
}

/* 32-bit code that runs from 0xfffffffc over the end of the address space
 * to 0: four NOPs, "jnz +0" at 0, "jmp eax" at 2. */
static int wrap_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	static const uint8_t top[] = { 0x90, 0x90, 0x90, 0x90 };
	static const uint8_t bottom[] = { 0x75, 0x00, 0xff, 0xe0 };
	const uint8_t *src;
	size_t avail;

	(void) asid;
	(void) context;
	if (ip >= 0xfffffffcull && ip <= 0xffffffffull) {
		src = top + (ip - 0xfffffffcull);
		avail = (size_t) (0x100000000ull - ip);
	} else if (ip < sizeof(bottom)) {
		src = bottom + ip;
		avail = (size_t) (sizeof(bottom) - ip);
	} else {
		return -pte_nomap;
	}
	if (size > avail)
		size = avail;
	memcpy(buffer, src, size);
	return (int) size;
}

static const char *const wrap_blk =
	"e enabled fffffffc\n"
	"e exec_mode fffffffc\n"
	"b fffffffc 0 5\n"
	"b 2 2 1\n"
	"e disabled 0\n";

static const char *const wrap_insn =
	"e enabled fffffffc\n"
	"e exec_mode fffffffc\n"
	"i fffffffc 1\n"
	"i fffffffd 1\n"
	"i fffffffe 1\n"
	"i ffffffff 1\n"
	"i 0 2\n"
	"i 2 2\n"
	"e disabled 0\n";

static void test_wrap(void)
{
	struct pt_config *config;
	struct pt_image *image;
	struct log l;
	struct tb t;
	int pass;

	tb_init(&t);
	tb_simple(&t, ppt_psb);
	tb_mode_exec(&t, ptem_32bit);
	tb_ip(&t, ppt_fup, pt_ipc_update_32, 0xfffffffcull);
	tb_simple(&t, ppt_psbend);
	tb_tnt(&t, 1, 1);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	image = callback_image(wrap_read, NULL, ~0ull);
	if (!image)
		return;

	/* The second time from the run cache. */
	for (pass = 0; pass < 2; ++pass) {
		struct pt_block_decoder *bd = pt_blk_alloc_decoder(config);
		struct pt_insn_decoder *id = pt_insn_alloc_decoder(config);

		CHECK(bd && id);
		if (!bd || !id)
			break;
		pt_blk_set_image(bd, image);
		pt_insn_set_image(id, image);
		run_blk_on(&l, bd);
		if (pass)
			run_blk_on(&l, bd);
		CHECK(log_is(&l, wrap_blk, "wrap blk"));
		run_insn_on(&l, id);
		if (pass)
			run_insn_on(&l, id);
		CHECK(log_is(&l, wrap_insn, "wrap insn"));
		pt_blk_free_decoder(bd);
		pt_insn_free_decoder(id);
	}
	pt_image_free(image);
}

/* ---- places without a run ----
 * "jmp $" (EB FE) at SPLIT_BASE, read in two pieces: the callback stops
 * after its first byte, so the instruction is truncated and no run can
 * be recorded there.  The decoder loops on it without trace, a block at a
 * time; once the place is known to have no run, a step reads nothing.
 * After ipt_image_invalidate the callback answers in one piece: the place
 * is tried again, and the run is recorded. */
enum { SPLIT_BASE = 0x20000, SPLIT_STEPS = 200 };

struct split_mem {
	unsigned long reads;
	int whole;
};

static int split_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *context)
{
	static const uint8_t code[] = { 0xeb, 0xfe };
	struct split_mem *m = (struct split_mem *) context;
	size_t end = m->whole ? sizeof(code) : 1;

	(void) asid;
	m->reads += 1;
	if (ip < SPLIT_BASE || ip >= SPLIT_BASE + sizeof(code))
		return -pte_nomap;
	if (ip == SPLIT_BASE + 1)
		end = sizeof(code);
	if (size > end - (ip - SPLIT_BASE))
		size = end - (size_t) (ip - SPLIT_BASE);
	memcpy(buffer, code + (ip - SPLIT_BASE), size);
	return (int) size;
}

/* @steps blocks from @dec, with *@status the last call's (events
 * taken first); each must end at the jump, truncated as @truncated says. */
static void split_steps(struct pt_block_decoder *dec, int steps,
			int truncated, int *status_io)
{
	int i, status = *status_io;

	for (i = 0; i < steps; ++i) {
		struct pt_block block;

		while (status > 0 && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_blk_event(dec, &ev, sizeof(ev));
		}
		status = pt_blk_next(dec, &block, sizeof(block));
		if (!CHECK(status >= 0 && block.end_ip == SPLIT_BASE &&
			   block.truncated == (uint32_t) truncated)) {
			printf("     step %d: status %d, end %llx, "
			       "truncated %u\n", i, status,
			       (unsigned long long) block.end_ip,
			       (unsigned) block.truncated);
			break;
		}
	}
	*status_io = status;
}

static void test_norun(void)
{
	struct pt_block_decoder *dec;
	struct pt_config *config;
	struct pt_image *image;
	struct split_mem m = { 0, 0 };
	unsigned long reads;
	struct tb t;
	int status;

	tb_init(&t);
	tb_start64(&t, SPLIT_BASE);
	config = tb_done(&t);
	CHECK_EQ(t.errors, 0);

	/* Every read of the image calls back. */
	image = callback_image(split_read, &m, 0);
	if (!image)
		return;
	dec = pt_blk_alloc_decoder(config);
	CHECK(dec != NULL);
	if (!dec) {
		pt_image_free(image);
		return;
	}
	CHECK_EQ(pt_blk_set_image(dec, image), 0);
	status = pt_blk_sync_forward(dec);
	CHECK(status >= 0);

	split_steps(dec, SPLIT_STEPS, 1, &status);
	reads = m.reads;
	split_steps(dec, SPLIT_STEPS, 1, &status);
	CHECK_EQ(m.reads, reads);

	/* The code changes: a new epoch, and now the jump makes a run. */
	m.whole = 1;
	CHECK_EQ(ipt_image_invalidate(image, NULL, SPLIT_BASE,
				      SPLIT_BASE + 2), 0);
	split_steps(dec, 1, 0, &status);
	reads = m.reads;
	split_steps(dec, SPLIT_STEPS, 0, &status);
	CHECK_EQ(m.reads, reads);

	pt_blk_free_decoder(dec);
	pt_image_free(image);
}

/* ---- the memory bound ----
 * A decoder's peak of live bytes (its allocator counts them) under a limit
 * exceeds the peak under a small one (SMALL_LIMIT: one set of an
 * instruction decoder's table, two of a block decoder's; code and trace
 * are the same) by at most the limit and the table's alignment slack. */

/* The documented default of IPT_BLK_CACHE_LIMIT. */
enum { DEFAULT_LIMIT = 2 << 20, TABLE_SLACK = 64, SMALL_LIMIT = 384 };

/* The peak over three passes of a fresh decoder under @limit (~0: the
 * default), an instruction decoder if @insn. */
static size_t peak_under(const struct pt_config *config,
			 struct pt_image *image, struct chain_mem *m,
			 uint64_t limit, int insn)
{
	unsigned long reads[3];
	struct ipt_allocator a = counting;
	struct digest d;

	memset(&d, 0, sizeof(d));
	live = 0;
	peak = 0;
	if (insn)
		insn_thrice(config, image, m, limit, &d, reads, &a);
	else
		blk_thrice(config, image, m, limit, &d, reads, &a);
	CHECK_EQ(d.status, -pte_eos);
	CHECK_EQ(live, 0);
	return peak;
}

static void test_bound(void)
{
	static const uint64_t limits[] = { 24 << 10, 96 << 10, 384 << 10, ~0ull };
	struct pt_config config;
	struct chain_mem m;
	struct pt_image *image;
	int insn;
	size_t i;

	config = chain_config();
	image = chain_image(&m, ~0ull);
	if (!image)
		return;

	for (insn = 0; insn < 2; ++insn) {
		size_t base, last = 0;

		base = peak_under(&config, image, &m, SMALL_LIMIT, insn);
		for (i = 0; i < sizeof(limits) / sizeof(limits[0]); ++i) {
			uint64_t limit = limits[i] == ~0ull ? DEFAULT_LIMIT :
							     limits[i];
			size_t p = peak_under(&config, image, &m, limits[i],
					      insn);

			if (!CHECK(p <= base + limit + TABLE_SLACK))
				printf("     %s, limit %llu: %zu bytes at the "
				       "peak, %zu with the smallest table\n",
				       insn ? "insn" : "blk",
				       (unsigned long long) limit, p, base);
			/* The table did grow with the limit: what is
			 * measured is the table. */
			CHECK(p > last);
			last = p;
		}
	}
	pt_image_free(image);
}

int main(void)
{
	test_chain();
	test_bound();
	test_wrap();
	test_norun();
	return check_done();
}

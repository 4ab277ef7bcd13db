/* The run cache's paired sets: a run pushed out of a full set moves to an
 * empty way of the set paired with it, is found there by a look that
 * records (back in the first way of its own set, trading places with that
 * set's last run; a look that records nothing leaves the table as it is
 * and does not look there), and is not recorded again, at the table's
 * limit too; a table of one set pairs none; a pair holds eight runs of one
 * set, no more, in a table of two sets (no other set to spill to); code
 * denser in runs than a pair holds spills to other sets and keeps its runs
 * as the table grows; and growing the table, in place or by copying (an
 * allocator without realloc), loses none of them; the quickest look-up
 * finds a set where the general one does.  For the block decoder and the
 * instruction decoder's (whose runs carry their text).  (It compiles its
 * own copy of the implementation to reach the table.) */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "blk_util.h"
#include "check.h"

/* "jnz +0" over and over: a run of one instruction at every even IP. */
enum { BASE = 0x40000, CODE = 1 << 16 };

static int code_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	size_t i;

	(void) asid;
	(void) context;
	if (ip < BASE || ip >= BASE + CODE)
		return -pte_nomap;
	if (size > BASE + CODE - ip)
		size = (size_t) (BASE + CODE - ip);
	for (i = 0; i < size; ++i)
		buffer[i] = ((ip + i) & 1) ? 0x00 : 0x75;
	return (int) size;
}

static unsigned long recorded;

static void count_run(void *context, uint64_t begin, uint64_t last)
{
	(void) context;
	(void) begin;
	(void) last;
	recorded += 1;
}

static void *plain_alloc(void *context, size_t size)
{
	(void) context;
	return malloc(size);
}

static void plain_free(void *context, void *ptr, size_t size)
{
	(void) context;
	(void) size;
	free(ptr);
}

/* The set the run at @ip goes to, in the decoder's current context, in a
 * table of @nsets sets. */
static uint32_t home_in(struct pt_block_decoder *d, uint64_t ip,
			uint32_t nsets)
{
	return ipt__blk_set_of(ip, ipt__blk_ctx_of(d, ptem_64bit), nsets);
}

static uint32_t home(struct pt_block_decoder *d, uint64_t ip)
{
	return home_in(d, ip, d->rsets);
}

/* Whether set @idx holds the run at @ip (with its text, if kept). */
static int holds(struct pt_block_decoder *d, uint32_t idx, uint64_t ip)
{
	struct ipt__blk_run *set = ipt__blk_set(d, idx);
	uint32_t way;

	way = ipt__blk_way_of(set, ip, ipt__blk_ctx_of(d, ptem_64bit));
	if (way >= IPT__RUN_WAYS)
		return 0;
	if (d->want_text && ipt__blk_set_text(set)[way].code[0] != 0x75)
		return 0;
	return 1;
}

/* The first @n IPs of runs whose set is @idx in a table of @nsets sets,
 * into @ips. */
static void runs_of(struct pt_block_decoder *d, uint32_t idx, uint32_t nsets,
		    uint64_t *ips, int n)
{
	uint64_t ip;
	int k = 0;

	for (ip = BASE; ip < BASE + CODE - 16 && k < n; ip += 2)
		if (home_in(d, ip, nsets) == idx)
			ips[k++] = ip;
	CHECK_EQ(k, n);
}

static const struct ipt__blk_run *find(struct pt_block_decoder *d, uint64_t ip)
{
	return ipt__blk_run_find(d, ip, ptem_64bit, NULL);
}

/* A table of one set: not paired, the fifth run pushes the first out.  A
 * table of one pair at its limit, paired: placing, finding, trading
 * places, the bound. */
static void test_pair(struct pt_block_decoder *d)
{
	const struct ipt__blk_run *run;
	const struct ipt__blk_text *text = NULL;
	uint64_t ips[9];
	int i, found;

	CHECK_EQ(ipt_blk_set_cache_limit(d, ipt__blk_set_bytes(d)), 0);
	ipt__blk_cache_sync(d);
	CHECK_EQ(d->rsets, 1);
	CHECK_EQ(d->rpairs, 0);
	runs_of(d, 0, d->rsets, ips, 5);
	recorded = 0;
	for (i = 0; i < 5; ++i)
		CHECK(find(d, ips[i]) != NULL);
	CHECK_EQ(recorded, 5);
	CHECK(ipt__blk_run_cached(d, ips[0], ptem_64bit) == NULL);
	CHECK(find(d, ips[0]) != NULL);
	CHECK_EQ(recorded, 6);

	CHECK_EQ(ipt_blk_set_cache_limit(d, 2 * ipt__blk_set_bytes(d)), 0);
	ipt__blk_cache_sync(d);
	CHECK_EQ(d->rsets, 2);
	CHECK_EQ(d->rpairs, 1);
	runs_of(d, 0, d->rsets, ips, 9);
	recorded = 0;
	for (i = 0; i < 5; ++i)
		CHECK(find(d, ips[i]) != NULL);
	CHECK_EQ(recorded, 5);
	/* The first one went to the other set of the pair. */
	CHECK(holds(d, 1, ips[0]));
	CHECK(!holds(d, 0, ips[0]));

	/* A look that records nothing leaves it there. */
	CHECK(ipt__blk_run_peek(d, ips[0], ptem_64bit, &text) == NULL);
	CHECK(ipt__blk_run_cached(d, ips[0], ptem_64bit) == NULL);
	CHECK(holds(d, 1, ips[0]));
	CHECK_EQ(recorded, 5);

	/* Found again recording: home again, trading places with the
	 * last run of its set, nothing recorded. */
	run = ipt__blk_run_find(d, ips[0], ptem_64bit, &text);
	CHECK(run != NULL && run->ip == ips[0]);
	CHECK(!d->want_text || (text && text->code[0] == 0x75));
	CHECK_EQ(recorded, 5);
	CHECK(run == ipt__blk_set(d, 0));
	CHECK(holds(d, 1, ips[1]));
	CHECK(!holds(d, 0, ips[1]));
	for (i = 0; i < 5; ++i)
		CHECK(find(d, ips[i]) != NULL);
	CHECK_EQ(recorded, 5);

	/* Eight fit the pair, the ninth pushes one out. */
	for (i = 5; i < 9; ++i)
		CHECK(find(d, ips[i]) != NULL);
	CHECK_EQ(recorded, 9);
	for (found = 0, i = 0; i < 9; ++i)
		found += holds(d, 0, ips[i]) || holds(d, 1, ips[i]);
	CHECK_EQ(found, 8);
}

/* A table that grows while a pair holds runs pushed out: none is lost. */
static void test_grow(struct pt_block_decoder *d)
{
	uint32_t before = d->rsets, sets[IPT__RUN_REACH];
	uint64_t ips[6], limit = d->rlimit;
	int i;

	/* Set 0 in the table grown too: the run pushed out to set 1 stays
	 * paired with its set. */
	runs_of(d, 0, 2 * d->rsets, ips, 6);
	recorded = 0;
	CHECK_EQ(d->rpairs, 1);
	/* Not grown yet. */
	d->rlimit = (uint64_t) d->rsets * ipt__blk_set_bytes(d);
	for (i = 0; i < 5; ++i)
		CHECK(find(d, ips[i]) != NULL);
	CHECK(holds(d, 1, ips[0]));
	/* Past the losses it takes to grow. */
	d->rlimit = limit;
	d->rfills = d->rsets * IPT__RUN_WAYS;
	CHECK(find(d, ips[5]) != NULL);
	CHECK_EQ(d->rsets, 2 * before);
	for (i = 0; i < 6; ++i) {
		ipt__blk_run_sets(ips[i], ipt__blk_ctx_of(d, ptem_64bit),
				  d->rsets, home(d, ips[i]), sets,
				  IPT__RUN_PAIR);
		CHECK(holds(d, sets[0], ips[i]) || holds(d, sets[1], ips[i]));
		CHECK(find(d, ips[i]) != NULL);
	}
	CHECK_EQ(recorded, 6);
}

/* Code with a run at every other byte, eight to a set's 16 bytes of code:
 * more than a set and the one paired with it hold, next to sets as full.
 * The table grows and spills them elsewhere, so that a third look at the
 * code records less than one run in fifty again, where each set alone
 * would lose half of its runs on every look. */
static void test_dense(struct pt_block_decoder *d)
{
	enum { FROM = BASE + 0x8000, BYTES = 4096 };
	unsigned long n[3];
	uint64_t ip;
	int pass;

	for (pass = 0; pass < 3; ++pass) {
		recorded = 0;
		for (ip = FROM; ip < FROM + BYTES; ip += 2)
			CHECK(find(d, ip) != NULL);
		n[pass] = recorded;
	}
	CHECK_EQ(n[0], BYTES / 2);
	if (!CHECK(n[2] * 50 < n[0]))
		printf("     %lu runs recorded, then %lu, %lu\n", n[0], n[1],
		       n[2]);
}

/* Where runs go: 16 bytes of code to a set, the sets of a KiB of code
 * one after the other (modulo the table); and, for any IP and table
 * size, each set a run may be in (its own, the one paired with it, those
 * it spills to) is the same or the old size more in a table of twice the
 * sets, as growing in place needs. */
static void test_layout(void)
{
	uint64_t ip;
	uint32_t n, k, i, j, ctx, bad = 0;

	for (i = 0; i < 2000; ++i) {
		ip = ((uint64_t) check_rand() << 24 | check_rand()) << 4;
		ctx = 1 + check_rand() % 7;
		for (n = 1; n < (1u << 20); n *= 2) {
			uint32_t sets[IPT__RUN_REACH], twice[IPT__RUN_REACH];

			ipt__blk_run_sets(ip, ctx, n,
					  ipt__blk_set_of(ip, ctx, n), sets,
					  IPT__RUN_REACH);
			ipt__blk_run_sets(ip, ctx, 2 * n,
					  ipt__blk_set_of(ip, ctx, 2 * n),
					  twice, IPT__RUN_REACH);
			/* Its own set, then the one paired with it. */
			bad += n > 1 && (sets[1] ^ sets[0]) != 1;
			for (k = 0; k < IPT__RUN_REACH; ++k) {
				bad += sets[k] >= n;
				bad += twice[k] != sets[k] &&
				       twice[k] != sets[k] + n;
				bad += !ipt__blk_run_reaches(ip, ctx, n,
							     sets[k]);
			}
			/* No other set. */
			for (k = 0, j = check_rand() & (n - 1);
			     k < IPT__RUN_REACH && sets[k] != j; ++k)
				;
			bad += ipt__blk_run_reaches(ip, ctx, n, j) !=
			       (k < IPT__RUN_REACH);
			/* The next 16 bytes, in the same KiB: the next set. */
			if ((ip & 0x3f0) != 0x3f0)
				bad += ipt__blk_set_of(ip + 16, ctx, n) !=
				       ((ipt__blk_set_of(ip, ctx, n) + 1) &
					(n - 1));
			bad += ipt__blk_set_of(ip + 15, ctx, n) !=
			       ipt__blk_set_of(ip, ctx, n);
		}
	}
	CHECK_EQ(bad, 0);
}

/* The quickest look-up's set address (its stride a constant) is the
 * general one's. */
static void check_sets_with(struct pt_block_decoder *d)
{
	uint32_t i, bad = 0;

	for (i = 0; i < d->rsets; ++i)
		bad += ipt__blk_set_with(d, i, d->want_text) !=
		       ipt__blk_set(d, i);
	CHECK_EQ(bad, 0);
}

static uint8_t trace[64];

static void run(int insn, int with_realloc, int grow)
{
	struct ipt_allocator a = { plain_alloc, plain_free, NULL, NULL };
	struct pt_insn_decoder *idec = NULL;
	struct pt_block_decoder *d;
	struct pt_config config;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + sizeof(trace);
	if (insn) {
		idec = with_realloc ? pt_insn_alloc_decoder(&config) :
				      ipt_insn_alloc_decoder_with(&config, &a);
		CHECK(idec != NULL);
		if (!idec)
			return;
		d = &idec->blkdec;
	} else {
		d = with_realloc ? pt_blk_alloc_decoder(&config) :
				   ipt_blk_alloc_decoder_with(&config, &a);
		CHECK(d != NULL);
		if (!d)
			return;
	}
	CHECK_EQ(pt_image_set_callback(d->image, code_read, NULL), 0);
	if (!grow && insn)
		CHECK_EQ(ipt_insn_set_cache_limit(idec,
						  2 * ipt__blk_set_bytes(d)), 0);
	else if (!grow)
		CHECK_EQ(ipt_blk_set_cache_limit(d, 2 * ipt__blk_set_bytes(d)),
			 0);
	ipt__blk_cache_sync(d);
	ipt__blk_set_run_hook(d, count_run, NULL);
	check_sets_with(d);
	if (grow) {
		test_grow(d);
		test_dense(d);
	} else
		test_pair(d);
	if (insn)
		pt_insn_free_decoder(idec);
	else
		pt_blk_free_decoder(d);
}

int main(void)
{
	int insn, with_realloc, grow;

	test_layout();

	for (insn = 0; insn < 2; ++insn)
		for (with_realloc = 0; with_realloc < 2; ++with_realloc)
			for (grow = 0; grow < 2; ++grow)
				/* An instruction decoder's table grows in
				 * place or starts over. */
				if (!grow || !insn || with_realloc)
					run(insn, with_realloc, grow);
	return check_done();
}

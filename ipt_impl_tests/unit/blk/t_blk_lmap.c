/* The block decoder's length map (the sizes of ordinary instructions runs
 * were recorded from, by piece of code): its slots start few and grow
 * fourfold as pieces come, up to IPT__LMAP_SLOTS.  Whatever it has grown
 * to, a look-up gives the size put for that address and context or
 * nothing, never another; every piece it holds is found; growth that
 * finds no memory leaves the map as it was; clearing it forgets every
 * size; and freeing the decoder frees every byte it took.  (It compiles
 * its own copy of the implementation to reach the map.) */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "blk_util.h"
#include "check.h"

/* Counts the bytes live; fails allocations of @fail_from bytes or more. */
struct counter {
	long live;
	size_t fail_from;
};

static void *count_alloc(void *context, size_t size)
{
	struct counter *c = (struct counter *) context;
	void *p;

	if (c->fail_from && size >= c->fail_from)
		return NULL;
	p = malloc(size);
	if (p)
		c->live += (long) size;
	return p;
}

static void count_free(void *context, void *ptr, size_t size)
{
	struct counter *c = (struct counter *) context;

	if (ptr)
		c->live -= (long) size;
	free(ptr);
}

/* The size the map has for @ip in context @ctx, and its section in
 * *@isid; zero if none. */
static uint8_t get(const struct pt_block_decoder *d, uint64_t ip, uint32_t ctx,
		   int *isid)
{
	const struct ipt__blk_lmap *map = ipt__blk_lmap_find(d, ip, ctx);

	return map ? ipt__blk_lmap_size(map, ip, isid) : 0;
}

/* Note @size at @ip in context @ctx and section 7, the piece not known. */
static void put(struct pt_block_decoder *d, uint64_t ip, uint32_t ctx,
		uint8_t size)
{
	(void) ipt__blk_lmap_put(d, NULL, ip, ctx, 7, size);
}

/* The address of piece @i, at offset @i % 256 in it, and its size there. */
static uint64_t piece_ip(int i)
{
	return 0x7f0000000000ull + (uint64_t) i * 0x1300 + (uint64_t) (i % 256);
}

static uint8_t piece_size(int i)
{
	return (uint8_t) (1 + i % 15);
}

/* How many of pieces 0 to @n - 1 in context @ctx give their size; *@wrong
 * counts those that give another. */
static int found(const struct pt_block_decoder *d, int n, uint32_t ctx,
		 int *wrong)
{
	int i, count = 0, isid;

	for (i = 0; i < n; ++i) {
		uint8_t size = get(d, piece_ip(i), ctx, &isid);

		if (size == piece_size(i) && isid == 7)
			count += 1;
		else if (size)
			*wrong += 1;
	}
	return count;
}

static void test_growth(void)
{
	struct counter c = { 0, 0 };
	struct ipt_allocator a = { count_alloc, count_free, &c, NULL };
	struct pt_block_decoder *d;
	struct pt_config *config;
	struct tb t;
	int i, wrong = 0, isid;

	tb_init(&t);
	tb_start64(&t, 0x1000);
	config = tb_done(&t);
	d = ipt_blk_alloc_decoder_with(config, &a);
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(d->lmap == NULL);

	/* Up to a quarter of the first slots in use (a piece may take
	 * another's slot): no growth yet. */
	for (i = 0; d->lmap_used < 1u << (IPT__LMAP_FIRST_BITS - 2) && i < 64;
	     ++i)
		put(d, piece_ip(i), 1, piece_size(i));
	CHECK_EQ(d->lmap_bits, IPT__LMAP_FIRST_BITS);
	CHECK_EQ(d->lmap_used, 1u << (IPT__LMAP_FIRST_BITS - 2));
	CHECK_EQ(found(d, i, 1, &wrong), (int) d->lmap_used);
	/* The next new piece grows the slots fourfold; the pieces moved
	 * are found there. */
	put(d, piece_ip(i), 1, piece_size(i));
	i += 1;
	CHECK_EQ(d->lmap_bits, IPT__LMAP_FIRST_BITS + 2);
	CHECK_EQ(found(d, i, 1, &wrong), (int) d->lmap_used);
	CHECK(d->lmap_used >= 1u << (IPT__LMAP_FIRST_BITS - 2));
	/* Another context, another offset in the piece: nothing. */
	CHECK_EQ(get(d, piece_ip(0), 2, &isid), 0);
	CHECK_EQ(get(d, piece_ip(0) + 1, 1, &isid), 0);
	/* Noted in a piece already found: there, in its own nibble; not
	 * from another section. */
	{
		struct ipt__blk_lmap *map = ipt__blk_lmap_find(d, piece_ip(0), 1);

		CHECK(map != NULL);
		CHECK(ipt__blk_lmap_put(d, map, piece_ip(0) + 1, 1, 7, 9) ==
		      map);
		CHECK(ipt__blk_lmap_put(d, map, piece_ip(0) + 2, 1, 8, 9) ==
		      map);
		CHECK_EQ(get(d, piece_ip(0) + 1, 1, &isid), 9);
		CHECK_EQ(isid, 7);
		CHECK_EQ(get(d, piece_ip(0), 1, &isid), piece_size(0));
		CHECK_EQ(get(d, piece_ip(0) + 2, 1, &isid), 0);
	}

	/* Growth without memory: the map stays as it was, and works. */
	c.fail_from = sizeof(struct ipt__blk_lmap *) << d->lmap_bits;
	for (; i < 1 << d->lmap_bits; ++i)
		put(d, piece_ip(i), 1, piece_size(i));
	CHECK_EQ(d->lmap_bits, IPT__LMAP_FIRST_BITS + 2);
	CHECK_EQ(found(d, i, 1, &wrong), (int) d->lmap_used);
	c.fail_from = 0;

	/* Up to the most slots, and no further. */
	for (; i < 3 * IPT__LMAP_SLOTS; ++i) {
		put(d, piece_ip(i), 1, piece_size(i));
		if (get(d, piece_ip(i), 1, &isid) !=
		    piece_size(i))
			wrong += 1;
	}
	CHECK_EQ(d->lmap_bits, IPT__LMAP_SLOT_BITS);
	CHECK(d->lmap_used <= IPT__LMAP_SLOTS);
	CHECK(d->lmap_used > IPT__LMAP_SLOTS / 2);
	CHECK_EQ(found(d, i, 1, &wrong), (int) d->lmap_used);
	CHECK_EQ(wrong, 0);

	/* Cleared, nothing is found; the pieces serve again. */
	ipt__blk_lmap_clear(d);
	CHECK_EQ(found(d, i, 1, &wrong), 0);
	put(d, piece_ip(5), 1, piece_size(5));
	CHECK_EQ(get(d, piece_ip(5), 1, &isid), piece_size(5));
	CHECK_EQ(wrong, 0);

	pt_blk_free_decoder(d);
	CHECK_EQ(c.live, 0);
}

int main(void)
{
	test_growth();
	return check_done();
}

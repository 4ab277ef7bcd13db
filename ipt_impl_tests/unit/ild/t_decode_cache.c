/* The decode cache several decoders share (ipt_decode_cache_alloc): a
 * decode through it is the decode without it, for random bytes in every
 * mode, at IPs that share slots, with fewer bytes than a whole
 * instruction, the first time and from the cache; decoders sharing one
 * see code that changed behind the image (after ipt_image_invalidate) as
 * it is now, not as another decoder saw it; the allocator gets back all
 * it gave; bad arguments are refused.
 *
 * The internal interface is static, so this test compiles its own private
 * copy of the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "blk_util.h"
#include "check.h"
#include "ild_util.h"

#include <stdlib.h>
#include <string.h>

/* Instructions at 64 IPs in a 256-slot cache (some share a slot), each
 * IP holding one of two byte strings (so a slot often holds the other's),
 * in the four modes (ptem_unknown is never cached: its sizes leave out
 * bytes it read), over and over, with Zydis set up per instruction or
 * kept: with and without the cache alike, and the cache answers. */
static void test_random(void)
{
	static uint8_t bytes[64][2][pt_max_insn_size];
	struct ipt_decode_cache *cache = ipt_decode_cache_alloc(8, NULL);
	struct ipt__ild_zydis zd;
	int i, wrong = 0, ok = 0, bad = 0, hits = 0;

	ipt__ild_zydis_init(&zd);
	CHECK(cache != NULL);
	if (!cache)
		return;
	for (i = 0; i < (int) sizeof(bytes); ++i)
		((uint8_t *) bytes)[i] = rnd_byte();

	for (i = 0; i < 300000; ++i) {
		struct ipt__insn_ext ec, eu;
		struct pt_insn ic, iu;
		uint32_t at = rnd() % 64, which = rnd() % 2;
		int sc, su;

		memset(&iu, 0, sizeof(iu));
		iu.mode = (enum pt_exec_mode) (rnd() % 4);
		iu.ip = 0x400000 + at * 3;
		memcpy(iu.raw, bytes[at][which], sizeof(iu.raw));
		/* Mostly all of them, sometimes fewer than it needs. */
		iu.size = (uint8_t) (rnd() % 4 ? (uint32_t) pt_max_insn_size :
					     1 + rnd() % pt_max_insn_size);
		memcpy(&ic, &iu, sizeof(ic));
		memset(&ec, 0x5a, sizeof(ec));
		memset(&eu, 0xa5, sizeof(eu));

		/* The hit counts only when the answer came from the slot:
		 * ipt__dcache_get, then the decode to compare with. */
		if (ipt__dcache_get(cache, &ic, &ec)) {
			hits += 1;
			sc = 0;
		} else {
			sc = ipt__ild_decode_cached(cache, i & 1 ? &zd : NULL,
						    &ic, &ec);
		}
		su = ipt__ild_decode(&iu, &eu);
		if (!ild_same(&ic, &ec, sc, &iu, &eu, su))
			wrong += 1;
		else if (su)
			bad += 1;
		else
			ok += 1;
	}
	CHECK_EQ(wrong, 0);
	CHECK(ok > 100000);
	CHECK(bad > 1000);
	CHECK(hits > 20000);
	ipt_decode_cache_free(cache);
}

/* v2:  0x1000 nop; 0x1001 nop; 0x1002 nop; 0x1003 jmp rax
 * v3:  0x1000 xchg ax, ax (66 90); 0x1002 nop; 0x1003 jmp rax */
static const uint8_t code_v2[] = { 0x90, 0x90, 0x90, 0xff, 0xe0 };
static const uint8_t code_v3[] = { 0x66, 0x90, 0x90, 0xff, 0xe0 };

/* The flow from 0x1000 to jmp rax, which disables tracing. */
static struct pt_config *trace_line(struct tb *t)
{
	tb_init(t);
	tb_start64(t, 0x1000);
	tb_ip(t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	return tb_done(t);
}

/* What each version decodes to, for either decoder. */
struct version {
	const uint8_t *code;
	const char *insns, *block;
};

static const struct version versions[] = {
	{ code_v3, "i 1000 2\ni 1002 1\n", "b 1000 1003 3\n" },
	{ code_v2, "i 1000 1\ni 1001 1\ni 1002 1\n", "b 1000 1003 4\n" },
	{ code_v3, "i 1000 2\ni 1002 1\n", "b 1000 1003 3\n" },
};

/* A block and an instruction decoder share a cache; the code behind
 * their image changes from version to version, invalidated each time:
 * each decoder, whichever decodes first, sees the code of the moment. */
static void test_shared_invalidate(const struct pt_config *config)
{
	struct ipt_decode_cache *cache = ipt_decode_cache_alloc(8, NULL);
	struct pt_block_decoder *bd = pt_blk_alloc_decoder(config);
	struct pt_insn_decoder *id = pt_insn_alloc_decoder(config);
	struct pt_image *image = pt_image_alloc(NULL);
	struct log li, lb;
	struct mem m;
	size_t v;
	int blk_first;

	CHECK(cache && bd && id && image);
	if (!cache || !bd || !id || !image)
		goto out;
	mem_init(&m, 0x1000, code_v3, sizeof(code_v3));
	CHECK_EQ(pt_image_set_callback(image, mem_read, &m), 0);
	CHECK_EQ(pt_blk_set_image(bd, image), 0);
	CHECK_EQ(pt_insn_set_image(id, image), 0);
	CHECK_EQ(ipt_blk_set_decode_cache(bd, cache), 0);
	CHECK_EQ(ipt_insn_set_decode_cache(id, cache), 0);

	for (v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		memcpy(m.bytes, versions[v].code, sizeof(code_v3));
		CHECK_EQ(ipt_image_invalidate(image, NULL, 0x1000, 0x1005), 0);
		for (blk_first = 0; blk_first < 2; blk_first++) {
			if (blk_first)
				run_blk_on(&lb, bd);
			run_insn_on(&li, id);
			if (!blk_first)
				run_blk_on(&lb, bd);
			CHECK(strstr(li.text, versions[v].insns) != NULL);
			CHECK(strstr(lb.text, versions[v].block) != NULL);
		}
	}

	/* Without the cache again. */
	CHECK_EQ(ipt_blk_set_decode_cache(bd, NULL), 0);
	run_blk_on(&lb, bd);
	CHECK(strstr(lb.text, versions[2].block) != NULL);
out:
	pt_insn_free_decoder(id);
	pt_blk_free_decoder(bd);
	pt_image_free(image);
	ipt_decode_cache_free(cache);
}

/* An allocator that counts, and fails the nth allocation (0: none). */
struct counting {
	long allocs, frees, bytes, fail_at;
};

static void *count_alloc(void *context, size_t size)
{
	struct counting *c = (struct counting *) context;

	if (c->fail_at && ++c->allocs == c->fail_at)
		return NULL;
	if (!c->fail_at)
		c->allocs += 1;
	c->bytes += (long) size;
	return malloc(size);
}

static void count_free(void *context, void *ptr, size_t size)
{
	struct counting *c = (struct counting *) context;

	if (!ptr)
		return;
	c->frees += 1;
	c->bytes -= (long) size;
	free(ptr);
}

static void test_allocator(void)
{
	struct ipt_allocator a;
	struct ipt_decode_cache *cache;
	struct counting c;
	long fail;

	memset(&a, 0, sizeof(a));
	a.alloc = count_alloc;
	a.free = count_free;
	a.context = &c;

	memset(&c, 0, sizeof(c));
	cache = ipt_decode_cache_alloc(10, &a);
	CHECK(cache != NULL);
	CHECK(c.bytes >= 32 << 10);
	ipt_decode_cache_free(cache);
	CHECK_EQ(c.bytes, 0);
	CHECK_EQ(c.allocs, c.frees);

	for (fail = 1; fail <= 2; ++fail) {
		memset(&c, 0, sizeof(c));
		c.fail_at = fail;
		cache = ipt_decode_cache_alloc(10, &a);
		CHECK(cache == NULL);
		CHECK_EQ(c.bytes, 0);
	}
}

static void test_args(void)
{
	struct ipt_allocator none;
	struct ipt_decode_cache *cache;

	CHECK(ipt_decode_cache_alloc(7, NULL) == NULL);
	CHECK(ipt_decode_cache_alloc(25, NULL) == NULL);
	CHECK(ipt_decode_cache_alloc(0xffffffffu, NULL) == NULL);
	memset(&none, 0, sizeof(none));
	CHECK(ipt_decode_cache_alloc(8, &none) == NULL);
	cache = ipt_decode_cache_alloc(8, NULL);
	CHECK(cache != NULL);
	CHECK_EQ(ipt_blk_set_decode_cache(NULL, cache), -pte_invalid);
	CHECK_EQ(ipt_insn_set_decode_cache(NULL, cache), -pte_invalid);
	ipt_decode_cache_free(cache);
	ipt_decode_cache_free(NULL);
}

int main(void)
{
	struct tb t;

	test_random();
	test_shared_invalidate(trace_line(&t));
	test_allocator();
	test_args();
	return check_done();
}

/* Random bytes through instruction decoding (>>ild): never a crash, only
 * success or -pte_bad_insn; a decoded size fits and does not change when
 * more bytes follow; and decoding through a cached callback image gives the
 * same instruction (bytes, size, class, truncation) as through an uncached
 * one, over memory with mappings that end mid-page and at page ends; and
 * Zydis' answers remembered by their bytes (the memo) give what Zydis
 * gives, whatever bytes follow an instruction and in whichever mode, and
 * whatever displacement and immediate follow its key, and whatever
 * registers its ModRM byte names where the memo leaves them out.
 *
 * The internal interface is static, so this test compiles its own private
 * copy of the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"

#include <string.h>

#define rnd check_rand

/* Bytes that look like code more often than uniform noise does. */
static uint8_t rnd_byte(void)
{
	static const uint8_t common[] = {
		0x66, 0x67, 0xf2, 0xf3, 0x0f, 0x48, 0x41, 0xe8, 0xe9, 0xeb,
		0xff, 0xc3, 0x74, 0x01, 0xc4, 0xc5, 0x62, 0xd5, 0x8b, 0x89,
	};
	uint32_t r = rnd();

	if (r & 1)
		return common[(r >> 1) % sizeof(common)];
	return (uint8_t) (r >> 1);
}

static void test_random_bytes(void)
{
	int i, ok = 0, bad = 0, wrong = 0;

	for (i = 0; i < 200000; ++i) {
		struct ipt__insn_ext iext, iext2;
		struct pt_insn insn, insn2;
		int status, status2, j;

		memset(&insn, 0, sizeof(insn));
		for (j = 0; j < pt_max_insn_size; ++j)
			insn.raw[j] = rnd_byte();
		insn.mode = (enum pt_exec_mode) (1 + rnd() % 3);
		insn.size = (uint8_t) (1 + rnd() % pt_max_insn_size);
		insn2 = insn;

		status = ipt__ild_decode(&insn, &iext);
		if (status == -pte_bad_insn) {
			bad += 1;
			if (insn.size != insn2.size)
				wrong += 1;
			continue;
		}
		if (status != 0 || insn.size == 0 || insn.size > insn2.size ||
		    insn.iclass == ptic_error) {
			wrong += 1;
			continue;
		}
		ok += 1;

		/* More bytes after it change nothing. */
		insn2.size = pt_max_insn_size;
		status2 = ipt__ild_decode(&insn2, &iext2);
		if (status2 != 0 || insn2.size != insn.size ||
		    insn2.iclass != insn.iclass ||
		    iext2.iclass != iext.iclass ||
		    iext2.variant.branch.is_direct !=
			    iext.variant.branch.is_direct ||
		    iext2.variant.branch.displacement !=
			    iext.variant.branch.displacement)
			wrong += 1;
	}
	CHECK_EQ(wrong, 0);
	CHECK(ok > 50000);
	CHECK(bad > 1000);
}

/* Memory: 16 KiB at 0x10000 of random code, served as mappings that end at
 * the given offsets. */
static uint8_t code[0x4000];
static const uint32_t ends[] = { 0x0ff3, 0x1000, 0x1808, 0x2000, 0x2001,
				 0x3ffa, 0x4000 };

static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	uint64_t off, end = 0;
	size_t i;

	(void) asid;
	(void) context;
	if (ip < 0x10000 || 0x14000 <= ip)
		return -pte_nomap;
	off = ip - 0x10000;
	for (i = 0; i < sizeof(ends) / sizeof(ends[0]); ++i) {
		if (off < ends[i]) {
			end = ends[i];
			break;
		}
	}
	if (end - off < size)
		size = (size_t) (end - off);
	memcpy(buffer, &code[off], size);
	return (int) size;
}

static void test_cached_same_as_uncached(void)
{
	struct pt_image *cached, *uncached;
	struct pt_asid asid;
	int i, same = 0, differ = 0, truncated = 0;

	for (i = 0; i < (int) sizeof(code); ++i)
		code[i] = rnd_byte();
	cached = pt_image_alloc(NULL);
	uncached = pt_image_alloc(NULL);
	CHECK_EQ(pt_image_set_callback(cached, read_code, NULL), 0);
	CHECK_EQ(pt_image_set_callback(uncached, read_code, NULL), 0);
	CHECK_EQ(ipt_image_set_cache_limit(cached, 2 * 4096), 0);
	CHECK_EQ(ipt_image_set_cache_limit(uncached, 0), 0);
	pt_asid_init(&asid);

	for (i = 0; i < 100000; ++i) {
		struct ipt__insn_ext ec, eu;
		struct pt_insn ic, iu;
		int sc, su;

		memset(&ic, 0, sizeof(ic));
		ic.mode = (enum pt_exec_mode) (1 + rnd() % 3);
		ic.ip = 0x10000 - 8 + rnd() % (sizeof(code) + 16);
		/* Often near a mapping's end. */
		if (rnd() & 1)
			ic.ip = 0x10000 + ends[rnd() % 7] - rnd() % 16;
		iu = ic;

		sc = ipt__insn_decode(&ic, &ec, cached, &asid);
		su = ipt__insn_decode(&iu, &eu, uncached, &asid);
		if (sc != su ||
		    (!su && (ic.size != iu.size || ic.iclass != iu.iclass ||
			     ic.truncated != iu.truncated ||
			     ic.isid != iu.isid ||
			     memcmp(ic.raw, iu.raw, iu.size) != 0 ||
			     ec.iclass != eu.iclass))) {
			if (differ++ < 5)
				printf("differ at %llx mode %d: %d %d\n",
				       (unsigned long long) ic.ip, ic.mode, sc,
				       su);
			continue;
		}
		same += 1;
		truncated += !su && iu.truncated;
	}
	CHECK_EQ(differ, 0);
	CHECK(same == 100000);
	/* Instructions across a mapping's end were among them. */
	CHECK(truncated > 100);

	pt_image_free(cached);
	pt_image_free(uncached);
}

/* An empty @memo, for @with; @without decodes without one.  Only the
 * memo's bitmaps are cleared: whatever its entries hold before use must
 * not count. */
static void memo_setup(struct ipt__ild_memo *memo,
		       struct ipt__ild_zydis *with,
		       struct ipt__ild_zydis *without)
{
	memset(memo, 0x5a, sizeof(*memo));
	ipt__ild_memo_init(memo);
	ipt__ild_zydis_init(with);
	ipt__ild_zydis_init(without);
	with->memo = memo;
}

/* Instructions from a small pool of byte strings, each followed by other
 * random bytes and now and then changed in one byte, so that the memo
 * finds many of them, and some that share their first bytes with one it
 * holds but not the rest. */
static void test_memo_same_as_zydis(void)
{
	static struct ipt__ild_memo memo;
	struct ipt__ild_zydis with, without;
	uint8_t pool[64][pt_max_insn_size];
	int i, j, same = 0, differ = 0, hits = 0;

	for (i = 0; i < 64; ++i)
		for (j = 0; j < pt_max_insn_size; ++j)
			pool[i][j] = rnd_byte();
	memo_setup(&memo, &with, &without);

	for (i = 0; i < 300000; ++i) {
		struct ipt__insn_ext iext, iext2;
		struct pt_insn insn, insn2;
		uint8_t raw[pt_max_insn_size];
		uint32_t r = rnd(), from = rnd() % pt_max_insn_size;
		int status, status2;

		memcpy(raw, pool[r % 64], sizeof(raw));
		for (j = (int) from; j < pt_max_insn_size; ++j)
			raw[j] = rnd_byte();
		if (!(r & 0x700))
			raw[(r >> 11) % pt_max_insn_size] ^=
				(uint8_t) (1u << ((r >> 16) & 7));

		memset(&insn, 0, sizeof(insn));
		insn.mode = (enum pt_exec_mode) ((r >> 20) % 4);
		insn2 = insn;
		hits += insn.mode != ptem_unknown &&
			ipt__ild_memo_find(&memo, raw, insn.mode) != NULL;
		status = ipt__ild_decode_bytes_with(&with, &insn, &iext, raw,
						    pt_max_insn_size);
		status2 = ipt__ild_decode_bytes_with(&without, &insn2, &iext2,
						     raw, pt_max_insn_size);
		if (status != status2 ||
		    (!status && (insn.size != insn2.size ||
				 insn.iclass != insn2.iclass ||
				 iext.iclass != iext2.iclass ||
				 iext.variant.branch.displacement !=
					 iext2.variant.branch.displacement ||
				 iext.variant.branch.is_direct !=
					 iext2.variant.branch.is_direct)))
			differ += 1;
		else
			same += 1;
	}
	CHECK_EQ(differ, 0);
	CHECK(same == 300000);
	/* The memo answered for many of them. */
	CHECK(hits > 50000);
}

/* Whether the memo and Zydis agree on @raw in @mode; @with has the memo. */
static int memo_agrees(struct ipt__ild_zydis *with,
		       struct ipt__ild_zydis *without, const uint8_t *raw,
		       enum pt_exec_mode mode)
{
	struct ipt__insn_ext iext, iext2;
	struct pt_insn insn, insn2;
	int status, status2;

	memset(&insn, 0, sizeof(insn));
	insn.mode = mode;
	insn2 = insn;
	status = ipt__ild_decode_bytes_with(with, &insn, &iext, raw,
					    pt_max_insn_size);
	status2 = ipt__ild_decode_bytes_with(without, &insn2, &iext2, raw,
					     pt_max_insn_size);
	return status == status2 &&
	       (status || (insn.size == insn2.size &&
			   insn.iclass == insn2.iclass &&
			   iext.iclass == iext2.iclass &&
			   iext.variant.branch.displacement ==
				   iext2.variant.branch.displacement &&
			   iext.variant.branch.is_direct ==
				   iext2.variant.branch.is_direct));
}

/* An instruction decoded once, then again with other bytes after its key
 * (its displacement and immediate, and what follows it): the memo answers
 * for it without Zydis, as Zydis would, the branch displacement read from
 * the new bytes.  3DNow!'s key is all its bytes. */
static void test_memo_by_key(void)
{
	static struct ipt__ild_memo memo;
	/* A call and a jump by offset, a load with a displacement, a
	 * compare with an immediate. */
	static const uint8_t known[][6] = {
		{ 0xe8, 0x10, 0x20, 0x30, 0x40 },
		{ 0x74, 0x05 },
		{ 0x48, 0x8b, 0x45, 0xf8 },
		{ 0x83, 0x7d, 0xfc, 0x03 },
	};
	static const uint8_t pfrcp[2][4] = {
		{ 0x0f, 0x0f, 0xc1, 0x96 }, /* PFRCP */
		{ 0x0f, 0x0f, 0xc1, 0x97 }, /* PFRSQRT */
	};
	struct ipt__ild_zydis with, without;
	ZydisDecoder zydis;
	int i, j, differ = 0, hits = 0, tried = 0;

	memo_setup(&memo, &with, &without);

	for (i = 0; i < (int) (sizeof(known) / sizeof(known[0])); ++i) {
		uint8_t raw[pt_max_insn_size];

		memset(raw, 0x90, sizeof(raw));
		memcpy(raw, known[i], sizeof(known[i]));
		CHECK(memo_agrees(&with, &without, raw, ptem_64bit));
		raw[sizeof(known[i]) - 1] ^= 0x81;
		raw[1] ^= i == 0 ? 0x7f : 0;
		CHECK(ipt__ild_memo_find(&memo, raw, ptem_64bit) != NULL);
		CHECK(memo_agrees(&with, &without, raw, ptem_64bit));
	}
	{
		uint8_t raw[pt_max_insn_size];

		memset(raw, 0x90, sizeof(raw));
		memcpy(raw, pfrcp[0], sizeof(pfrcp[0]));
		CHECK(memo_agrees(&with, &without, raw, ptem_32bit));
		memcpy(raw, pfrcp[1], sizeof(pfrcp[1]));
		CHECK(ipt__ild_memo_find(&memo, raw, ptem_32bit) == NULL);
		CHECK(memo_agrees(&with, &without, raw, ptem_32bit));
	}

	for (i = 0; i < 100000; ++i) {
		uint8_t raw[pt_max_insn_size], raw2[pt_max_insn_size];
		enum pt_exec_mode mode = (enum pt_exec_mode) (1 + rnd() % 3);
		ZydisDecodedInstruction z;
		uint32_t key;

		for (j = 0; j < pt_max_insn_size; ++j)
			raw[j] = rnd_byte();
		if (ZYAN_FAILED(ZydisDecoderInit(
			    &zydis,
			    mode == ptem_64bit ? ZYDIS_MACHINE_MODE_LONG_64 :
			    mode == ptem_32bit ? ZYDIS_MACHINE_MODE_LEGACY_32 :
						 ZYDIS_MACHINE_MODE_LEGACY_16,
			    mode == ptem_64bit ? ZYDIS_STACK_WIDTH_64 :
			    mode == ptem_32bit ? ZYDIS_STACK_WIDTH_32 :
						 ZYDIS_STACK_WIDTH_16)))
			break;
		if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(
			    &zydis, NULL, raw, sizeof(raw), &z)))
			continue;
		key = ipt__ild_key_size(&z);
		if (key < 1 || key > z.length)
			differ += 1;
		if (!memo_agrees(&with, &without, raw, mode))
			differ += 1;
		/* Other bytes from the key on; mostly the same mode. */
		memcpy(raw2, raw, sizeof(raw2));
		for (j = (int) key; j < pt_max_insn_size; ++j)
			raw2[j] = (uint8_t) rnd();
		if (!(rnd() & 7))
			mode = (enum pt_exec_mode) (1 + rnd() % 3);
		tried += 1;
		hits += key < z.length && memcmp(raw, raw2, z.length) &&
			ipt__ild_memo_find(&memo, raw2, mode) != NULL;
		if (!memo_agrees(&with, &without, raw2, mode))
			differ += 1;
	}
	CHECK_EQ(differ, 0);
	CHECK(tried > 20000);
	/* Most that had other bytes after the key found it. */
	CHECK(hits > tried / 4);
}

/* A move, a load, a compare, a load with zero extension: other
 * registers in the ModRM byte find them in the memo, as Zydis would
 * decode them, and so does another register operand of a group opcode
 * (an add, a call); what the ModRM byte says besides (a SIB byte, a
 * displacement, a memory operand), other bytes before it, and the reg
 * field of group opcodes, where it names the operation, do not. */
static void test_memo_unreg(void)
{
	static struct ipt__ild_memo memo;
	static const struct {
		uint8_t first[6], then[6];
		int hit;
	} cases[] = {
		/* mov rbx, rax; mov rax, rbx */
		{ { 0x48, 0x89, 0xc3 }, { 0x48, 0x89, 0xd8 }, 1 },
		/* mov ebx, eax; mov esp, edi */
		{ { 0x89, 0xc3 }, { 0x89, 0xfc }, 1 },
		/* mov eax, [rsp+8]; mov ecx, [rsp+16] */
		{ { 0x8b, 0x44, 0x24, 0x08 }, { 0x8b, 0x4c, 0x24, 0x10 }, 1 },
		/* movzx eax, al; movzx edx, cl */
		{ { 0x0f, 0xb6, 0xc0 }, { 0x0f, 0xb6, 0xd1 }, 1 },
		/* movzx rax, byte [rsp]; movzx rcx, byte [rsp] */
		{ { 0x48, 0x0f, 0xb6, 0x04, 0x24 },
		  { 0x48, 0x0f, 0xb6, 0x0c, 0x24 }, 1 },
		/* cmp [rbp-8], eax; cmp [rbp-8], edx */
		{ { 0x39, 0x45, 0xf8 }, { 0x39, 0x55, 0xf8 }, 1 },
		/* mov eax, [rsp]; mov eax, [rip+disp32] */
		{ { 0x8b, 0x04, 0x24 }, { 0x8b, 0x05, 0x10, 0x20, 0x30, 0 }, 0 },
		/* mov eax, [rax]; mov eax, [rax+8] */
		{ { 0x8b, 0x00 }, { 0x8b, 0x40, 0x08 }, 0 },
		/* mov eax, ebx; mov ax, bx */
		{ { 0x89, 0xd8 }, { 0x66, 0x89, 0xd8 }, 0 },
		/* call rax; jmp rax */
		{ { 0xff, 0xd0 }, { 0xff, 0xe0 }, 0 },
		/* call rax; call rcx */
		{ { 0xff, 0xd0 }, { 0xff, 0xd1 }, 1 },
		/* add rsp, 8; add rbp, 16 */
		{ { 0x48, 0x83, 0xc4, 0x08 }, { 0x48, 0x83, 0xc5, 0x10 }, 1 },
		/* neg eax; neg dword [rax] */
		{ { 0xf7, 0xd8 }, { 0xf7, 0x18 }, 0 },
		/* xadd eax, eax; shl eax, 1 (C1 as opcode after a prefix) */
		{ { 0x0f, 0xc1, 0xc0 }, { 0x66, 0xc1, 0xe0, 0x01 }, 0 },
		/* xadd ecx, edx: the hint for C1 third now says a group */
		{ { 0x66, 0xc1, 0xe0, 0x01 }, { 0x0f, 0xc1, 0xd1 }, 0 },
		/* add rsp, 8; sub rsp, 8 */
		{ { 0x48, 0x83, 0xc4, 0x08 }, { 0x48, 0x83, 0xec, 0x08 }, 0 },
		/* mov eax, imm32; xbegin rel32 */
		{ { 0xc7, 0xc0, 1, 2, 3, 4 }, { 0xc7, 0xf8, 1, 2, 3, 4 }, 0 },
	};
	struct ipt__ild_zydis with, without;
	int i, j, differ = 0, hits = 0, tried = 0;

	memo_setup(&memo, &with, &without);

	for (i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); ++i) {
		uint8_t raw[pt_max_insn_size];

		memset(raw, 0x90, sizeof(raw));
		memcpy(raw, cases[i].first, sizeof(cases[i].first));
		CHECK(memo_agrees(&with, &without, raw, ptem_64bit));
		memset(raw, 0x90, sizeof(raw));
		memcpy(raw, cases[i].then, sizeof(cases[i].then));
		CHECK_EQ(ipt__ild_memo_find(&memo, raw, ptem_64bit) != NULL,
			 cases[i].hit);
		CHECK(memo_agrees(&with, &without, raw, ptem_64bit));
	}

	/* Random instructions, often with the opcodes the memo keeps
	 * without register fields, then again with other bits in the
	 * bytes where a ModRM byte may be. */
	for (i = 0; i < 200000; ++i) {
		static const uint8_t ops[] = {
			0x01, 0x03, 0x29, 0x31, 0x39, 0x3b, 0x63, 0x69, 0x6b,
			0x85, 0x87, 0x88, 0x89, 0x8b, 0x8d, 0xff, 0x83, 0xc7,
			0xf7, 0x8f, 0xc6, 0xd1,
		};
		static const uint8_t ops0f[] = {
			0x44, 0xaf, 0xb6, 0xbf, 0xa3, 0xa5, 0xb1, 0xc1, 0xbc,
			0xba, 0x01, 0xae, 0x22, 0x00, 0xc7, 0x18, 0xb8, 0xb9,
		};
		uint8_t raw[pt_max_insn_size], raw2[pt_max_insn_size];
		enum pt_exec_mode mode = (enum pt_exec_mode) (1 + rnd() % 3);
		uint32_t r = rnd(), at = 0;

		for (j = 0; j < pt_max_insn_size; ++j)
			raw[j] = rnd_byte();
		if (r & 1)
			raw[at++] = (r & 2) ? 0x48 : 0x66;
		if (r & 4) {
			raw[at++] = 0x0f;
			raw[at] = ops0f[(r >> 8) % sizeof(ops0f)];
		} else {
			raw[at] = ops[(r >> 8) % sizeof(ops)];
		}
		if (!memo_agrees(&with, &without, raw, mode))
			differ += 1;
		/* Other registers, or other bits anywhere in a byte. */
		memcpy(raw2, raw, sizeof(raw2));
		j = 1 + (int) ((r >> 16) % 4);
		if (r & 0x100000)
			raw2[j] ^= (uint8_t) (rnd() & 0xff);
		else
			raw2[j] ^= (uint8_t) (rnd() &
					      (raw2[j] >= 0xc0 ? 0x3f : 0x38));
		tried += 1;
		hits += memcmp(raw, raw2, sizeof(raw)) &&
			ipt__ild_memo_find(&memo, raw2, mode) != NULL;
		if (!memo_agrees(&with, &without, raw2, mode))
			differ += 1;
	}
	CHECK_EQ(differ, 0);
	/* Many of those with other registers were in the memo. */
	CHECK(hits > tried / 4);
}

int main(void)
{
	check_seed = 12345;
	test_random_bytes();
	test_cached_same_as_uncached();
	test_memo_same_as_zydis();
	test_memo_by_key();
	test_memo_unreg();
	return check_done();
}

/* Decode cache harness: instructions from the input decoded through a
 * decode cache (ipt_decode_cache_alloc) and without one must come out
 * alike: status, size, classes, branch displacement.
 *
 * Input: a byte for the cache (1 << (8 + b % 3) slots, few, so that IPs
 * share slots), then records: a mode byte (low two bits), an IP byte (a
 * small range: slots and IPs meet often), a byte whose low four bits give
 * how many bytes the decoder may read (1 to 15) and whose high four bits
 * how far the next record starts (1 to 16 bytes on), then the bytes of
 * the instruction (up to 15, zero where the input ends).  Each record is
 * decoded twice through the cache (the second time it may answer, and
 * Zydis is the one kept from record to record) and once without.  The cache is shared by the decodes of one input, as
 * decoders on threads share one.
 *
 * The internal decode is static, so the harness compiles its own private
 * copy of the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "fuzz.h"
#include "../unit/ild/ild_util.h"

/* The record at rec (n bytes of input from there) as an instruction to
 * decode. */
static void fz_record(struct pt_insn *insn, const uint8_t *rec, size_t n)
{
	size_t code = n - 3;

	memset(insn, 0, sizeof(*insn));
	insn->mode = (enum pt_exec_mode) (rec[0] & 3);
	insn->ip = 0x7000 + rec[1];
	insn->size = (uint8_t) (1 + (rec[2] & 0xf) % 15);
	memcpy(insn->raw, &rec[3],
	       code < sizeof(insn->raw) ? code : sizeof(insn->raw));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ipt_decode_cache *cache;
	struct ipt__ild_zydis zd;
	size_t at;
	int pass;

	if (!size)
		return 0;
	cache = ipt_decode_cache_alloc(8 + data[0] % 3, NULL);
	if (!cache)
		fz_fail("no decode cache", 0, 0);
	ipt__ild_zydis_init(&zd);

	for (at = 1; at + 3 <= size; at += 1 + (size_t) (data[at + 2] >> 4)) {
		struct pt_insn plain, cached;
		struct ipt__insn_ext eplain, ecached;
		int splain, scached;

		fz_record(&plain, &data[at], size - at);
		splain = ipt__ild_decode(&plain, &eplain);
		for (pass = 0; pass < 2; ++pass) {
			fz_record(&cached, &data[at], size - at);
			memset(&ecached, 0, sizeof(ecached));
			scached = ipt__ild_decode_cached(cache,
							 pass ? &zd : NULL,
							 &cached, &ecached);
			if (!ild_same(&cached, &ecached, scached, &plain,
				      &eplain, splain))
				fz_fail("decoded otherwise through the cache",
					scached, splain);
		}
	}
	ipt_decode_cache_free(cache);
	return 0;
}

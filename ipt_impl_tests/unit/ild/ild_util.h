/* ild_util.h - for the >>ild tests (and the decode cache harness), which
 * compile their own copy of the implementation: pseudo-random instruction
 * bytes, a fixed sequence (the same every run) with the bytes code starts
 * with more often than uniform noise has them; and whether two decodes
 * came out alike. */
#ifndef ILD_UTIL_H
#define ILD_UTIL_H

#include <stdint.h>

static uint32_t seed = 12345;

static uint32_t rnd(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

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

/* Did decode a (status sa) and decode b (status sb) give the same:
 * status and size, and on success the classes and the branch? */
static int ild_same(const struct pt_insn *a, const struct ipt__insn_ext *ea,
		    int sa, const struct pt_insn *b,
		    const struct ipt__insn_ext *eb, int sb)
{
	if (sa != sb || a->size != b->size)
		return 0;
	if (sa)
		return 1;
	return a->iclass == b->iclass && ea->iclass == eb->iclass &&
	       ea->variant.branch.is_direct == eb->variant.branch.is_direct &&
	       ea->variant.branch.displacement ==
		       eb->variant.branch.displacement;
}

#endif /* ILD_UTIL_H */

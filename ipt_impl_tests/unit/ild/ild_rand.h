/* ild_rand.h - pseudo-random instruction bytes for the >>ild tests: a
 * fixed sequence (the same every run), with the bytes code starts with
 * more often than uniform noise has them. */
#ifndef ILD_RAND_H
#define ILD_RAND_H

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

#endif /* ILD_RAND_H */

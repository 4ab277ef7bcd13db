/* static_api.h - what the IPT_STATIC test's translation units share: no
 * ipt.h or intel-pt.h types, so each unit may include either. */
#ifndef IPT_HARD_STATIC_API_H
#define IPT_HARD_STATIC_API_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The code a trace runs over. */
struct static_code {
	const uint8_t *bytes;
	size_t size;
	uint64_t base;
};

static inline uint64_t static_packet_key(int type, int size, uint64_t offset)
{
	return ((uint64_t) type << 56) | ((uint64_t) size << 48) | offset;
}

static inline int static_read_code(uint8_t *buffer, size_t size, uint64_t ip,
				   const struct static_code *code)
{
	uint64_t off;

	if (ip < code->base || ip - code->base >= code->size)
		return -13; /* pte_nomap, the same value in both */
	off = ip - code->base;
	if (size > code->size - off)
		size = (size_t) (code->size - off);
	memcpy(buffer, code->bytes + off, size);
	return (int) size;
}

/* Packets: one key per packet (type, size, offset); the number, or -1. */
int a_packets(uint8_t *trace, size_t size, uint64_t *out, int max);
int b_packets(uint8_t *trace, size_t size, uint64_t *out, int max);
int libipt_packets(uint8_t *trace, size_t size, uint64_t *out, int max);

/* Instructions: the IP of each, with events skipped; the number, or -1. */
int a_insns(uint8_t *trace, size_t size, const struct static_code *code,
	    uint64_t *out, int max);
int b_insns(uint8_t *trace, size_t size, const struct static_code *code,
	    uint64_t *out, int max);
int libipt_insns(uint8_t *trace, size_t size, const struct static_code *code,
		 uint64_t *out, int max);

#endif

/* random_pkt.c - the packet layer on hostile bytes.  LLVMFuzzerTestOneInput
 * decodes an input held in a buffer of exactly its size (so a sanitizer
 * sees any read past the end), every way the API allows; the first input
 * byte picks errata and the unknown-packet callback.  Without libFuzzer
 * (no -DPKT_FUZZ_LIBFUZZER), main() feeds it random and mutated inputs
 * from a fixed seed; fuzz/rules.mk builds that with ASan and UBSan. */
#define IPT_IMPLEMENTATION
#include "ipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int skip_cb(struct pt_packet_unknown *unknown,
		   const struct pt_config *config, const uint8_t *pos,
		   void *context)
{
	(void) unknown;
	(void) context;
	/* Claim a size that may run past the end. */
	return (int) (config->end - pos > 0 ? (pos[0] & 7) : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pt_config config;
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	struct ipt_last_ip last_ip;
	uint8_t *buf, flags;
	uint64_t offset;
	int i, errcode;

	if (size < 1)
		return 0;
	flags = data[0];
	buf = (uint8_t *) malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + size - 1;
	config.errata.skd007 = flags & 1;
	config.errata.skz84 = (flags >> 1) & 1;
	if (flags & 4)
		config.decode.callback = skip_cb;

	decoder = pt_pkt_alloc_decoder(&config);
	if (!decoder) {
		free(buf);
		return 0;
	}

	/* From the start, resynchronizing after errors. */
	ipt_last_ip_init(&last_ip);
	errcode = pt_pkt_sync_set(decoder, 0);
	for (i = 0; i < 100000 && errcode >= 0; ++i) {
		errcode = pt_pkt_next(decoder, &packet, sizeof(packet));
		if (errcode > 0 && (packet.type == ppt_tip ||
				    packet.type == ppt_fup ||
				    packet.type == ppt_tip_pge ||
				    packet.type == ppt_tip_pgd)) {
			ipt_last_ip_update_ip(&last_ip, &packet.payload.ip,
					      &config);
			ipt_last_ip_query(&offset, &last_ip);
		}
		if (errcode == 0)
			break;
		if (errcode < 0 && errcode != -pte_eos)
			errcode = pt_pkt_sync_forward(decoder);
	}

	/* Every PSB backward, with a packet or two after each. */
	for (i = 0; i < 1000; ++i) {
		if (pt_pkt_sync_backward(decoder) < 0)
			break;
		pt_pkt_next(decoder, &packet, sizeof(packet));
		pt_pkt_next(decoder, &packet, sizeof(packet) - 8);
	}

	/* Entry at every offset, with the short and long packet sizes. */
	for (offset = 0; offset <= size - 1; ++offset) {
		unsigned char big[sizeof(packet) + 8];

		pt_pkt_sync_set(decoder, offset);
		pt_pkt_next(decoder, (struct pt_packet *) (void *) big,
			    sizeof(big));
		pt_pkt_next(decoder, &packet, 4);
		if (offset % 7 == 0)
			pt_pkt_sync_forward(decoder);
	}

	pt_pkt_free_decoder(decoder);
	free(buf);
	return 0;
}

#ifndef PKT_FUZZ_LIBFUZZER
static uint64_t state = 0x5eed;

static unsigned int rnd(unsigned int n)
{
	state = state * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned int) ((state >> 33) % n);
}

int main(int argc, char **argv)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	uint8_t input[600];
	unsigned int n, runs = 8000, len, i;

	if (argc > 1)
		runs = (unsigned int) strtoul(argv[1], NULL, 0);

	for (n = 0; n < runs; ++n) {
		len = 1 + rnd(sizeof(input));
		for (i = 0; i < len; ++i)
			input[i] = (uint8_t) (rnd(4) ? rnd(256)
					      : (unsigned int[]) { 0x02, 0x82,
						  0x03, 0x07, 0x99, 0x19,
						  0x73, 0xd9, 0x12, 0xc3,
						  0x88, 0xfd, 0x13 }[rnd(13)]);
		for (i = rnd(4); i > 0 && len > 17; --i)
			memcpy(input + 1 + rnd(len - 16), psb,
			       rnd(2) ? 16 : rnd(16));
		LLVMFuzzerTestOneInput(input, len);
	}
	printf("%u passed, 0 failed\n", runs);
	return 0;
}
#endif

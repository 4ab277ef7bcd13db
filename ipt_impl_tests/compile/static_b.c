/* See pkt_static_a.c. */
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"

int pkt_static_decode(uint8_t *begin, uint8_t *end);

/* The number of packets up to the end, or -1. */
int pkt_static_decode(uint8_t *begin, uint8_t *end)
{
	struct pt_config config;
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	int n = 0, errcode;

	pt_config_init(&config);
	config.begin = begin;
	config.end = end;
	decoder = pt_pkt_alloc_decoder(&config);
	if (!decoder)
		return -1;

	errcode = pt_pkt_sync_forward(decoder);
	while (errcode >= 0) {
		errcode = pt_pkt_next(decoder, &packet, sizeof(packet));
		if (errcode >= 0)
			++n;
	}
	pt_pkt_free_decoder(decoder);
	return errcode == -pte_eos ? n : -1;
}

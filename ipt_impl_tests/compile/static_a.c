/* pkt_static_a.c, pkt_static_b.c - two translation units, each with its
 * own static copy of ipt.h's implementation (IPT_STATIC), linked into one
 * program: nothing may clash.  This one encodes, the other decodes. */
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"

#include <stdio.h>

int pkt_static_decode(uint8_t *begin, uint8_t *end);

int main(void)
{
	uint8_t buf[32];
	struct pt_config config;
	struct pt_encoder *encoder;
	struct pt_packet packet;
	uint64_t offset = 0;
	int n;

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	encoder = pt_alloc_encoder(&config);
	if (!encoder)
		return 1;

	packet.type = ppt_psb;
	pt_enc_next(encoder, &packet);
	packet.type = ppt_tsc;
	packet.payload.tsc.tsc = 0x1234;
	pt_enc_next(encoder, &packet);
	packet.type = ppt_psbend;
	pt_enc_next(encoder, &packet);
	pt_enc_get_offset(encoder, &offset);
	pt_free_encoder(encoder);

	n = pkt_static_decode(buf, buf + offset);
	printf("%d\n", n);
	return n == 3 ? 0 : 1;
}

/* The encoder refuses every packet the packet decoder would not read back
 * as the same packet: a TNT without bits, TNT-8 with more than 6 bits or
 * payload bits at or above bit_size, TNT-64 with more than 47 bits or
 * payload bits above them, a CYC value of 2^61 or more.  It writes nothing
 * then.  At each boundary the largest packet it accepts decodes to itself.
 * And for a sweep of TNT and CYC payloads: whatever the encoder accepts,
 * the decoder reads back unchanged. */
#include "ipt.h"

#include <string.h>

#include "check.h"

static uint8_t buf[64];

/* Encodes one packet; on success decodes it and checks the fields. */
static int encode(const struct pt_packet *in)
{
	struct pt_encoder *enc;
	struct pt_packet_decoder *dec;
	struct pt_packet out;
	struct pt_config config;
	uint64_t offset = 1;
	int size, got;

	memset(buf, 0xa5, sizeof(buf));
	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	enc = pt_alloc_encoder(&config);
	if (!CHECK(enc != NULL))
		return -pte_nomem;
	size = pt_enc_next(enc, in);
	CHECK_EQ(pt_enc_get_offset(enc, &offset), 0);
	pt_free_encoder(enc);
	if (size < 0) {
		/* Refused: nothing written, nothing moved. */
		CHECK_EQ(offset, 0);
		CHECK_EQ(buf[0], 0xa5);
		return size;
	}
	CHECK_EQ(offset, size);

	config.end = buf + size;
	dec = pt_pkt_alloc_decoder(&config);
	if (!CHECK(dec != NULL))
		return size;
	CHECK_EQ(pt_pkt_sync_set(dec, 0), 0);
	got = pt_pkt_next(dec, &out, sizeof(out));
	CHECK_EQ(got, size);
	CHECK_EQ(out.type, in->type);
	if (in->type == ppt_cyc)
		CHECK_EQ(out.payload.cyc.value, in->payload.cyc.value);
	else {
		CHECK_EQ(out.payload.tnt.bit_size, in->payload.tnt.bit_size);
		CHECK_EQ(out.payload.tnt.payload, in->payload.tnt.payload);
	}
	pt_pkt_free_decoder(dec);
	return size;
}

static int tnt(enum pt_packet_type type, uint8_t bits, uint64_t payload)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	p.payload.tnt.bit_size = bits;
	p.payload.tnt.payload = payload;
	return encode(&p);
}

static int cyc(uint64_t value)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_cyc;
	p.payload.cyc.value = value;
	return encode(&p);
}

int main(void)
{
	unsigned int bits, shift;

	/* No bits: TNT-8 would be 0x02, the extended opcode. */
	CHECK_EQ(tnt(ppt_tnt_8, 0, 0), -pte_bad_packet);
	CHECK_EQ(tnt(ppt_tnt_64, 0, 0), -pte_bad_packet);
	/* Too many bits: libipt's errors. */
	CHECK_EQ(tnt(ppt_tnt_8, 7, 0), -pte_bad_packet);
	CHECK_EQ(tnt(ppt_tnt_8, 255, 0), -pte_bad_packet);
	CHECK_EQ(tnt(ppt_tnt_64, 48, 0), -pte_invalid);
	CHECK_EQ(tnt(ppt_tnt_64, 255, 0), -pte_invalid);
	/* Payload bits beyond bit_size. */
	CHECK_EQ(tnt(ppt_tnt_8, 1, 2), -pte_bad_packet);
	CHECK_EQ(tnt(ppt_tnt_8, 6, 0x40), -pte_bad_packet);
	CHECK_EQ(tnt(ppt_tnt_8, 3, 1ull << 63), -pte_bad_packet);
	CHECK_EQ(tnt(ppt_tnt_64, 47, 1ull << 47), -pte_invalid);
	/* The largest ones. */
	CHECK_EQ(tnt(ppt_tnt_8, 6, 0x3f), 1);
	CHECK_EQ(tnt(ppt_tnt_8, 1, 1), 1);
	CHECK_EQ(tnt(ppt_tnt_64, 47, (1ull << 47) - 1), 8);
	CHECK_EQ(tnt(ppt_tnt_64, 1, 0), 8);

	/* CYC: 61 bits in nine bytes at most. */
	CHECK_EQ(cyc(0), 1);
	CHECK_EQ(cyc(0x1f), 1);
	CHECK_EQ(cyc(0x20), 2);
	CHECK_EQ(cyc((1ull << 61) - 1), 9);
	CHECK_EQ(cyc(1ull << 61), -pte_bad_packet);
	CHECK_EQ(cyc(1ull << 62), -pte_bad_packet);
	CHECK_EQ(cyc(~0ull), -pte_bad_packet);

	/* Sweeps: accepted means it decodes to itself (checked in encode). */
	for (bits = 0; bits < 10; ++bits) {
		uint64_t payload;

		for (payload = 0; payload < 0x100; payload += 7) {
			int size = tnt(ppt_tnt_8, (uint8_t) bits, payload);

			CHECK(size == 1 || size == -pte_bad_packet);
			CHECK((size == 1) == (bits >= 1 && bits <= 6 &&
					      payload >> bits == 0));
		}
	}
	for (bits = 0; bits < 64; ++bits) {
		int size = tnt(ppt_tnt_64, (uint8_t) bits,
			       bits ? (1ull << (bits - 1)) : 0);

		CHECK_EQ(size, bits == 0 ? -pte_bad_packet
			 : bits <= 47 ? 8 : -pte_invalid);
	}
	for (shift = 0; shift < 64; ++shift) {
		int size = cyc(1ull << shift);

		if (shift < 61)
			CHECK_EQ(size, shift < 5 ? 1
				 : 2 + (int) (shift - 5) / 7);
		else
			CHECK_EQ(size, -pte_bad_packet);
	}
	return check_done();
}

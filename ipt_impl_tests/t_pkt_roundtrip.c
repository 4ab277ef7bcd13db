/* Every packet type encoded, then decoded: same fields, same size.  Every
 * truncation of every encoding ("cutoff") fails with -pte_eos, in the
 * decoder and in the encoder, and the encoder writes nothing then. */
#include "../ipt.h"
#include "check.h"
#include "pkt_samples.h"

static uint8_t buf[64];

static void roundtrip(const struct pt_packet *in, int expect)
{
	struct pt_packet out;
	struct pt_encoder *enc;
	struct pt_packet_decoder *dec;
	struct pt_config config;
	uint64_t offset;
	int size, cut;

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);

	memset(buf, 0xcc, sizeof(buf));
	enc = pt_alloc_encoder(&config);
	CHECK(enc != NULL);
	if (!enc)
		return;
	size = pt_enc_next(enc, in);
	CHECK_EQ(size, expect);
	CHECK_EQ(pt_enc_get_offset(enc, &offset), 0);
	CHECK_EQ(offset, expect);
	pt_free_encoder(enc);
	if (size != expect)
		return;

	/* Decode exactly the encoding. */
	config.end = buf + size;
	dec = pt_pkt_alloc_decoder(&config);
	CHECK(dec != NULL);
	CHECK_EQ(pt_pkt_sync_set(dec, 0), 0);
	memset(&out, 0xa5, sizeof(out));
	CHECK_EQ(pt_pkt_next(dec, &out, sizeof(out)), size);
	CHECK_EQ(out.size, size);
	if (!CHECK(pkt_equal(in, &out)))
		printf("     type %d, sample size %d\n", in->type, expect);
	CHECK_EQ(pt_pkt_get_offset(dec, &offset), 0);
	CHECK_EQ(offset, size);
	CHECK_EQ(pt_pkt_next(dec, &out, sizeof(out)), -pte_eos);
	pt_pkt_free_decoder(dec);

	/* The same with more trace after it: pt_pkt_next's fast path, which
	 * reads without bounds checks, decodes most packets then.  A PAD
	 * leaves the payload alone. */
	config.end = buf + sizeof(buf);
	dec = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_set(dec, 0), 0);
	memset(&out, 0xa5, sizeof(out));
	CHECK_EQ(pt_pkt_next(dec, &out, sizeof(out)), size);
	CHECK_EQ(out.size, size);
	if (!CHECK(pkt_equal(in, &out)))
		printf("     type %d, sample size %d, in a trace\n", in->type,
		       expect);
	if (in->type == ppt_pad) {
		struct pt_packet untouched;

		memset(&untouched, 0xa5, sizeof(untouched));
		CHECK(memcmp(&out.payload, &untouched.payload,
			     sizeof(out.payload)) == 0);
	}
	CHECK_EQ(pt_pkt_get_offset(dec, &offset), 0);
	CHECK_EQ(offset, size);
	pt_pkt_free_decoder(dec);

	/* Cutoff: each shorter buffer. */
	for (cut = 1; cut < size; ++cut) {
		config.end = buf + cut;
		dec = pt_pkt_alloc_decoder(&config);
		CHECK_EQ(pt_pkt_sync_set(dec, 0), 0);
		size = pt_pkt_next(dec, &out, sizeof(out));
		if (size != -pte_eos)
			printf("     cutoff %d of type %d: %d\n", cut, in->type,
			       size);
		CHECK_EQ(size, -pte_eos);
		CHECK_EQ(pt_pkt_get_offset(dec, &offset), 0);
		CHECK_EQ(offset, 0);
		pt_pkt_free_decoder(dec);
		size = expect;

		/* The encoder refuses and leaves the buffer alone. */
		memset(buf + 32, 0xcc, 32);
		config.begin = buf + 32;
		config.end = buf + 32 + cut;
		enc = pt_alloc_encoder(&config);
		CHECK_EQ(pt_enc_next(enc, in), -pte_eos);
		CHECK_EQ(pt_enc_get_offset(enc, &offset), 0);
		CHECK_EQ(offset, 0);
		CHECK_EQ(buf[32], 0xcc);
		pt_free_encoder(enc);
		config.begin = buf;
	}
}

int main(void)
{
	struct pt_packet packet;
	int n, size, seen[ppt_trig + 1];

	memset(seen, 0, sizeof(seen));
	for (n = 0; (size = pkt_sample(&packet, n)) != 0; ++n) {
		seen[packet.type] = 1;
		roundtrip(&packet, size);
	}

	/* Every type but ppt_invalid and ppt_unknown has samples. */
	for (n = ppt_pad; n <= ppt_trig; ++n)
		if (!CHECK(seen[n]))
			printf("     no sample of type %d\n", n);

	return check_done();
}

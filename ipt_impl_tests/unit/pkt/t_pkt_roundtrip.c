/* Every packet type encoded, then decoded: same fields, same size.  Every
 * truncation of every encoding ("cutoff") fails with -pte_eos, in the
 * decoder and in the encoder, and the encoder writes nothing then.  And
 * random trace bytes decode the same through pt_pkt_next's fast path and
 * through its general decoder. */
#include "ipt.h"
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

/* A small xorshift generator: the same bytes on every run. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd64(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* pt_pkt_next decodes the common packets itself when the caller's struct
 * is a struct pt_packet and enough trace is left; otherwise, and for
 * everything else, it uses its general decoder.  A larger psize forces
 * the latter: both must agree at every offset of random traces made
 * mostly of opcode bytes (each packet type, its errors, SKD007 and SKZ84
 * look-alikes), with and without those errata. */
static void fast_path(void)
{
	static const uint8_t opcodes[] = {
		0x00, 0x02, 0x03, 0x07, 0x0b, 0x0f, 0x01, 0x0d, 0x11, 0x1d,
		0x2d, 0x4d, 0x6d, 0x8d, 0xad, 0xcd, 0xed, 0x19, 0x59, 0x99,
		0xd9, 0x82, 0x23, 0xa3, 0x43, 0x73, 0xc8, 0xf3, 0x83, 0x03,
		0x12, 0x92, 0xc3, 0x88, 0x62, 0xe2, 0x22, 0xa2, 0x13, 0x53,
		0xff, 0x80, 0x20, 0x21, 0x01, 0x04, 0x06
	};
	struct {
		struct pt_packet packet;
		uint64_t more;
	} big;
	struct pt_packet packet;
	struct pt_packet_decoder *fast, *slow;
	struct pt_config config;
	uint8_t trace[160];
	uint64_t fast_off, slow_off, fast_sync, slow_sync;
	int round, off, errata, bad = 0;

	for (round = 0; round < 400; ++round) {
		size_t i;

		for (i = 0; i < sizeof(trace); ++i) {
			uint64_t r = rnd64();

			trace[i] = (r & 3) ? opcodes[(r >> 8) % sizeof(opcodes)]
					   : (uint8_t) (r >> 16);
		}

		/* A 2-byte CYC before an OVF: what SKD007 looks for. */
		if (round & 1) {
			uint64_t r = rnd64();

			i = (size_t) (r % (sizeof(trace) - 3));
			trace[i] = (uint8_t) (0x07 | ((r >> 32) & 0xf8));
			trace[i + 1] = 0x02;
			trace[i + 2] = 0xf3;
		}

		for (errata = 0; errata < 2; ++errata) {
			pt_config_init(&config);
			config.begin = trace;
			config.end = trace + sizeof(trace);
			config.errata.skd007 = errata;
			config.errata.skz84 = errata;
			fast = pt_pkt_alloc_decoder(&config);
			slow = pt_pkt_alloc_decoder(&config);
			if (!CHECK(fast && slow))
				return;

			for (off = 0; off < (int) sizeof(trace); ++off) {
				int fsize, ssize, same;

				pt_pkt_sync_set(fast, (uint64_t) off);
				pt_pkt_sync_set(slow, (uint64_t) off);
				memset(&packet, 0, sizeof(packet));
				memset(&big, 0, sizeof(big));
				fsize = pt_pkt_next(fast, &packet, sizeof(packet));
				ssize = pt_pkt_next(slow, &big.packet, sizeof(big));
				pt_pkt_get_offset(fast, &fast_off);
				pt_pkt_get_offset(slow, &slow_off);
				pt_pkt_get_sync_offset(fast, &fast_sync);
				pt_pkt_get_sync_offset(slow, &slow_sync);

				same = fsize == ssize && fast_off == slow_off &&
				       fast_sync == slow_sync;
				if (same && fsize >= 0)
					same = packet.size == big.packet.size &&
					       pkt_equal(&packet, &big.packet);
				if (!same && bad++ < 5)
					printf("     offset %d, errata %d: %d, "
					       "type %d; general: %d, type %d\n",
					       off, errata, fsize, packet.type,
					       ssize, big.packet.type);
			}

			pt_pkt_free_decoder(fast);
			pt_pkt_free_decoder(slow);
		}
	}
	CHECK_EQ(bad, 0);
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

	fast_path();
	return check_done();
}

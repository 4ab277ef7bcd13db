/* The packet decoder's behaviour through the public API: what every first
 * and second opcode byte decodes to, error codes for broken packets, the
 * unknown-packet callback, the size argument of pt_pkt_next, errata
 * workarounds, synchronization, configuration copy-in. */
#include "ipt.h"
#include "check.h"

#include <stddef.h>
#include <string.h>

static uint64_t words[0x200];
static uint8_t *const buf = (uint8_t *) words;

static struct pt_config config_for(size_t begin, size_t end)
{
	struct pt_config config;

	pt_config_init(&config);
	config.begin = buf + begin;
	config.end = buf + end;
	return config;
}

/* Decode one packet at the start of config's buffer. */
static int decode_one(const struct pt_config *config, struct pt_packet *packet)
{
	struct pt_packet_decoder *decoder;
	int size;

	decoder = pt_pkt_alloc_decoder(config);
	if (!decoder)
		return -1000;
	size = pt_pkt_sync_set(decoder, 0);
	if (size >= 0)
		size = pt_pkt_next(decoder, packet, sizeof(*packet));
	pt_pkt_free_decoder(decoder);
	return size;
}

/* What a byte after zeroes decodes to, by the SDM's opcode map: a packet
 * type, or a negative error code. */
static int expect_first(unsigned int b)
{
	if (b == 0x00)
		return ppt_pad;
	if (b == 0x02)
		return 1000; /* extended, checked separately */
	if ((b & 3) == 3)
		return ppt_cyc;
	if ((b & 1) == 0)
		return ppt_tnt_8;
	if ((b & 0x1f) == 0x0d || (b & 0x1f) == 0x11 || (b & 0x1f) == 0x01 ||
	    (b & 0x1f) == 0x1d) {
		if ((b >> 5) == 5 || (b >> 5) == 7)
			return -pte_bad_packet;
		switch (b & 0x1f) {
		case 0x0d:
			return ppt_tip;
		case 0x11:
			return ppt_tip_pge;
		case 0x01:
			return ppt_tip_pgd;
		}
		return ppt_fup;
	}
	switch (b) {
	case 0x99:
		return ppt_mode;
	case 0x19:
		return ppt_tsc;
	case 0x59:
		return ppt_mtc;
	case 0xd9:
		return ppt_trig;
	}
	return -pte_bad_opc;
}

/* What 02 <e> followed by zeroes decodes to. */
static int expect_ext(unsigned int e)
{
	if ((e & 0x1f) == 0x12)
		return ((e >> 5) & 3) >= 2 ? -pte_bad_packet : ppt_ptw;
	switch (e) {
	case 0x82:
		return -pte_bad_packet; /* PSB with a zero payload */
	case 0x23:
		return ppt_psbend;
	case 0xa3:
		return -pte_bad_packet; /* TNT-64 without a stop bit */
	case 0x43:
		return ppt_pip;
	case 0xf3:
		return ppt_ovf;
	case 0x03:
		return ppt_cbr;
	case 0x73:
		return ppt_tma;
	case 0x83:
		return ppt_stop;
	case 0xc8:
		return ppt_vmcs;
	case 0xc3:
		return -pte_bad_opc; /* 02 c3 00: no such packet */
	case 0x62:
	case 0xe2:
		return ppt_exstop;
	case 0xc2:
		return ppt_mwait;
	case 0x22:
		return ppt_pwre;
	case 0xa2:
		return ppt_pwrx;
	case 0x13:
		return ppt_cfe;
	case 0x53:
		return ppt_evd;
	}
	return -pte_bad_opc;
}

static void test_dispatch(void)
{
	struct pt_config config = config_for(0, 32);
	struct pt_packet packet;
	unsigned int b;
	int ret, expect;

	for (b = 0; b < 256; ++b) {
		memset(buf, 0, 32);
		buf[0] = (uint8_t) b;
		expect = expect_first(b);
		if (expect == 1000)
			continue;
		ret = decode_one(&config, &packet);
		if (ret >= 0)
			ret = packet.type;
		if (ret != expect)
			printf("     first byte %02x\n", b);
		CHECK_EQ(ret, expect);
	}

	for (b = 0; b < 256; ++b) {
		memset(buf, 0, 32);
		buf[0] = 0x02;
		buf[1] = (uint8_t) b;
		expect = expect_ext(b);
		ret = decode_one(&config, &packet);
		if (ret >= 0)
			ret = packet.type;
		if (ret != expect)
			printf("     second byte %02x\n", b);
		CHECK_EQ(ret, expect);
	}

	/* 02 c3 88 is MNT; 02 c3 <other> is unknown. */
	memset(buf, 0, 32);
	buf[0] = 0x02;
	buf[1] = 0xc3;
	buf[2] = 0x88;
	CHECK_EQ(decode_one(&config, &packet), 11);
	CHECK_EQ(packet.type, ppt_mnt);
	buf[2] = 0x89;
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_opc);
}

static void test_bad_packets(void)
{
	struct pt_config config;
	struct pt_packet packet;
	static const uint8_t cyc_long[] = { 0x07, 1, 1, 1, 1, 1, 1, 1, 1, 0 };
	static const uint8_t cyc_max[] = { 0x07, 1, 1, 1, 1, 1, 1, 1, 0 };
	static const uint8_t tma_res[] = { 0x02, 0x73, 0, 0, 1, 0, 0 };
	static const uint8_t tma_fc[] = { 0x02, 0x73, 0, 0, 0, 0, 2 };
	static const uint8_t mode_leaf[] = { 0x99, 0x40 };
	static const uint8_t psb_bad[] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					   2, 0x82, 2, 0x82, 2, 0x82, 2, 0x83 };

	memset(buf, 0, 64);
	memcpy(buf, cyc_long, sizeof(cyc_long));
	config = config_for(0, sizeof(cyc_long));
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);

	memcpy(buf, cyc_max, sizeof(cyc_max));
	config = config_for(0, sizeof(cyc_max));
	CHECK_EQ(decode_one(&config, &packet), 9);
	/* Each continuation byte 01 adds no value bits. */
	CHECK_EQ(packet.payload.cyc.value, 0);

	memcpy(buf, tma_res, sizeof(tma_res));
	config = config_for(0, sizeof(tma_res));
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);
	memcpy(buf, tma_fc, sizeof(tma_fc));
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);

	memcpy(buf, mode_leaf, sizeof(mode_leaf));
	config = config_for(0, sizeof(mode_leaf));
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);

	memcpy(buf, psb_bad, sizeof(psb_bad));
	config = config_for(0, sizeof(psb_bad));
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);
	config = config_for(0, sizeof(psb_bad) - 1);
	CHECK_EQ(decode_one(&config, &packet), -pte_eos);

	/* Reserved IP compressions 5 and 7, also when truncated. */
	buf[0] = 0xad;
	config = config_for(0, 1);
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);
	buf[0] = 0xfd;
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);

	/* PTW with a reserved payload size, also when truncated. */
	buf[0] = 0x02;
	buf[1] = 0x52;
	config = config_for(0, 2);
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);

	/* An extended opcode cut off after its first byte. */
	buf[0] = 0x02;
	config = config_for(0, 1);
	CHECK_EQ(decode_one(&config, &packet), -pte_eos);
	buf[1] = 0xc3;
	config = config_for(0, 2);
	CHECK_EQ(decode_one(&config, &packet), -pte_eos);
}

/* The unknown-packet callback. */
struct cb_log {
	int calls;
	int ret;
	const uint8_t *pos;
	const struct pt_config *config;
};

static int unknown_cb(struct pt_packet_unknown *unknown,
		      const struct pt_config *config, const uint8_t *pos,
		      void *context)
{
	struct cb_log *log = (struct cb_log *) context;

	log->calls++;
	log->pos = pos;
	log->config = config;
	if (unknown->packet != pos || unknown->priv != NULL)
		return -pte_internal;
	unknown->priv = log;
	return log->ret;
}

static void test_unknown(void)
{
	struct pt_config config = config_for(0, 8);
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	struct cb_log log;
	uint64_t offset;

	memset(buf, 0, 8);
	buf[1] = 0xc9;
	memset(&log, 0, sizeof(log));
	config.decode.callback = unknown_cb;
	config.decode.context = &log;
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 1);
	CHECK_EQ(packet.type, ppt_pad);
	CHECK_EQ(log.calls, 0);

	log.ret = 3;
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 3);
	CHECK_EQ(packet.type, ppt_unknown);
	CHECK_EQ(packet.size, 3);
	CHECK(packet.payload.unknown.packet == buf + 1);
	CHECK(packet.payload.unknown.priv == &log);
	CHECK(log.pos == buf + 1);
	CHECK(log.config == pt_pkt_get_config(decoder));
	CHECK_EQ(log.calls, 1);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 4);

	/* Zero: the decoder stays where it is. */
	buf[4] = 0xc9;
	log.ret = 0;
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 0);
	CHECK_EQ(packet.type, ppt_unknown);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 4);

	log.ret = 256;
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), -pte_invalid);
	log.ret = -pte_nomem;
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), -pte_nomem);
	log.ret = 5;
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), -pte_eos);
	log.ret = 4;
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 4);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), -pte_eos);
	CHECK_EQ(log.calls, 6);
	pt_pkt_free_decoder(decoder);

	/* Unknown extended opcodes reach the callback too. */
	buf[0] = 0x02;
	buf[1] = 0x04;
	log.ret = 2;
	CHECK_EQ(decode_one(&config, &packet), 2);
	CHECK_EQ(packet.type, ppt_unknown);
}

static void test_psize(void)
{
	struct pt_config config = config_for(0, 16);
	struct pt_packet_decoder *decoder;
	unsigned char big[sizeof(struct pt_packet) + 16];
	struct pt_packet packet;

	memset(buf, 0, 16);
	buf[0] = 0x19; /* TSC */
	buf[1] = 0x42;
	decoder = pt_pkt_alloc_decoder(&config);

	CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
	memset(&packet, 0xee, sizeof(packet));
	CHECK_EQ(pt_pkt_next(decoder, &packet,
			     offsetof(struct pt_packet, payload)), 8);
	CHECK_EQ(packet.type, ppt_tsc);
	CHECK_EQ(packet.size, 8);
	CHECK_EQ(packet.payload.tsc.tsc, 0xeeeeeeeeeeeeeeeeull);

	CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
	memset(big, 0xee, sizeof(big));
	CHECK_EQ(pt_pkt_next(decoder, (struct pt_packet *) (void *) big,
			     sizeof(big)), 8);
	memcpy(&packet, big, sizeof(packet));
	CHECK_EQ(packet.payload.tsc.tsc, 0x42);
	CHECK_EQ(big[sizeof(packet)], 0);
	CHECK_EQ(big[sizeof(big) - 1], 0);

	CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
	CHECK_EQ(pt_pkt_next(decoder, &packet, 0), 8);
	CHECK_EQ(pt_pkt_next(NULL, &packet, sizeof(packet)), -pte_invalid);
	CHECK_EQ(pt_pkt_next(decoder, NULL, sizeof(packet)), -pte_invalid);
	pt_pkt_free_decoder(decoder);
}

static void test_errata(void)
{
	struct pt_config config = config_for(0, 8);
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	uint64_t offset;
	static const uint8_t skd007[] = { 0x07, 0x02, 0xf3, 0x00 };
	static const uint8_t tma_res[] = { 0x02, 0x73, 0, 0, 1, 0, 0, 0 };

	/* SKD007: a 2-byte CYC that eats an OVF's first byte. */
	memcpy(buf, skd007, sizeof(skd007));
	config.end = buf + sizeof(skd007);
	CHECK_EQ(decode_one(&config, &packet), 2);
	CHECK_EQ(packet.type, ppt_cyc);
	CHECK_EQ(packet.payload.cyc.value, 0x20);

	config.errata.skd007 = 1;
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 2);
	CHECK_EQ(packet.type, ppt_ovf);
	CHECK_EQ(packet.size, 2);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 3);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 1);
	CHECK_EQ(packet.type, ppt_pad);
	pt_pkt_free_decoder(decoder);

	/* The same with more trace after it (pt_pkt_next's fast path). */
	memset(buf + sizeof(skd007), 0, 32);
	config.end = buf + sizeof(skd007) + 32;
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 2);
	CHECK_EQ(packet.type, ppt_ovf);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 3);
	pt_pkt_free_decoder(decoder);

	/* Not at the very end of the buffer. */
	config.end = buf + 2;
	CHECK_EQ(decode_one(&config, &packet), 2);
	CHECK_EQ(packet.type, ppt_cyc);

	/* SKZ84: a TMA with reserved bits set decodes as an invalid packet
	 * one byte longer than a TMA (libipt's ptdump prints <invalid>). */
	memcpy(buf, tma_res, sizeof(tma_res));
	config = config_for(0, sizeof(tma_res));
	config.errata.skz84 = 1;
	memset(&packet, 0, sizeof(packet));
	CHECK_EQ(decode_one(&config, &packet), 8);
	CHECK_EQ(packet.type, ppt_invalid);
	CHECK_EQ(packet.size, 8);

	/* With more trace after it (pt_pkt_next's fast path). */
	memset(buf + sizeof(tma_res), 0, 32);
	config.end = buf + sizeof(tma_res) + 32;
	memset(&packet, 0, sizeof(packet));
	CHECK_EQ(decode_one(&config, &packet), 8);
	CHECK_EQ(packet.type, ppt_invalid);
	config.errata.skz84 = 0;
	CHECK_EQ(decode_one(&config, &packet), -pte_bad_packet);
}

static void encode_psb(size_t at)
{
	size_t i;

	for (i = 0; i < 16; i += 2) {
		buf[at + i] = 0x02;
		buf[at + i + 1] = 0x82;
	}
}

static void test_sync(void)
{
	struct pt_config config = config_for(0, 0x100);
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	uint64_t offset;
	size_t head, tail;

	memset(buf, 0xcd, 0x100);
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), -pte_nosync);
	CHECK_EQ(pt_pkt_get_sync_offset(decoder, &offset), -pte_nosync);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), -pte_nosync);
	CHECK_EQ(pt_pkt_sync_forward(decoder), -pte_eos);
	CHECK_EQ(pt_pkt_sync_backward(decoder), -pte_eos);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), -pte_nosync);

	/* A PSB at an odd offset, found both ways. */
	encode_psb(0x23);
	CHECK_EQ(pt_pkt_sync_forward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x23);
	CHECK_EQ(pt_pkt_get_sync_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x23);
	CHECK_EQ(pt_pkt_sync_forward(decoder), -pte_eos);
	pt_pkt_free_decoder(decoder);

	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_backward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x23);
	CHECK_EQ(pt_pkt_sync_backward(decoder), -pte_eos);

	/* A second PSB: forward walks from one to the next; decoding a PSB
	 * moves the sync offset. */
	encode_psb(0x80);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x23), 0);
	CHECK_EQ(pt_pkt_sync_forward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x80);
	CHECK_EQ(pt_pkt_sync_backward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x23);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x80), 0);
	CHECK_EQ(pt_pkt_get_sync_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x80);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x23), 0);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 16);
	CHECK_EQ(packet.type, ppt_psb);
	CHECK_EQ(pt_pkt_get_sync_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x23);
	/* A PSB right after it, as PSB+s often come: the decoder is
	 * synchronized at the second. */
	encode_psb(0x33);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), 16);
	CHECK_EQ(packet.type, ppt_psb);
	CHECK_EQ(pt_pkt_get_sync_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x33);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x43);
	memset(buf + 0x33, 0xcd, 16);

	/* From inside the first PSB, forward finds the second. */
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x25), 0);
	CHECK_EQ(pt_pkt_sync_forward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0x80);

	/* sync_set accepts the end, not beyond. */
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x100), 0);
	CHECK_EQ(pt_pkt_next(decoder, &packet, sizeof(packet)), -pte_eos);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x101), -pte_eos);
	CHECK_EQ(pt_pkt_sync_set(decoder, ~0ull), -pte_eos);
	/* Synchronized at the very end: there is no PSB past it. */
	CHECK_EQ(pt_pkt_sync_set(decoder, 0x100), 0);
	CHECK_EQ(pt_pkt_sync_forward(decoder), -pte_internal);
	CHECK_EQ(pt_pkt_sync_set(decoder, 0xff), 0);
	CHECK_EQ(pt_pkt_sync_forward(decoder), -pte_eos);
	CHECK_EQ(pt_pkt_sync_forward(NULL), -pte_invalid);
	CHECK_EQ(pt_pkt_sync_backward(NULL), -pte_invalid);
	CHECK_EQ(pt_pkt_sync_set(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_pkt_get_offset(decoder, NULL), -pte_invalid);
	CHECK_EQ(pt_pkt_get_sync_offset(NULL, &offset), -pte_invalid);
	CHECK(pt_pkt_get_config(NULL) == NULL);
	pt_pkt_free_decoder(decoder);
	pt_pkt_free_decoder(NULL);

	/* PSBs cut off at either end of the buffer are not found. */
	for (head = 1; head < 16; ++head)
		for (tail = 1; tail < 16; tail += 7) {
			memset(buf, 0xcd, 0x100);
			encode_psb(0);
			encode_psb(0x100 - 16);
			config = config_for(head, 0x100 - tail);
			decoder = pt_pkt_alloc_decoder(&config);
			CHECK_EQ(pt_pkt_sync_forward(decoder), -pte_eos);
			CHECK_EQ(pt_pkt_sync_backward(decoder), -pte_eos);
			pt_pkt_free_decoder(decoder);
		}

	/* A PSB right at the end is found backward; at the start forward. */
	memset(buf, 0xcd, 0x100);
	encode_psb(0x100 - 16);
	encode_psb(0);
	config = config_for(0, 0x100);
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_backward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0xf0);
	CHECK_EQ(pt_pkt_sync_backward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0);
	pt_pkt_free_decoder(decoder);
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK_EQ(pt_pkt_sync_forward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0);
	CHECK_EQ(pt_pkt_sync_forward(decoder), 0);
	CHECK_EQ(pt_pkt_get_offset(decoder, &offset), 0);
	CHECK_EQ(offset, 0xf0);
	pt_pkt_free_decoder(decoder);
}

static void test_config(void)
{
	struct {
		struct pt_config config;
		uint8_t more[32];
	} big;
	struct pt_config config;
	struct pt_packet_decoder *decoder;
	struct pt_encoder *encoder;
	const struct pt_config *copy;

	config = config_for(0, 16);
	CHECK(pt_pkt_alloc_decoder(NULL) == NULL);
	CHECK(pt_alloc_encoder(NULL) == NULL);

	config.size = offsetof(struct pt_config, decode) - 1;
	CHECK(pt_pkt_alloc_decoder(&config) == NULL);
	CHECK(pt_alloc_encoder(&config) == NULL);

	/* An old caller: everything after its size reads as zero. */
	memset(&config, 0xff, sizeof(config));
	config.size = offsetof(struct pt_config, decode);
	config.begin = buf;
	config.end = buf + 16;
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK(decoder != NULL);
	copy = pt_pkt_get_config(decoder);
	CHECK_EQ(copy->size, offsetof(struct pt_config, decode));
	CHECK(copy->decode.callback == NULL);
	CHECK_EQ(copy->cpu.family, 0);
	CHECK_EQ(copy->mtc_freq, 0);
	CHECK_EQ(copy->addr_filter.addr3_b, 0);
	pt_pkt_free_decoder(decoder);

	/* A newer caller: what we do not know is ignored. */
	memset(&big, 0xff, sizeof(big));
	pt_config_init(&big.config);
	big.config.size = sizeof(big);
	big.config.begin = buf;
	big.config.end = buf + 16;
	big.config.mtc_freq = 3;
	encoder = pt_alloc_encoder(&big.config);
	CHECK(encoder != NULL);
	copy = pt_enc_get_config(encoder);
	CHECK_EQ(copy->size, sizeof(struct pt_config));
	CHECK_EQ(copy->mtc_freq, 3);
	pt_free_encoder(encoder);

	/* The buffer must be there and the right way round. */
	config = config_for(8, 4);
	CHECK(pt_pkt_alloc_decoder(&config) == NULL);
	config = config_for(0, 4);
	config.begin = NULL;
	CHECK(pt_pkt_alloc_decoder(&config) == NULL);
	config = config_for(0, 4);
	config.end = NULL;
	CHECK(pt_alloc_encoder(&config) == NULL);
	config = config_for(4, 4);
	decoder = pt_pkt_alloc_decoder(&config);
	CHECK(decoder != NULL);
	pt_pkt_free_decoder(decoder);
}

static void test_encoder_errors(void)
{
	struct pt_config config = config_for(0, 64);
	struct pt_encoder *encoder;
	struct pt_packet packet;
	uint64_t offset;

	encoder = pt_alloc_encoder(&config);
	memset(&packet, 0, sizeof(packet));

	packet.type = ppt_invalid;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_opc);
	packet.type = ppt_unknown;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_opc);
	packet.type = (enum pt_packet_type) 99;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_opc);
	CHECK_EQ(pt_enc_next(NULL, &packet), -pte_invalid);
	CHECK_EQ(pt_enc_next(encoder, NULL), -pte_invalid);

	packet.type = ppt_tip;
	packet.payload.ip.ipc = (enum pt_ip_compression) 5;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_invalid);
	packet.payload.ip.ipc = (enum pt_ip_compression) 7;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_invalid);

	packet.type = ppt_tnt_8;
	packet.payload.tnt.bit_size = 7;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_packet);

	packet.type = ppt_tnt_64;
	packet.payload.tnt.bit_size = 48;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_invalid);
	packet.payload.tnt.bit_size = 4;
	packet.payload.tnt.payload = 0x10;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_invalid);

	packet.type = ppt_mode;
	packet.payload.mode.leaf = (enum pt_mode_leaf) 0x40;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_packet);

	packet.type = ppt_tma;
	packet.payload.tma.fc = 0x200;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_packet);

	packet.type = ppt_ptw;
	packet.payload.ptw.plc = 2;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_packet);
	packet.payload.ptw.plc = 4;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_internal);

	/* Values above 61 bits need a CYC longer than decoders accept: the
	 * encoder refuses them (t_enc_reject.c has more). */
	packet.type = ppt_cyc;
	packet.payload.cyc.value = ~0ull;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_bad_packet);
	packet.payload.cyc.value = (1ull << 61) - 1;
	CHECK_EQ(pt_enc_next(encoder, &packet), 9);

	CHECK_EQ(pt_enc_get_offset(encoder, &offset), 0);
	CHECK_EQ(offset, 9);
	CHECK_EQ(pt_enc_sync_set(encoder, 64), 0);
	CHECK_EQ(pt_enc_sync_set(encoder, 65), -pte_eos);
	CHECK_EQ(pt_enc_sync_set(NULL, 0), -pte_invalid);
	CHECK_EQ(pt_enc_get_offset(encoder, &offset), 0);
	CHECK_EQ(offset, 64);
	packet.type = ppt_pad;
	CHECK_EQ(pt_enc_next(encoder, &packet), -pte_eos);
	CHECK_EQ(pt_enc_get_offset(NULL, &offset), -pte_invalid);
	CHECK_EQ(pt_enc_get_offset(encoder, NULL), -pte_invalid);
	CHECK(pt_enc_get_config(NULL) == NULL);
	CHECK(pt_enc_get_config(encoder)->begin == buf);
	pt_free_encoder(encoder);
	pt_free_encoder(NULL);
}

int main(void)
{
	test_dispatch();
	test_bad_packets();
	test_unknown();
	test_psize();
	test_errata();
	test_sync();
	test_config();
	test_encoder_errors();
	return check_done();
}

/* The packet layer's internals, from a translation unit with its own
 * static copy of the implementation: the packet-layout table against the
 * dispatch tables and the encoder, the fast path against the general
 * decoder, address filters, the sync helpers' argument checks. */
#if defined(__GNUC__)
/* Layers still only declared draw "declared static but never defined". */
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"
#include "pkt_samples.h"

/* Each row's opcode bytes select its own type, in the dispatch tables,
 * and the encoder writes them. */
static void test_layout(void)
{
	struct pt_config config;
	struct pt_encoder *encoder;
	struct pt_packet packet;
	uint8_t buf[32];
	int type, b, rows;

	CHECK_EQ(sizeof(ipt__layout) / sizeof(ipt__layout[0]), ppt_trig + 1);

	for (type = ppt_pad; type <= ppt_trig; ++type) {
		const struct ipt__layout *row = &ipt__layout[type];

		CHECK(row->opc_size >= 1 && row->opc_size <= 3);
		CHECK(row->size >= row->opc_size);
		if (type == ppt_tnt_8) {
			/* Its opcode 00 is PAD's; 04 is the first TNT-8. */
			CHECK_EQ(ipt__first_byte[0x04], type);
		} else if (row->opc_size == 1) {
			CHECK_EQ(ipt__first_byte[row->opc], type);
		} else {
			CHECK_EQ(row->opc, IPT__OPC_EXT);
			CHECK_EQ(ipt__first_byte[row->opc], IPT__KIND_EXT);
			CHECK_EQ(ipt__second_byte[row->ext], type);
		}

		/* The encoder starts a packet with the row's bytes. */
		pt_config_init(&config);
		config.begin = buf;
		config.end = buf + sizeof(buf);
		encoder = pt_alloc_encoder(&config);
		memset(&packet, 0, sizeof(packet));
		packet.type = (enum pt_packet_type) type;
		if (type == ppt_tnt_8 || type == ppt_tnt_64)
			packet.payload.tnt.bit_size = 1;
		memset(buf, 0xcc, sizeof(buf));
		CHECK(pt_enc_next(encoder, &packet) >= row->size);
		if (row->opc_size == 1)
			CHECK_EQ(buf[0] & row->opm, row->opc);
		else
			CHECK(buf[0] == row->opc &&
			      (buf[1] & row->exm) == row->ext);
		if (row->opc_size == 3)
			CHECK_EQ(buf[2], row->ext2);
		pt_free_encoder(encoder);
	}

	/* Every first byte the table maps to a packet matches exactly one
	 * row's mask, apart from PAD and the extended opcode, which TNT-8's
	 * mask also covers. */
	for (b = 0; b < 256; ++b) {
		rows = 0;
		for (type = ppt_pad; type <= ppt_trig; ++type)
			if (ipt__layout[type].opc_size == 1 &&
			    (b & ipt__layout[type].opm) == ipt__layout[type].opc)
				++rows;
		if (b == 0x00)
			CHECK_EQ(rows, 2);
		else if (b == 0x02)
			CHECK_EQ(rows, 1);
		else
			CHECK_EQ(rows, ipt__first_byte[b] != ppt_invalid);
	}

	/* Second bytes never match two rows. */
	for (b = 0; b < 256; ++b) {
		rows = 0;
		for (type = ppt_pad; type <= ppt_trig; ++type)
			if (ipt__layout[type].opc_size > 1 &&
			    (b & ipt__layout[type].exm) == ipt__layout[type].ext)
				++rows;
		CHECK_EQ(rows, ipt__second_byte[b] != ppt_invalid);
	}
}

/* The fast path (ipt__pkt_fast) against the general decoder: every first
 * byte, every second byte, five patterns after them, SKD007 off and on,
 * for pt_pkt_next and for a batch (whole).
 * What it decodes is what pt_pkt_next's general path (a larger struct)
 * decodes, and never longer than IPT__FAST_ROOM; its shortcuts for PAD,
 * TNT-8, CYC and MTC pick the bytes the dispatch table gives them. */
static void test_fast(void)
{
	static const uint8_t tails[][2] = {
		{ 0x00, 0x00 }, { 0xff, 0xff }, { 0x02, 0xf3 },
		{ 0xff, 0x00 }, { 0x5a, 0xa5 }
	};
	struct {
		struct pt_packet packet;
		uint8_t more[8];
	} ref;
	struct pt_packet_decoder *decoder;
	struct pt_packet fast;
	struct pt_config config;
	uint8_t buf[2 * IPT__FAST_ROOM];
	int b, s, t, i, skd007, size, ref_size, decoded = 0;

	(void) pkt_sample;
	for (b = 0; b < 256; ++b) {
		int kind = ipt__first_byte[b];

		if (b & 1) {
			CHECK_EQ(!!(b & ipt__layout[ppt_cyc].opc & ~1u),
				 kind == ppt_cyc);
			CHECK_EQ(b == ipt__layout[ppt_mtc].opc,
				 kind == ppt_mtc);
		} else {
			const struct pt_packet *one = &ipt__pkt_one_byte[b >> 1];

			CHECK_EQ(one->size != 0,
				 kind == ppt_pad || kind == ppt_tnt_8);
			if (one->size)
				CHECK_EQ(one->type, kind);
		}
	}

	for (skd007 = 0; skd007 < 2; ++skd007) {
		pt_config_init(&config);
		config.begin = buf;
		config.end = buf + sizeof(buf);
		config.errata.skd007 = (uint32_t) skd007;
		decoder = pt_pkt_alloc_decoder(&config);
		if (!CHECK(decoder))
			return;
		for (b = 0; b < 256; ++b)
			for (s = 0; s < 256; ++s)
				for (t = 0; t < 5; ++t) {
					buf[0] = (uint8_t) b;
					buf[1] = (uint8_t) s;
					for (i = 2; i < (int) sizeof(buf); ++i)
						buf[i] = tails[t][i < 8 ? 0 : 1];
					memset(&fast, 0, sizeof(fast));
					size = ipt__pkt_fast(buf, &fast, skd007,
							     t & 1);
					if (!size)
						continue;
					decoded++;
					CHECK(size > 0 && size <= IPT__FAST_ROOM);
					CHECK_EQ(pt_pkt_sync_set(decoder, 0), 0);
					memset(&ref, 0, sizeof(ref));
					ref_size = pt_pkt_next(decoder, &ref.packet,
							       sizeof(ref));
					if (!CHECK(ref_size == size &&
						   fast.size == size &&
						   pkt_equal(&fast, &ref.packet)))
						printf("     bytes %02x %02x, "
						       "tail %d, skd007 %d\n",
						       b, s, t, skd007);
				}
		pt_pkt_free_decoder(decoder);
	}
	/* Most byte pairs start a packet the fast path decodes. */
	CHECK(decoded > 2 * 256 * 5 * 128);
}

/* ipt__pkt_past_pads, which skips PADs eight bytes at a time, against
 * skipping them one by one: for runs of every length from every start,
 * with every fast region the buffer allows, it stops at the same non-PAD
 * byte where that lies in the fast region; elsewhere past the fast region
 * (by less than eight bytes), and only ever past PADs. */
static void test_past_pads(void)
{
	enum { n = 64 };
	uint8_t buf[n];
	uintptr_t begin = (uintptr_t) buf;
	size_t fast;
	int start, run, i, bad = 0, beyond = 0;

	for (fast = 0; fast + IPT__FAST_ROOM - 1 <= n; ++fast)
		for (start = 0; start < n; ++start)
			for (run = 0; start + run <= n; ++run) {
				const uint8_t *pos = buf + start, *one, *got;

				for (i = 0; i < n; ++i)
					buf[i] = (uint8_t) (i < start ? 0 :
							    i < start + run ? 0 :
							    0x04 + 2 * (i & 3));
				one = pos;
				while (ipt__pkt_in_fast(begin, fast, one) &&
				       !*one)
					one += 1;
				got = ipt__pkt_past_pads(begin, fast, pos);
				for (i = 0; pos + i < got; ++i)
					if (pos[i])
						bad = 1;
				if (ipt__pkt_in_fast(begin, fast, one)) {
					if (got != one)
						bad = 1;
				} else if (got < one ||
					   ipt__pkt_in_fast(begin, fast, got) ||
					   (got > pos && got > buf + fast + 7) ||
					   got > buf + n) {
					bad = 1;
				} else if (got > one) {
					beyond += 1;
				}
				if (bad) {
					printf("     fast %u, start %d, run %d\n",
					       (unsigned) fast, start, run);
					CHECK(0);
					return;
				}
			}
	CHECK(!bad);
	/* The eight-byte steps did go past the fast region. */
	CHECK(beyond > 0);
}

static void test_filters(void)
{
	struct pt_conf_addr_filter filter;

	memset(&filter, 0, sizeof(filter));
	CHECK_EQ(IPT__FILTER_NRANGES, 8);

	/* No ranges: everything is traced. */
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x1000), 1);
	CHECK_EQ(ipt__filter_addr_check(NULL, 0x1000), -pte_internal);

	filter.config.ctl.addr0_cfg = pt_addr_cfg_filter;
	filter.addr0_a = 0x1000;
	filter.addr0_b = 0x1fff;
	filter.config.ctl.addr2_cfg = pt_addr_cfg_stop;
	filter.addr2_a = 0x1800;
	filter.addr2_b = 0x18ff;
	filter.config.ctl.addr3_cfg = pt_addr_cfg_filter;
	filter.addr3_a = 0x4000;
	filter.addr3_b = 0x4000;

	CHECK_EQ(ipt__filter_addr_cfg(&filter, 0), pt_addr_cfg_filter);
	CHECK_EQ(ipt__filter_addr_cfg(&filter, 1), pt_addr_cfg_disabled);
	CHECK_EQ(ipt__filter_addr_cfg(&filter, 2), pt_addr_cfg_stop);
	CHECK_EQ(ipt__filter_addr_cfg(&filter, 8), 0);
	CHECK_EQ(ipt__filter_addr_a(&filter, 2), 0x1800);
	CHECK_EQ(ipt__filter_addr_b(&filter, 3), 0x4000);
	CHECK_EQ(ipt__filter_addr_a(&filter, 8), 0);
	CHECK_EQ(ipt__filter_addr_b(NULL, 0), 0);

	CHECK_EQ(ipt__filter_addr_check(&filter, 0x0fff), 0);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x1000), 1);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x17ff), 1);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x1800), 0);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x18ff), 0);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x1900), 1);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x1fff), 1);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x2000), 0);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x4000), 1);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x4001), 0);

	/* Only stop ranges: traced outside of them. */
	filter.config.ctl.addr0_cfg = pt_addr_cfg_disabled;
	filter.config.ctl.addr3_cfg = pt_addr_cfg_disabled;
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x0fff), 1);
	CHECK_EQ(ipt__filter_addr_check(&filter, 0x1810), 0);
}

static void test_helpers(void)
{
	struct pt_config config, copy;
	const uint8_t *sync = NULL;
	uint8_t buf[24];

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + 16;
	CHECK_EQ(ipt__sync_forward(NULL, buf, &config, 0), -pte_internal);
	CHECK_EQ(ipt__sync_forward(&sync, NULL, &config, 0), -pte_internal);
	CHECK_EQ(ipt__sync_forward(&sync, buf, NULL, 0), -pte_internal);
	CHECK_EQ(ipt__sync_backward(NULL, buf, &config, 0), -pte_internal);
	CHECK_EQ(ipt__sync_backward(&sync, buf + 17, &config, 0), -pte_internal);
	CHECK_EQ(ipt__sync_set(&sync, buf + 17, &config), -pte_eos);
	CHECK_EQ(ipt__sync_set(&sync, buf + 15, &config), -pte_eos);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(ipt__sync_set(&sync, buf, &config), -pte_nosync);
	CHECK_EQ(ipt__sync_set(&sync, buf + 14, &config), -pte_nosync);
	buf[0] = 0x02;
	buf[1] = 0x82;
	CHECK_EQ(ipt__sync_set(&sync, buf, &config), -pte_bad_packet);
	CHECK(sync == NULL);

	CHECK_EQ(ipt__config_from_user(NULL, &config), -pte_internal);
	CHECK_EQ(ipt__config_from_user(&copy, NULL), -pte_invalid);
	CHECK_EQ(ipt__config_from_user(&copy, &config), 0);
	CHECK(copy.begin == buf);
}

int main(void)
{
	test_layout();
	test_fast();
	test_past_pads();
	test_filters();
	test_helpers();
	return check_done();
}

/* t_hv_stream [CORPUS_DIR|--synth DIR]...: streaming.
 *
 * Every ptxed case's trace is decoded by a packet, an event, a query, a
 * block, an instruction and a coverage decoder once whole, then in
 * pieces of random size: the decoder starts on the first piece with more
 * to come (ipt_*_extend), and whenever a call says -ipt_pte_need_more
 * (or a sync finds the end), the end moves on by the next piece and the
 * call is made again.  Both must give the same packets, events, branches, blocks,
 * instructions, edges and bitmap, errors included. */
#include "hv_cases.h"
#include "stream_util.h"

/* Per layer: calls made again after the end moved, and items compared. */
static unsigned long resumed[8], items[8];

/* Decode @c with layer @layer (pkt, evt, qry, blk, insn, cov, then blk
 * and insn over file sections, where the block decoder ends blocks as
 * libipt's block cache does), fed by @f. */
static void decode(struct hv_out *o, struct hcase *c, int layer,
		   struct hv_feed *f)
{
	struct pt_image *image = NULL;

	if (layer >= HV_BLK) {
		image = pt_image_alloc(NULL);
		c->mem.pct = 0;
		if (image && (layer > HV_COV ? !hcase_sections(c, image) :
			      pt_image_set_callback(image, gmem_read,
						    &c->mem) < 0)) {
			pt_image_free(image);
			image = NULL;
		}
	}
	hv_decode_layer(o, &c->config, image,
			(enum hv_layer) (layer == 6 ? HV_BLK :
					 layer == 7 ? HV_INSN : layer),
			f, 1u << 22);
	pt_image_free(image);
}

static void run_case(struct hcase *c)
{
	static const char *const names[] = { "pkt", "evt", "qry", "blk",
					     "insn", "cov", "blk files",
					     "insn files" };
	int layer, round;

	for (layer = 0; layer < 8; ++layer) {
		struct hv_out whole;
		struct hv_feed f;

		hv_feed_init(&f, &c->config, 0, 0);
		decode(&whole, c, layer, &f);
		items[layer] += whole.n;
		for (round = 0; round < 3; ++round) {
			static const size_t max[] = { 4, 48, 512 };
			struct hv_out parts;
			long at;

			hv_feed_init(&f, &c->config, max[round],
				     (uint64_t) round * 7919 + 1);
			decode(&parts, c, layer, &f);
			resumed[layer] += f.moved;
			at = hv_out_diff(&whole, &parts);
			if (!CHECK(at < 0))
				printf("     %s %s, round %d: item %ld of %zu\n",
				       c->name, names[layer], round, at,
				       whole.n);
			free(parts.h);
		}
		free(whole.h);
	}
}

/* A run of PSB pattern longer than a PSB: the PSB is its last 16 bytes,
 * so a sync that finds the run cut by the end waits for the rest. */
static void check_psb_run(void)
{
	uint8_t buf[32];
	struct pt_config config;
	struct pt_packet_decoder *d;
	uint64_t sync = 0;
	int i;

	memset(buf, 0, sizeof(buf));
	for (i = 4; i < 24; i += 2) {
		buf[i] = 0x02;
		buf[i + 1] = 0x82;
	}
	buf[24] = 0x02;
	buf[25] = 0x23;
	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	d = pt_pkt_alloc_decoder(&config);
	if (!CHECK(d != NULL))
		return;
	CHECK_EQ(ipt_pkt_set_buffer(d, buf, buf + 22), 0);
	CHECK_EQ(ipt_pkt_extend(d, buf + 22, 1), 0);
	CHECK_EQ(pt_pkt_sync_forward(d), -pte_eos);
	CHECK_EQ(ipt_pkt_extend(d, buf + sizeof(buf), 0), 0);
	CHECK_EQ(pt_pkt_sync_forward(d), 0);
	CHECK_EQ(pt_pkt_get_sync_offset(d, &sync), 0);
	CHECK_EQ(sync, 8);
	pt_pkt_free_decoder(d);
}

/* @size bytes of trace at @buf, with SKD010's workaround on or off, give
 * the packet, event and query decoders the same output whole and in
 * pieces of one byte. */
static void check_pieces(const char *what, uint8_t *buf, size_t size,
			 int skd010)
{
	static const char *const names[] = { "pkt", "evt", "qry" };
	struct pt_config config;
	int layer;

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + size;
	config.errata.skd010 = skd010 ? 1 : 0;
	for (layer = HV_PKT; layer <= HV_QRY; ++layer) {
		struct hv_out whole, parts;
		struct hv_feed f;
		long at;

		hv_feed_init(&f, &config, 0, 0);
		hv_decode_layer(&whole, &config, NULL, (enum hv_layer) layer,
				&f, 0);
		hv_feed_init(&f, &config, 1, 1);
		hv_decode_layer(&parts, &config, NULL, (enum hv_layer) layer,
				&f, 0);
		at = hv_out_diff(&whole, &parts);
		if (!CHECK(at < 0 && whole.n > 2))
			printf("     %s in pieces, %s: item %ld of %zu\n", what,
			       names[layer], at, whole.n);
		free(whole.h);
		free(parts.h);
	}
}

#define PSB 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, \
	    0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82
#define PSBEND 0x02, 0x23

/* Look aheads and syncs that meet the end while more may come wait for
 * it, and decide as in the whole trace. */
static void check_look_aheads(void)
{
	/* An OVF whose FUP comes after a CBR and one with a zero ratio,
	 * with SKD010's workaround on: the search for the FUP finds it
	 * once more has come, and the bad CBR is reported when the decode
	 * gets to it, not by the erratum's look ahead run early on the
	 * packets before the end. */
	uint8_t ovf[] = {
		PSB, PSBEND,
		0x02, 0xf3,				/* OVF */
		0x02, 0x03, 0x0f, 0x00,			/* CBR 15 */
		0x02, 0x03, 0x00, 0x00,			/* CBR 0 */
		0x7d, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, /* FUP */
		PSB, PSBEND
	};
	/* A PSB+ with a second PSB inside, which makes it bad: a sync that
	 * finds the first PSB while the second is cut by the end waits,
	 * then reports the bad PSB+, and the next sync goes on at the
	 * second PSB. */
	uint8_t psb_in_psb[] = {
		PSB,
		0x99, 0x01,				/* MODE.exec */
		PSB,
		0x7d, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, /* FUP */
		PSBEND,
		0x02, 0x03, 0x0f, 0x00,			/* CBR 15 */
		PSB, PSBEND
	};

	check_pieces("OVF, CBRs, FUP", ovf, sizeof(ovf), 1);
	check_pieces("PSB in a PSB+", psb_in_psb, sizeof(psb_in_psb), 0);
}

int main(int argc, char **argv)
{
	int layer;

	check_psb_run();
	check_look_aheads();

	hv_cases(argc, argv, run_case);
	/* The query, block and instruction decoders had to wait for more,
	 * and had something to say. */
	for (layer = HV_QRY; layer < 8; ++layer) {
		CHECK(resumed[layer] > 0);
		CHECK(items[layer] > 0);
	}
	printf("resumed after need-more: qry %lu, blk %lu, insn %lu, cov %lu; "
	       "items qry %lu, blk %lu, insn %lu, cov %lu, over file sections "
	       "blk %lu, insn %lu\n", resumed[2], resumed[3], resumed[4],
	       resumed[5], items[2], items[3], items[4], items[5], items[6],
	       items[7]);
	CHECK(strcmp(pt_errstr(ipt_pte_need_more),
		     "end of trace for now: more may come") == 0);
	CHECK_EQ(pt_errcode(-ipt_pte_need_more), ipt_pte_need_more);
	CHECK_EQ(ipt_pkt_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_evt_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_qry_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_blk_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_insn_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_cov_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	return check_done();
}

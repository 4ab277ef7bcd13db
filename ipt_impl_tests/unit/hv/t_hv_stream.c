/* t_hv_stream [CORPUS_DIR|--synth DIR]...: streaming.
 *
 * Every ptxed case's trace is decoded by a packet, an event, a query, a
 * block and an instruction decoder once whole, then in pieces of random
 * size: the decoder starts on the first piece with more to come
 * (ipt_*_extend), and whenever a call says -ipt_pte_need_more (or a sync
 * finds the end), the end moves on by the next piece and the call is made
 * again.  Both must give the same packets, events, branches, blocks and
 * instructions, errors included. */
#include "hv_cases.h"

static uint64_t rng;

/* Per layer: calls made again after the end moved, and items compared. */
static unsigned long resumed[7], items[7];

/* Pieces of 1 to @piece_max bytes. */
static size_t piece_max;

static size_t piece(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return 1 + (size_t) ((rng >> 33) % piece_max);
}

/* The trace of @c, [begin, *end), moves on by a piece; returns 0 at the
 * end of the whole trace. */
static int grow(const struct hcase *c, uint8_t **end)
{
	size_t left = (size_t) (c->config.end - *end), n = piece();

	if (!left)
		return 0;
	*end += n < left ? n : left;
	return 1;
}

static int at_end(int status)
{
	return status == -ipt_pte_need_more || status == -pte_eos;
}

static void decode_pkt(struct hv_out *o, const struct hcase *c, int pieces)
{
	struct pt_config config = c->config;
	struct pt_packet_decoder *d;
	uint8_t *end = pieces ? config.begin : config.end;
	int status, syncing = 1;

	memset(o, 0, sizeof(*o));
	d = pt_pkt_alloc_decoder(&config);
	if (!d || ipt_pkt_set_buffer(d, config.begin, end) < 0 ||
	    ipt_pkt_extend(d, end, pieces) < 0) {
		hv_out_add(o, 'x', 1, 0);
		pt_pkt_free_decoder(d);
		return;
	}
	status = pt_pkt_sync_forward(d);
	while (!o->overflow) {
		struct pt_packet p;
		uint64_t offset = 0;

		if (pieces && at_end(status) && grow(c, &end)) {
			(void) ipt_pkt_extend(d, end, end < c->config.end);
			status = syncing ? pt_pkt_sync_forward(d) : 0;
			continue;
		}
		if (status < 0) {
			if (at_end(status))
				break;
			hv_out_add(o, 'x', (uint64_t) -status, 0);
			syncing = 1;
			status = pt_pkt_sync_forward(d);
			continue;
		}
		syncing = 0;
		(void) pt_pkt_get_offset(d, &offset);
		memset(&p, 0, sizeof(p));
		status = pt_pkt_next(d, &p, sizeof(p));
		if (status >= 0)
			hv_out_add(o, 'p' | ((uint64_t) p.type << 8), offset,
				   p.payload.ip.ip ^ p.size);
	}
	pt_pkt_free_decoder(d);
}

/* A sync that found the end: once it has moved, go on at the PSB the
 * failed call reached, if it reached one, or search again. */
static int evt_resync(struct pt_event_decoder *d, uint64_t before)
{
	uint64_t sync;

	if (pt_evt_get_sync_offset(d, &sync) >= 0 && sync != before)
		return pt_evt_sync_set(d, sync);
	return pt_evt_sync_forward(d);
}

static void decode_evt(struct hv_out *o, const struct hcase *c, int pieces)
{
	struct pt_config config = c->config;
	struct pt_event_decoder *d;
	uint8_t *end = pieces ? config.begin : config.end;
	uint64_t before = UINT64_MAX;
	int status, syncing = 1;

	memset(o, 0, sizeof(*o));
	d = pt_evt_alloc_decoder(&config);
	if (!d || ipt_evt_set_buffer(d, config.begin, end) < 0 ||
	    ipt_evt_extend(d, end, pieces) < 0) {
		hv_out_add(o, 'x', 1, 0);
		pt_evt_free_decoder(d);
		return;
	}
	status = pt_evt_sync_forward(d);
	while (!o->overflow) {
		struct pt_event ev;

		if (pieces && at_end(status) && grow(c, &end)) {
			(void) ipt_evt_extend(d, end, end < c->config.end);
			status = syncing ? evt_resync(d, before) : 0;
			continue;
		}
		if (status < 0) {
			if (at_end(status))
				break;
			hv_out_add(o, 'x', (uint64_t) -status, 0);
			syncing = 1;
			if (pt_evt_get_sync_offset(d, &before) < 0)
				before = UINT64_MAX;
			status = pt_evt_sync_forward(d);
			continue;
		}
		syncing = 0;
		status = pt_evt_next(d, &ev, sizeof(ev));
		if (status >= 0)
			hv_out_event(o, &ev);
	}
	pt_evt_free_decoder(d);
}

/* The query decoder, driven without code: events when one is pending,
 * else a conditional branch, else (the query says it is not one) an
 * indirect branch; an error, or neither branch, synchronizes forward. */
static void decode_qry(struct hv_out *o, const struct hcase *c, int pieces)
{
	enum { SYNC, COND, INDIRECT, EVENT } op = SYNC;
	struct pt_config config = c->config;
	struct pt_query_decoder *d;
	uint8_t *end = pieces ? config.begin : config.end;
	int status;

	memset(o, 0, sizeof(*o));
	d = pt_qry_alloc_decoder(&config);
	if (!d || ipt_qry_set_buffer(d, config.begin, end) < 0 ||
	    ipt_qry_extend(d, end, pieces) < 0) {
		hv_out_add(o, 'x', 1, 0);
		pt_qry_free_decoder(d);
		return;
	}
	while (!o->overflow && o->n < 4000000) {
		struct pt_event ev;
		uint64_t ip = 0;
		int taken = 0;

		switch (op) {
		case SYNC:
			status = pt_qry_sync_forward(d, &ip);
			break;
		case COND:
			status = pt_qry_cond_branch(d, &taken);
			break;
		case INDIRECT:
			status = pt_qry_indirect_branch(d, &ip);
			break;
		case EVENT:
			status = pt_qry_event(d, &ev, sizeof(ev));
			break;
		}
		if (pieces && (status == -ipt_pte_need_more ||
			       (op == SYNC && status == -pte_eos)) &&
		    grow(c, &end)) {
			(void) ipt_qry_extend(d, end, end < c->config.end);
			resumed[2] += 1;
			continue;
		}
		if (status == -pte_bad_query && op == COND) {
			op = INDIRECT;
			continue;
		}
		if (status < 0) {
			if (status == -pte_eos)
				break;
			hv_out_add(o, 'x', (uint64_t) -status, op);
			op = SYNC;
			continue;
		}
		if (op == EVENT)
			hv_out_event(o, &ev);
		else
			hv_out_add(o, 'q' | ((uint64_t) op << 8), ip ^ taken,
				   (uint64_t) status);
		op = (status & pts_event_pending) ? EVENT : COND;
	}
	pt_qry_free_decoder(d);
}

/* The block or instruction decoder, over @c's code: blocks (or
 * instructions) and events; an error synchronizes forward. */
static void decode_flow(struct hv_out *o, struct hcase *c, int insn,
			int files, int pieces)
{
	enum { SYNC, NEXT, EVENT } op = SYNC;
	struct pt_config config = c->config;
	struct pt_block_decoder *b = NULL;
	struct pt_insn_decoder *i = NULL;
	struct pt_image *image = pt_image_alloc(NULL);
	uint8_t *end = pieces ? config.begin : config.end;
	int status, err;

	memset(o, 0, sizeof(*o));
	o->limit = 1u << 22;
	c->mem.pct = 0;
	if (files)
		err = !hcase_sections(c, image);
	else
		err = pt_image_set_callback(image, gmem_read, &c->mem) < 0;
	if (!err && insn) {
		i = pt_insn_alloc_decoder(&config);
		err = !i || pt_insn_set_image(i, image) < 0 ||
		      ipt_insn_set_buffer(i, config.begin, end) < 0 ||
		      ipt_insn_extend(i, end, pieces) < 0;
	} else if (!err) {
		b = pt_blk_alloc_decoder(&config);
		err = !b || pt_blk_set_image(b, image) < 0 ||
		      ipt_blk_set_buffer(b, config.begin, end) < 0 ||
		      ipt_blk_extend(b, end, pieces) < 0;
	}
	while (!err && !o->overflow) {
		struct pt_block blk;
		struct pt_insn in;
		struct pt_event ev;

		memset(&blk, 0, sizeof(blk));
		memset(&in, 0, sizeof(in));
		switch (op) {
		case SYNC:
			status = insn ? pt_insn_sync_forward(i) :
					pt_blk_sync_forward(b);
			break;
		case NEXT:
			status = insn ? pt_insn_next(i, &in, sizeof(in)) :
					pt_blk_next(b, &blk, sizeof(blk));
			break;
		case EVENT:
			status = insn ? pt_insn_event(i, &ev, sizeof(ev)) :
					pt_blk_event(b, &ev, sizeof(ev));
			break;
		}
		if (pieces && (status == -ipt_pte_need_more ||
			       (op == SYNC && status == -pte_eos)) &&
		    grow(c, &end)) {
			if (insn)
				(void) ipt_insn_extend(i, end,
						       end < c->config.end);
			else
				(void) ipt_blk_extend(b, end,
						      end < c->config.end);
			resumed[(insn ? 4 : 3) + 2 * files] += 1;
			continue;
		}
		if (op == NEXT && blk.ninsn) {
			hv_out_block(o, &blk, blk.ip, blk.ninsn);
			if (hv_out_full(o, blk.ninsn))
				break;
		}
		if (op == NEXT && insn && in.iclass != ptic_error) {
			hv_out_add(o, 'i' | ((uint64_t) in.mode << 8),
				   in.ip, in.iclass);
			if (hv_out_full(o, 1))
				break;
		}
		if (op == EVENT && status >= 0)
			hv_out_event(o, &ev);
		if (status < 0) {
			if (status == -pte_eos)
				break;
			hv_out_add(o, 'x', (uint64_t) -status, op);
			op = SYNC;
			continue;
		}
		op = (status & pts_event_pending) ? EVENT : NEXT;
	}
	if (err)
		hv_out_add(o, 'x', 1, 0);
	pt_blk_free_decoder(b);
	pt_insn_free_decoder(i);
	pt_image_free(image);
}

static void decode(struct hv_out *o, struct hcase *c, int layer, int pieces)
{
	switch (layer) {
	case 0:
		decode_pkt(o, c, pieces);
		break;
	case 1:
		decode_evt(o, c, pieces);
		break;
	case 2:
		decode_qry(o, c, pieces);
		break;
	default:
		/* Over the callback, then over file sections, where the
		 * block decoder ends blocks as libipt's block cache does. */
		decode_flow(o, c, layer == 4 || layer == 6, layer >= 5,
			    pieces);
		break;
	}
}

static void run_case(struct hcase *c)
{
	static const char *const names[] = { "pkt", "evt", "qry", "blk",
					     "insn", "blk files",
					     "insn files" };
	int layer, round;

	for (layer = 0; layer < 7; ++layer) {
		struct hv_out whole;

		decode(&whole, c, layer, 0);
		items[layer] += whole.n;
		for (round = 0; round < 3; ++round) {
			struct hv_out parts;
			long at;

			static const size_t max[] = { 4, 48, 512 };

			rng = (uint64_t) round * 7919 + 1;
			piece_max = max[round];
			decode(&parts, c, layer, 1);
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

int main(int argc, char **argv)
{
	int layer;

	hv_cases(argc, argv, run_case);
	/* The query, block and instruction decoders had to wait for more,
	 * and had something to say. */
	for (layer = 2; layer < 7; ++layer) {
		CHECK(resumed[layer] > 0);
		CHECK(items[layer] > 0);
	}
	printf("resumed after need-more: qry %lu, blk %lu, insn %lu; items "
	       "qry %lu, blk %lu, insn %lu, over file sections blk %lu, "
	       "insn %lu\n", resumed[2], resumed[3], resumed[4], items[2],
	       items[3], items[4], items[5], items[6]);
	CHECK(strcmp(pt_errstr(ipt_pte_need_more),
		     "end of trace for now: more may come") == 0);
	CHECK_EQ(pt_errcode(-ipt_pte_need_more), ipt_pte_need_more);
	CHECK_EQ(ipt_pkt_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_evt_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_qry_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_blk_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_insn_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	return check_done();
}

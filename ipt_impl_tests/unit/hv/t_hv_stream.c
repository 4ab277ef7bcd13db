/* t_hv_stream [CORPUS_DIR|--synth DIR]...: streaming.
 *
 * Every ptxed case's trace is decoded by a packet and an event decoder
 * once whole, then in pieces of random size: the decoder starts on the
 * first piece with more to come (ipt_*_extend), and whenever a call says
 * -ipt_pte_need_more (or a sync finds the end), the end moves on by the
 * next piece and the call is made again.  Both must give the same packets
 * and events, errors included. */
#include "hv_cases.h"

static uint64_t rng;

static size_t piece(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return 1 + (size_t) ((rng >> 33) % 48);
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

static void run_case(struct hcase *c)
{
	int evt, round;

	for (evt = 0; evt < 2; ++evt) {
		struct hv_out whole;

		if (evt)
			decode_evt(&whole, c, 0);
		else
			decode_pkt(&whole, c, 0);
		for (round = 0; round < 3; ++round) {
			struct hv_out parts;
			long at;

			rng = (uint64_t) round * 7919 + 1;
			if (evt)
				decode_evt(&parts, c, 1);
			else
				decode_pkt(&parts, c, 1);
			at = hv_out_diff(&whole, &parts);
			if (!CHECK(at < 0))
				printf("     %s %s, round %d: item %ld of %zu\n",
				       c->name, evt ? "evt" : "pkt", round,
				       at, whole.n);
			free(parts.h);
		}
		free(whole.h);
	}
}

int main(int argc, char **argv)
{
	hv_cases(argc, argv, run_case);
	CHECK(strcmp(pt_errstr(ipt_pte_need_more),
		     "end of trace for now: more may come") == 0);
	CHECK_EQ(pt_errcode(-ipt_pte_need_more), ipt_pte_need_more);
	CHECK_EQ(ipt_pkt_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	CHECK_EQ(ipt_evt_extend(NULL, (uint8_t *) argv, 1), -pte_invalid);
	return check_done();
}

/* stream_util.h - trace that arrives in pieces, and decode loops for the
 * decoders that wait for it.
 *
 * struct hv_feed hands out a trace [begin, stop) a piece at a time: @end
 * is how far it has come; or a ring buffer's two pieces, the newer one a
 * piece at a time (hv_feed_ring).  The loops start their decoder on what
 * is there, with more to come (ipt_*_extend), and whenever a call says
 * -ipt_pte_need_more (or a sync finds the end) let the end move on by the
 * next piece and make the call again; a feed that starts at the stop is
 * the whole trace at once.  What they report goes to a struct hv_out
 * (fault_util.h), so that the two decodes compare item by item; the
 * caller clears it and may set its limit.
 *
 *     hv_decode_pkt    packets and their offsets
 *     hv_decode_evt    events
 *     hv_decode_qry    branches and events; queries chosen without code
 *     hv_decode_flow   blocks or instructions, and events
 *     hv_decode_cov    the coverage decoder's edges and bitmap
 *     hv_decode_layer  one of them by number
 *     hv_decode_mem    the same over code in a struct gmem
 *
 * All but hv_decode_pkt note the decoder's offset after each item. */
#ifndef HV_STREAM_UTIL_H
#define HV_STREAM_UTIL_H

#include "fault_util.h"

struct hv_feed {
	/* The trace (or a ring's newer piece) [begin, stop), there up to
	 * @end; a ring's older piece [older, older_end), NULL for none. */
	uint8_t *begin;
	uint8_t *end;
	uint8_t *stop;
	uint8_t *older, *older_end;
	/* Pieces of 1 to @max bytes, sizes from @rng. */
	uint64_t rng;
	size_t max;
	/* How often the end moved. */
	unsigned long moved;
};

/* Feed @config's trace in pieces (@max not zero) or whole. */
static HV_UNUSED void hv_feed_init(struct hv_feed *f,
				   const struct pt_config *config,
				   size_t max, uint64_t seed)
{
	f->begin = config->begin;
	f->stop = config->end;
	f->end = max ? config->begin : config->end;
	f->older = f->older_end = NULL;
	f->rng = seed;
	f->max = max;
	f->moved = 0;
}

/* Feed @config's trace as a ring buffer of its size that the processor
 * wrapped around in after @split bytes: the newer part at the start of
 * @ring (which the caller allocates, the trace's size, and frees), the
 * older part at its end.  The newer part comes in pieces (@max not zero)
 * or whole. */
static HV_UNUSED void hv_feed_ring(struct hv_feed *f,
				   const struct pt_config *config,
				   size_t split, uint8_t *ring, size_t max,
				   uint64_t seed)
{
	size_t size = (size_t) (config->end - config->begin);

	memcpy(ring, config->begin + split, size - split);
	memcpy(ring + size - split, config->begin, split);
	hv_feed_init(f, config, max, seed);
	f->older = ring + size - split;
	f->older_end = ring + size;
	f->begin = ring;
	f->stop = ring + size - split;
	f->end = max ? f->begin : f->stop;
}

/* Point decoder @d of kind @P at what has come of @f's trace. */
#define HV_FEED_SET(P, d, f)                                                   \
	((f)->older ? ipt_##P##_set_ring((d), (f)->older, (f)->older_end,      \
					 (f)->begin, (f)->end) :               \
		      ipt_##P##_set_buffer((d), (f)->begin, (f)->end))

/* Note an offset (for the ring tests: offsets count in the whole trace). */
static HV_UNUSED void hv_out_offsets(struct hv_out *o, int status,
				     uint64_t offset)
{
	hv_out_add(o, 'o', status < 0 ? (uint64_t) -status : 0, offset);
}

/* Move the end on by a piece; 0 if the whole trace is there. */
static HV_UNUSED int hv_feed_grow(struct hv_feed *f)
{
	size_t left = (size_t) (f->stop - f->end), n;

	if (!left)
		return 0;
	f->rng = f->rng * 6364136223846793005ull + 1442695040888963407ull;
	n = 1 + (size_t) ((f->rng >> 33) % f->max);
	f->end += n < left ? n : left;
	f->moved += 1;
	return 1;
}

/* Did a call (of kind @op) fail?  Notes the error, the end of the trace
 * excepted. */
static HV_UNUSED int hv_failed(struct hv_out *o, int status, int op)
{
	if (status >= 0)
		return 0;
	if (status != -pte_eos)
		hv_out_add(o, 'x', (uint64_t) -status, (uint64_t) op);
	return 1;
}

/* The query decoder, driven without code: events when one is pending,
 * else a conditional branch, else (the query says it is not one) an
 * indirect branch; an error, or neither branch, synchronizes forward. */
static HV_UNUSED void hv_decode_qry(struct hv_out *o,
				     const struct pt_config *config,
				     struct hv_feed *f)
{
	enum { SYNC, COND, INDIRECT, EVENT } op = SYNC;
	struct pt_query_decoder *d;
	int status = 0;

	d = pt_qry_alloc_decoder(config);
	if (!d || HV_FEED_SET(qry, d, f) < 0 ||
	    ipt_qry_extend(d, f->end, f->end < f->stop) < 0) {
		hv_out_add(o, 'x', 1, 0);
		pt_qry_free_decoder(d);
		return;
	}
	while (!o->overflow && !hv_out_full(o, 0)) {
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
		if ((status == -ipt_pte_need_more ||
		     (op == SYNC && status == -pte_eos)) && hv_feed_grow(f)) {
			(void) ipt_qry_extend(d, f->end, f->end < f->stop);
			continue;
		}
		if (status == -pte_bad_query && op == COND) {
			op = INDIRECT;
			continue;
		}
		if (hv_failed(o, status, op)) {
			if (status == -pte_eos)
				break;
			op = SYNC;
			continue;
		}
		if (op == EVENT)
			hv_out_event(o, &ev);
		else
			hv_out_add(o, 'q' | ((uint64_t) op << 8), ip ^ taken,
				   (uint64_t) status);
		hv_out_offsets(o, pt_qry_get_offset(d, &ip), ip);
		if (op == SYNC)
			hv_out_offsets(o, pt_qry_get_sync_offset(d, &ip), ip);
		op = (status & pts_event_pending) ? EVENT : COND;
	}
	pt_qry_free_decoder(d);
}

/* The block or instruction decoder, over @c's code: blocks (or
 * instructions) and events; an error synchronizes forward. */
static HV_UNUSED void hv_decode_flow(struct hv_out *o,
				      const struct pt_config *config,
				      struct pt_image *image, int insn,
				      struct hv_feed *f)
{
	enum { SYNC, NEXT, EVENT } op = SYNC;
	struct pt_block_decoder *b = NULL;
	struct pt_insn_decoder *i = NULL;
	int status = 0, err;

	if (insn) {
		i = pt_insn_alloc_decoder(config);
		err = !i || pt_insn_set_image(i, image) < 0 ||
		      HV_FEED_SET(insn, i, f) < 0 ||
		      ipt_insn_extend(i, f->end, f->end < f->stop) < 0;
	} else {
		b = pt_blk_alloc_decoder(config);
		err = !b || pt_blk_set_image(b, image) < 0 ||
		      HV_FEED_SET(blk, b, f) < 0 ||
		      ipt_blk_extend(b, f->end, f->end < f->stop) < 0;
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
		if ((status == -ipt_pte_need_more ||
		     (op == SYNC && status == -pte_eos)) && hv_feed_grow(f)) {
			if (insn)
				(void) ipt_insn_extend(i, f->end,
						       f->end < f->stop);
			else
				(void) ipt_blk_extend(b, f->end,
						      f->end < f->stop);
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
		if (status >= 0) {
			uint64_t offset = 0;

			hv_out_offsets(o, insn ? pt_insn_get_offset(i, &offset) :
						 pt_blk_get_offset(b, &offset),
				       offset);
			if (op == SYNC)
				hv_out_offsets(o, insn ?
					pt_insn_get_sync_offset(i, &offset) :
					pt_blk_get_sync_offset(b, &offset),
					       offset);
		}
		if (hv_failed(o, status, op)) {
			if (status == -pte_eos)
				break;
			op = SYNC;
			continue;
		}
		op = (status & pts_event_pending) ? EVENT : NEXT;
	}
	if (err)
		hv_out_add(o, 'x', 1, 0);
	pt_blk_free_decoder(b);
	pt_insn_free_decoder(i);
}

static HV_UNUSED int hv_at_end(int status)
{
	return status == -ipt_pte_need_more || status == -pte_eos;
}

static HV_UNUSED void hv_decode_pkt(struct hv_out *o,
				     const struct pt_config *uconfig,
				     struct hv_feed *f)
{
	struct pt_config config = *uconfig;
	struct pt_packet_decoder *d;
	int status, syncing = 1;

	memset(o, 0, sizeof(*o));
	d = pt_pkt_alloc_decoder(&config);
	if (!d || HV_FEED_SET(pkt, d, f) < 0 ||
	    ipt_pkt_extend(d, f->end, f->end < f->stop) < 0) {
		hv_out_add(o, 'x', 1, 0);
		pt_pkt_free_decoder(d);
		return;
	}
	status = pt_pkt_sync_forward(d);
	while (!o->overflow) {
		struct pt_packet p;
		uint64_t offset = 0;

		if (hv_at_end(status) && hv_feed_grow(f)) {
			(void) ipt_pkt_extend(d, f->end, f->end < f->stop);
			status = syncing ? pt_pkt_sync_forward(d) : 0;
			continue;
		}
		if (status < 0) {
			if (hv_at_end(status))
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
			hv_out_packet(o, &p, offset);
	}
	pt_pkt_free_decoder(d);
}

static HV_UNUSED void hv_decode_evt(struct hv_out *o,
				     const struct pt_config *uconfig,
				     struct hv_feed *f)
{
	struct pt_config config = *uconfig;
	struct pt_event_decoder *d;
	int status, syncing = 1;

	memset(o, 0, sizeof(*o));
	d = pt_evt_alloc_decoder(&config);
	if (!d || HV_FEED_SET(evt, d, f) < 0 ||
	    ipt_evt_extend(d, f->end, f->end < f->stop) < 0) {
		hv_out_add(o, 'x', 1, 0);
		pt_evt_free_decoder(d);
		return;
	}
	status = pt_evt_sync_forward(d);
	while (!o->overflow) {
		struct pt_event ev;
		uint64_t offset = 0;

		if (hv_at_end(status) && hv_feed_grow(f)) {
			(void) ipt_evt_extend(d, f->end, f->end < f->stop);
			status = syncing ? pt_evt_sync_forward(d) : 0;
			continue;
		}
		if (status < 0) {
			if (hv_at_end(status))
				break;
			hv_out_add(o, 'x', (uint64_t) -status, 0);
			syncing = 1;
			status = pt_evt_sync_forward(d);
			continue;
		}
		syncing = 0;
		status = pt_evt_next(d, &ev, sizeof(ev));
		if (status >= 0) {
			hv_out_event(o, &ev);
			hv_out_offsets(o, pt_evt_get_offset(d, &offset),
				       offset);
		}
	}
	pt_evt_free_decoder(d);
}


/* The coverage decoder, over @image: its edges, then its bitmap and the
 * errors and bytes skipped it counted. */
static HV_UNUSED void hv_cov_edge(void *ctx, uint64_t from, uint64_t to,
				  enum ipt_cov_kind kind)
{
	hv_out_add((struct hv_out *) ctx, 'c' | ((uint64_t) kind << 8), from,
		   to);
}

static HV_UNUSED void hv_decode_cov(struct hv_out *o,
				    const struct pt_config *config,
				    struct pt_image *image, struct hv_feed *f)
{
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *d;
	struct ipt_cov_status st;
	uint8_t map[1 << 10];
	size_t i;
	int err, status;

	memset(&cc, 0, sizeof(cc));
	cc.edge = hv_cov_edge;
	cc.context = o;
	d = ipt_cov_alloc_decoder(config, &cc);
	err = !d || ipt_cov_set_image(d, image) < 0 ||
	      ipt_cov_set_bitmap(d, map, sizeof(map)) < 0 ||
	      (f->older ? ipt_cov_set_ring(d, f->older, f->older_end, f->begin,
					   f->end, 1) :
			  ipt_cov_set_trace(d, f->begin, f->end, 1)) < 0 ||
	      ipt_cov_extend(d, f->end, f->end < f->stop) < 0;
	while (!err) {
		status = ipt_cov_decode(d);
		if (status == -ipt_pte_need_more && hv_feed_grow(f)) {
			(void) ipt_cov_extend(d, f->end, f->end < f->stop);
			continue;
		}
		err = status < 0 || ipt_cov_get_status(d, &st) < 0;
		break;
	}
	if (err) {
		hv_out_add(o, 'x', 1, 0);
	} else {
		for (i = 0; i < sizeof(map); i += 8) {
			uint64_t w;

			memcpy(&w, map + i, 8);
			hv_out_add(o, 'm', i, w);
		}
		hv_out_add(o, 's', st.errors, st.skipped);
	}
	ipt_cov_free_decoder(d);
}


/* The decoders the loops drive, as the tests number them. */
enum hv_layer { HV_PKT, HV_EVT, HV_QRY, HV_BLK, HV_INSN, HV_COV };

/* Decode @config's trace as @f feeds it with decoder @layer, the block,
 * instruction and coverage decoders over @image (which the others do not
 * need); @o is cleared, its limit set to @limit. */
static HV_UNUSED void hv_decode_layer(struct hv_out *o,
				      const struct pt_config *config,
				      struct pt_image *image,
				      enum hv_layer layer, struct hv_feed *f,
				      uint64_t limit)
{
	memset(o, 0, sizeof(*o));
	o->limit = limit;
	switch (layer) {
	case HV_PKT:
		hv_decode_pkt(o, config, f);
		return;
	case HV_EVT:
		hv_decode_evt(o, config, f);
		return;
	case HV_QRY:
		hv_decode_qry(o, config, f);
		return;
	case HV_BLK:
	case HV_INSN:
		if (image)
			hv_decode_flow(o, config, image, layer == HV_INSN, f);
		break;
	case HV_COV:
		if (image)
			hv_decode_cov(o, config, image, f);
		break;
	}
	if (!image)
		hv_out_add(o, 'x', 1, 0);
}


/* hv_decode_layer over the code in @m, read through the callback of an
 * image from @allocator (NULL: the default). */
static HV_UNUSED void hv_decode_mem(struct hv_out *o,
				    const struct pt_config *config,
				    struct gmem *m, enum hv_layer layer,
				    struct hv_feed *f, uint64_t limit,
				    const struct ipt_allocator *allocator)
{
	struct pt_image *image = NULL;

	if (layer >= HV_BLK) {
		image = ipt_image_alloc_with(NULL, allocator);
		if (image && pt_image_set_callback(image, gmem_read, m) < 0) {
			pt_image_free(image);
			image = NULL;
		}
	}
	hv_decode_layer(o, config, image, layer, f, limit);
	pt_image_free(image);
}

#endif

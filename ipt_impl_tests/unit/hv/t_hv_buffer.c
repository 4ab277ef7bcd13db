/* t_hv_buffer [CORPUS_DIR|--synth DIR]...: one decoder for every trace.
 *
 * For every ptxed case of each corpus and each ptsynth directory, a packet,
 * event, query, block, instruction and coverage decoder are made once,
 * with a counting allocator, and pointed (ipt_*_set_buffer,
 * ipt_cov_set_trace) in turn at the case's trace, at its first half and
 * at the trace as a wrapped ring's two pieces (ipt_*_set_ring), round
 * after round.  Each decode must give
 * what a new decoder gives on that buffer.  Pointing a decoder elsewhere
 * allocates nothing, and once its caches have grown to what the code
 * needs, neither the decoders nor the image their code comes through
 * allocate: two rounds in a row without an allocation end the case. */
#include "hv_cases.h"
#include "stream_util.h"

struct counter {
	unsigned long allocs;
};

static void *count_alloc(void *context, size_t size)
{
	((struct counter *) context)->allocs += 1;
	return malloc(size);
}

static void count_free(void *context, void *ptr, size_t size)
{
	(void) context;
	(void) size;
	free(ptr);
}

static void decode_pkt(struct hv_out *o, struct pt_packet_decoder *d)
{
	int status = pt_pkt_sync_forward(d);

	while (!o->overflow) {
		struct pt_packet p;
		uint64_t offset = 0;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			hv_out_add(o, 'x', (uint64_t) -status, 0);
			status = pt_pkt_sync_forward(d);
			continue;
		}
		(void) pt_pkt_get_offset(d, &offset);
		memset(&p, 0, sizeof(p));
		status = pt_pkt_next(d, &p, sizeof(p));
		if (status >= 0)
			hv_out_packet(o, &p, offset);
	}
}

static void decode_evt(struct hv_out *o, struct pt_event_decoder *d)
{
	int status = pt_evt_sync_forward(d);

	while (!o->overflow) {
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			hv_out_add(o, 'x', (uint64_t) -status, 0);
			status = pt_evt_sync_forward(d);
			continue;
		}
		status = pt_evt_next(d, &ev, sizeof(ev));
		if (status >= 0)
			hv_out_event(o, &ev);
	}
}

/* The query decoder answers what it is asked; this asks for events while
 * they are pending, then for a conditional branch, then for an indirect
 * one. */
static void decode_qry(struct hv_out *o, struct pt_query_decoder *d)
{
	uint64_t ip = 0;
	int status = pt_qry_sync_forward(d, &ip);

	while (!o->overflow) {
		struct pt_event ev;
		int taken = 0;

		if (status < 0) {
			if (status == -pte_eos)
				break;
			hv_out_add(o, 'x', (uint64_t) -status, 0);
			status = pt_qry_sync_forward(d, &ip);
			if (status >= 0)
				hv_out_add(o, 's', ip, 0);
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_qry_event(d, &ev, sizeof(ev));
			if (status >= 0)
				hv_out_event(o, &ev);
			continue;
		}
		status = pt_qry_cond_branch(d, &taken);
		if (status >= 0) {
			hv_out_add(o, 't', (uint64_t) taken, 0);
			continue;
		}
		status = pt_qry_indirect_branch(d, &ip);
		if (status >= 0)
			hv_out_add(o, 'j', ip, 0);
	}
}

/* What decoder @kind gives on @config: @d if not NULL (pointed at the
 * buffer first), else a new one. */
enum { K_PKT, K_EVT, K_QRY, K_BLK, K_INSN, K_COV, K_NUM };

static const char *const kind_name[K_NUM] = {
	"pkt", "evt", "qry", "blk", "insn", "cov"
};

struct decoders {
	void *d[K_NUM];
	struct pt_image *image;
	struct counter *count;
	/* Where the coverage decoder's edges go; its bitmap. */
	struct hv_out *edges;
	uint8_t map[1 << 10];
};

static void cov_edge(void *ctx, uint64_t from, uint64_t to,
		     enum ipt_cov_kind kind)
{
	struct decoders *ds = (struct decoders *) ctx;

	hv_out_add(ds->edges, 'c' | ((uint64_t) kind << 8), from, to);
}

static int decoders_make(struct decoders *ds, const struct pt_config *c,
			 struct gmem *m, const struct ipt_allocator *a,
			 struct counter *count)
{
	struct ipt_cov_config cc;

	memset(&cc, 0, sizeof(cc));
	cc.edge = cov_edge;
	cc.context = ds;
	ds->count = count;
	ds->image = ipt_image_alloc_with(NULL, a);
	ds->d[K_PKT] = ipt_pkt_alloc_decoder_with(c, a);
	ds->d[K_EVT] = ipt_evt_alloc_decoder_with(c, a);
	ds->d[K_QRY] = ipt_qry_alloc_decoder_with(c, a);
	ds->d[K_BLK] = ipt_blk_alloc_decoder_with(c, a);
	ds->d[K_INSN] = ipt_insn_alloc_decoder_with(c, a);
	ds->d[K_COV] = ipt_cov_alloc_decoder_with(c, &cc, a);
	if (!ds->image || !ds->d[K_PKT] || !ds->d[K_EVT] || !ds->d[K_QRY] ||
	    !ds->d[K_BLK] || !ds->d[K_INSN] || !ds->d[K_COV])
		return 0;
	pt_image_set_callback(ds->image, gmem_read, m);
	pt_blk_set_image((struct pt_block_decoder *) ds->d[K_BLK], ds->image);
	pt_insn_set_image((struct pt_insn_decoder *) ds->d[K_INSN], ds->image);
	ipt_cov_set_image((struct ipt_cov_decoder *) ds->d[K_COV], ds->image);
	ipt_cov_set_bitmap((struct ipt_cov_decoder *) ds->d[K_COV], ds->map,
			   sizeof(ds->map));
	return 1;
}

static void decoders_free(struct decoders *ds)
{
	pt_pkt_free_decoder((struct pt_packet_decoder *) ds->d[K_PKT]);
	pt_evt_free_decoder((struct pt_event_decoder *) ds->d[K_EVT]);
	pt_qry_free_decoder((struct pt_query_decoder *) ds->d[K_QRY]);
	pt_blk_free_decoder((struct pt_block_decoder *) ds->d[K_BLK]);
	pt_insn_free_decoder((struct pt_insn_decoder *) ds->d[K_INSN]);
	ipt_cov_free_decoder((struct ipt_cov_decoder *) ds->d[K_COV]);
	pt_image_free(ds->image);
}

/* The coverage decoder's edges, bitmap and counts. */
static void decode_cov(struct hv_out *o, struct decoders *ds,
		       struct ipt_cov_decoder *d)
{
	struct ipt_cov_status st, before;
	size_t i;

	/* The counts run on over traces: what this one added. */
	ds->edges = o;
	if (ipt_cov_get_status(d, &before) < 0 || ipt_cov_decode(d) < 0 ||
	    ipt_cov_get_status(d, &st) < 0) {
		hv_out_add(o, 'x', 4, 0);
		return;
	}
	for (i = 0; i < sizeof(ds->map); i += 8) {
		uint64_t w;

		memcpy(&w, ds->map + i, 8);
		hv_out_add(o, 'm', i, w);
	}
	hv_out_add(o, 's', st.errors - before.errors,
		   st.skipped - before.skipped);
}

/* Point decoder @k of @ds at @f's trace (one buffer or a ring's two
 * pieces) and decode. */
static void decode(struct hv_out *o, struct decoders *ds, int k,
		   struct hv_feed *f, struct gmem *m)
{
	int status = -pte_internal;
	unsigned long allocs;

	memset(o, 0, sizeof(*o));
	o->limit = 1u << 22;
	allocs = ds->count->allocs;
	switch (k) {
	case K_PKT:
		status = HV_FEED_SET(pkt, (struct pt_packet_decoder *) ds->d[k], f);
		CHECK(ds->count->allocs == allocs);
		if (status >= 0)
			decode_pkt(o, (struct pt_packet_decoder *) ds->d[k]);
		break;
	case K_EVT:
		status = HV_FEED_SET(evt, (struct pt_event_decoder *) ds->d[k], f);
		CHECK(ds->count->allocs == allocs);
		if (status >= 0)
			decode_evt(o, (struct pt_event_decoder *) ds->d[k]);
		break;
	case K_QRY:
		status = HV_FEED_SET(qry, (struct pt_query_decoder *) ds->d[k], f);
		CHECK(ds->count->allocs == allocs);
		if (status >= 0)
			decode_qry(o, (struct pt_query_decoder *) ds->d[k]);
		break;
	case K_BLK:
		status = HV_FEED_SET(blk, (struct pt_block_decoder *) ds->d[k], f);
		CHECK(ds->count->allocs == allocs);
		if (status >= 0)
			hv_decode_blk(o, (struct pt_block_decoder *) ds->d[k],
				      m);
		break;
	case K_INSN:
		status = HV_FEED_SET(insn, (struct pt_insn_decoder *) ds->d[k], f);
		CHECK(ds->count->allocs == allocs);
		if (status >= 0)
			hv_decode_insn(o, (struct pt_insn_decoder *) ds->d[k],
				       m);
		break;
	case K_COV:
		status = f->older ?
			ipt_cov_set_ring((struct ipt_cov_decoder *) ds->d[k],
					 f->older, f->older_end, f->begin,
					 f->end, 1) :
			ipt_cov_set_trace((struct ipt_cov_decoder *) ds->d[k],
					  f->begin, f->end, 1);
		CHECK(ds->count->allocs == allocs);
		if (status >= 0)
			decode_cov(o, ds, (struct ipt_cov_decoder *) ds->d[k]);
		break;
	}
	if (status < 0)
		hv_out_add(o, 'x', 3, (uint64_t) -status);
}

static void run_case(struct hcase *c)
{
	struct counter count = { 0 };
	struct ipt_allocator a = { count_alloc, count_free, NULL, NULL };
	static const char *const buf_name[3] = { "whole", "half", "ring" };
	struct hv_out fresh[3][K_NUM];
	struct hv_feed f[3];
	struct decoders ds;
	size_t size = (size_t) (c->config.end - c->config.begin);
	uint8_t *ring = (uint8_t *) malloc(size ? size : 1);
	int k, b, round, quiet;

	a.context = &count;
	if (!CHECK(ring != NULL))
		return;
	hv_feed_init(&f[0], &c->config, 0, 0);
	hv_feed_init(&f[1], &c->config, 0, 0);
	f[1].end = f[1].stop = c->config.begin + size / 2;
	hv_feed_ring(&f[2], &c->config, size / 3, ring, 0, 0);

	/* New decoders, one per buffer. */
	for (b = 0; b < 3; ++b) {
		struct pt_config config = c->config;

		config.end = f[b].end;
		if (b == 2)
			config.end = c->config.end;
		if (!CHECK(decoders_make(&ds, &config, &c->mem, NULL, &count)))
			return;
		for (k = 0; k < K_NUM; ++k)
			decode(&fresh[b][k], &ds, k, &f[b], &c->mem);
		decoders_free(&ds);
	}

	if (!CHECK(decoders_make(&ds, &c->config, &c->mem, &a, &count)))
		return;
	/* The caches grow while they are short of room, up to their limits:
	 * after a few rounds, two in a row must allocate nothing. */
	for (round = 0, quiet = 0; round < 12 && quiet < 2; ++round) {
		unsigned long before = count.allocs;

		for (b = 0; b < 3; ++b)
			for (k = 0; k < K_NUM; ++k) {
				struct hv_out o;
				long at;

				decode(&o, &ds, k, &f[b], &c->mem);
				at = hv_out_diff(&fresh[b][k], &o);
				if (!CHECK(at < 0))
					printf("     %s %s, %s, round %d: "
					       "item %ld of %zu\n", c->name,
					       kind_name[k], buf_name[b],
					       round, at, fresh[b][k].n);
				free(o.h);
			}
		quiet = count.allocs == before ? quiet + 1 : 0;
	}
	if (!CHECK(quiet == 2))
		printf("     %s: still allocating after %d rounds\n", c->name,
		       round);
	decoders_free(&ds);
	for (b = 0; b < 3; ++b)
		for (k = 0; k < K_NUM; ++k)
			free(fresh[b][k].h);
	free(ring);
}

int main(int argc, char **argv)
{
	hv_cases(argc, argv, run_case);
	/* Invalid buffers are refused. */
	CHECK(ipt_pkt_set_buffer(NULL, (uint8_t *) argv, (uint8_t *) argv) ==
	      -pte_invalid);
	CHECK(ipt_insn_set_buffer(NULL, (uint8_t *) argv,
				  (uint8_t *) argv) == -pte_invalid);
	return check_done();
}

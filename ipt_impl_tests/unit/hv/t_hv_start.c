/* t_hv_start [CORPUS_DIR|--synth DIR]...: starting where there is no PSB.
 *
 * For every ptxed case, at its packet boundaries X (all of them, or 160
 * spread over a long trace): a decoder decodes the trace cut at X to its
 * end and says the state it stands in there (ipt_*_get_start_state); a
 * decoder started at X in the whole trace with that state
 * (ipt_*_start_at) must give what the decoder of the whole trace gives
 * after what the cut one gave:
 *
 *   instructions: cut ++ started == whole, exactly;
 *   blocks:       the same, the one block the cut may split joined again;
 *   events:       the same, with the state taken from the block decoder;
 *   queries:      what the started query decoder answers ends what the
 *                 whole one answers;
 *   edges:        cut ++ started == whole, the coverage decoder started
 *                 with ipt_cov_start_at and the block decoder's state;
 *                 but for the branch whose destination the cut decode
 *                 had not seen when its trace ended, which neither
 *                 counts (the state does not carry it).
 *
 * The started decoders' first events are the status updates of the start
 * (ptev_enabled or ptev_disabled, then the CR3, VMCS, transaction and
 * mode ones): they are checked and left out.  Boundaries where the cut
 * decoder stands inside a group of packets (-pte_bad_context) or is not
 * synchronized are counted, not checked, and so are those where the
 * decode of the cut trace already went another way than the whole one
 * (an erratum workaround or a packet group that looks past the cut). */
#include "hv_cases.h"

struct rec {
	uint64_t k, a, b, c;
};

struct recs {
	struct rec *r;
	size_t n, cap;
};

static void put(struct recs *o, uint64_t k, uint64_t a, uint64_t b,
		uint64_t c)
{
	if (o->n == o->cap) {
		/* A decode that goes on and on (code that loops without
		 * trace) is cut; the comparison then fails. */
		if (o->cap >= (1u << 22))
			return;
		o->cap = o->cap ? 2 * o->cap : 256;
		o->r = (struct rec *) realloc(o->r, o->cap * sizeof(*o->r));
		if (!o->r)
			abort();
	}
	o->r[o->n].k = k;
	o->r[o->n].a = a;
	o->r[o->n].b = b;
	o->r[o->n].c = c;
	o->n++;
}

static void put_event(struct recs *o, const struct pt_event *ev)
{
	const uint8_t *p = (const uint8_t *) &ev->variant;
	uint64_t h = 0;
	size_t i;

	for (i = 0; i < sizeof(ev->variant); ++i)
		h = h * 131 + p[i];
	put(o, 'e' | ((uint64_t) ev->type << 8) |
		       ((uint64_t) ev->ip_suppressed << 16) |
		       ((uint64_t) ev->status_update << 17) |
		       ((uint64_t) ev->has_tsc << 18),
	    ev->has_tsc ? ev->tsc : 0,
	    ((uint64_t) ev->lost_mtc << 32) | ev->lost_cyc, h);
}

/* The instruction decoder's loop, from @status (-pte_nosync: not yet
 * synchronized); resynchronizes after errors.  With @cut, the trace is
 * cut short: an error where the decoder has used it up (it can say its
 * state) is where it ends. */
static void run_insn(struct recs *o, struct pt_insn_decoder *d, int status,
		     int cut)
{
	struct ipt_start_state s;
	uint64_t at;

	s.size = sizeof(s);
	while (o->n < (1u << 22)) {
		struct pt_insn insn;
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos || (cut && status != -pte_nosync &&
						   ipt_insn_get_start_state(
							   d, &at, &s) >= 0))
				return;
			if (status != -pte_nosync)
				put(o, 'x', (uint64_t) -status, 0, 0);
			status = pt_insn_sync_forward(d);
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status >= 0)
				put_event(o, &ev);
			continue;
		}
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (insn.iclass != ptic_error)
			put(o, 'i' | ((uint64_t) insn.mode << 8) |
				       ((uint64_t) insn.speculative << 16),
			    insn.ip, insn.size, insn.iclass);
	}
}

static void run_blk(struct recs *o, struct pt_block_decoder *d, int status,
		    int cut)
{
	struct ipt_start_state s;
	uint64_t at;

	s.size = sizeof(s);
	while (o->n < (1u << 22)) {
		struct pt_block b;
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos || (cut && status != -pte_nosync &&
						   ipt_blk_get_start_state(
							   d, &at, &s) >= 0))
				return;
			if (status != -pte_nosync)
				put(o, 'x', (uint64_t) -status, 0, 0);
			status = pt_blk_sync_forward(d);
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_blk_event(d, &ev, sizeof(ev));
			if (status >= 0)
				put_event(o, &ev);
			continue;
		}
		status = pt_blk_next(d, &b, sizeof(b));
		if (b.ninsn)
			put(o, 'b' | ((uint64_t) b.mode << 8) |
				       ((uint64_t) b.speculative << 16) |
				       ((uint64_t) b.truncated << 17),
			    b.ip, b.end_ip, b.ninsn);
	}
}

static void run_evt(struct recs *o, struct pt_event_decoder *d, int status)
{
	while (o->n < (1u << 22)) {
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos)
				return;
			if (status != -pte_nosync)
				put(o, 'x', (uint64_t) -status, 0, 0);
			status = pt_evt_sync_forward(d);
			continue;
		}
		status = pt_evt_next(d, &ev, sizeof(ev));
		if (status >= 0)
			put_event(o, &ev);
	}
}

/* Events while pending, else a conditional branch, else an indirect
 * one, as t_hv_buffer asks. */
static void run_qry(struct recs *o, struct pt_query_decoder *d, int status)
{
	uint64_t ip = 0;

	while (o->n < (1u << 22)) {
		struct pt_event ev;
		int taken = 0;

		if (status < 0) {
			if (status == -pte_eos)
				return;
			if (status != -pte_nosync)
				put(o, 'x', (uint64_t) -status, 0, 0);
			status = pt_qry_sync_forward(d, &ip);
			if (status >= 0)
				put(o, 's', ip, 0, 0);
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_qry_event(d, &ev, sizeof(ev));
			if (status >= 0)
				put_event(o, &ev);
			continue;
		}
		status = pt_qry_cond_branch(d, &taken);
		if (status >= 0) {
			put(o, 't', (uint64_t) taken, 0, 0);
			continue;
		}
		status = pt_qry_indirect_branch(d, &ip);
		if (status >= 0)
			put(o, 'j', ip, 0, 0);
	}
}

/* How many status events a start with @s begins with. */
static size_t start_events(const struct ipt_start_state *s)
{
	return 1 + s->has_cr3 + s->has_vmcs + s->speculative +
	       (s->mode != ptem_unknown && !s->mode_stale);
}

/* Leave out the @n status events @o begins with (after what @skip says
 * comes first); 0 if they are not there. */
static int drop_start(struct recs *o, size_t skip, size_t n)
{
	size_t i;

	if (o->n < skip + n)
		return 0;
	for (i = skip; i < skip + n; ++i)
		if ((o->r[i].k & 0xff) != 'e' || !(o->r[i].k & (1u << 17)))
			return 0;
	memmove(o->r + skip, o->r + skip + n,
		(o->n - skip - n) * sizeof(*o->r));
	o->n -= n;
	return 1;
}

static int same(const struct rec *a, const struct rec *b)
{
	return a->k == b->k && a->a == b->a && a->b == b->b && a->c == b->c;
}

/* Take out the last @n instructions the cut decode reported: it
 * walked them ahead of its trace, and a decoder started with its state
 * reports them again (state.repeat).  A block they end is left shorter,
 * ending at an IP the block does not say. */
static void drop_ahead(struct recs *cut, uint32_t n)
{
	size_t i = cut->n;

	while (n && i) {
		struct rec *c = &cut->r[--i];

		if ((c->k & 0xff) == 'i') {
			memmove(c, c + 1, (cut->n - i - 1) * sizeof(*c));
			cut->n--;
			n--;
		} else if ((c->k & 0xff) == 'b') {
			if (c->c <= n) {
				n -= (uint32_t) c->c;
				memmove(c, c + 1,
					(cut->n - i - 1) * sizeof(*c));
				cut->n--;
			} else {
				c->c -= n;
				c->b = UINT64_MAX;
				n = 0;
			}
		}
	}
}

/* Is @whole what @cut gives followed by what @started gives?  With
 * @join, a block at the seam may be split in two. */
static long compare(const struct recs *whole, const struct recs *cut,
		    const struct recs *started, int join)
{
	size_t i, w = 0, s = 0;

	for (i = 0; i < cut->n; ++i, ++w) {
		const struct rec *c = &cut->r[i];

		/* A block drop_last made shorter. */
		if (c->b == UINT64_MAX && (c->k & 0xff) == 'b' &&
		    w < whole->n && c->k == whole->r[w].k &&
		    c->a == whole->r[w].a && c->c == whole->r[w].c)
			continue;

		if (w >= whole->n)
			return (long) w;
		if (same(c, &whole->r[w]))
			continue;
		/* The cut's last block, a head of the whole's block. */
		if (join && i + 1 == cut->n && started->n &&
		    (c->k & 0xff) == 'b' && c->k == whole->r[w].k &&
		    c->a == whole->r[w].a && started->r[0].k == c->k &&
		    started->r[0].b == whole->r[w].b &&
		    c->c + started->r[0].c == whole->r[w].c) {
			s = 1;
			w++;
			break;
		}
		return (long) w;
	}
	for (; s < started->n; ++s, ++w)
		if (w >= whole->n || !same(&started->r[s], &whole->r[w]))
			return (long) w;
	return w == whole->n ? -1 : (long) w;
}

enum { K_INSN, K_BLK, K_EVT, K_QRY, K_COV, K_NUM };
static const char *const kind_name[K_NUM] = { "insn", "blk", "evt", "qry",
					      "cov" };

struct totals {
	unsigned long boundaries, started, inside, nosync, diverged, ahead,
		cov_gap;
};

/* Did the decode of the cut trace go another way than the whole one
 * before its last run of code: an event or error where the whole decode
 * has none?  Erratum workarounds and packet groups look past the cut, so
 * the decoder of the cut trace need not be in the state the decoder of
 * the whole one had there; the start is not checked then. */
static int cut_diverged(const struct recs *whole, const struct recs *cut)
{
	size_t i;

	for (i = 0; i < cut->n && i < whole->n; ++i)
		if (!same(&cut->r[i], &whole->r[i]))
			break;
	for (; i < cut->n; ++i)
		if ((cut->r[i].k & 0xff) == 'e' || (cut->r[i].k & 0xff) == 'x')
			return 1;
	return 0;
}

static struct totals total;
static const struct hcase *cur;
static struct pt_image *image;

/* The coverage decoder's edges. */
static void cov_edge(void *ctx, uint64_t from, uint64_t to,
		     enum ipt_cov_kind kind)
{
	put((struct recs *) ctx, 'c', (uint64_t) kind, from, to);
}

/* Decoder of kind @k on [begin, end); started at @offset with @state if
 * @state, else from its start. */
static void decode(struct recs *o, int k, uint8_t *end, uint64_t offset,
		   const struct ipt_start_state *state,
		   struct ipt_start_state *out, int *out_status)
{
	struct pt_config config = cur->config;
	uint64_t ip = 0, at = 0;
	int status = -pte_nosync;

	config.end = end;
	memset(o, 0, sizeof(*o));
	switch (k) {
	case K_INSN: {
		struct pt_insn_decoder *d = pt_insn_alloc_decoder(&config);

		if (!d)
			abort();
		pt_insn_set_image(d, image);
		if (state)
			status = ipt_insn_start_at(d, offset, state);
		run_insn(o, d, status, out != NULL);
		if (out) {
			*out_status = ipt_insn_get_start_state(d, &at, out);
			if (*out_status >= 0 &&
			    at != (uint64_t) (end - config.begin))
				*out_status = -pte_internal;
		}
		pt_insn_free_decoder(d);
		break;
	}
	case K_BLK: {
		struct pt_block_decoder *d = pt_blk_alloc_decoder(&config);

		if (!d)
			abort();
		pt_blk_set_image(d, image);
		if (state)
			status = ipt_blk_start_at(d, offset, state);
		run_blk(o, d, status, out != NULL);
		if (out) {
			*out_status = ipt_blk_get_start_state(d, &at, out);
			if (*out_status >= 0 &&
			    at != (uint64_t) (end - config.begin))
				*out_status = -pte_internal;
		}
		pt_blk_free_decoder(d);
		break;
	}
	case K_EVT: {
		struct pt_event_decoder *d = pt_evt_alloc_decoder(&config);

		if (!d)
			abort();
		if (state)
			status = ipt_evt_start_at(d, offset, state);
		run_evt(o, d, status);
		pt_evt_free_decoder(d);
		break;
	}
	case K_COV: {
		struct ipt_cov_decoder *d;
		struct ipt_cov_config cc;

		memset(&cc, 0, sizeof(cc));
		cc.edge = cov_edge;
		cc.context = o;
		d = ipt_cov_alloc_decoder(&config, &cc);
		if (!d)
			abort();
		ipt_cov_set_image(d, image);
		ipt_cov_set_trace(d, config.begin, config.end, 0);
		if (state) {
			status = ipt_cov_start_at(d, offset, state);
			if (status < 0)
				put(o, 'x', (uint64_t) -status, 0, 0);
		}
		status = ipt_cov_decode(d);
		if (status < 0)
			put(o, 'x', (uint64_t) -status, 1, 0);
		ipt_cov_free_decoder(d);
		break;
	}
	case K_QRY: {
		struct pt_query_decoder *d = pt_qry_alloc_decoder(&config);

		if (!d)
			abort();
		if (state) {
			status = ipt_qry_start_at(d, &ip, offset, state);
			if (status >= 0)
				put(o, 's', (status & pts_ip_suppressed) ?
						    0 : ip, 0, 0);
		}
		run_qry(o, d, status);
		pt_qry_free_decoder(d);
		break;
	}
	}
}

/* The packet boundaries of the trace, as a packet decoder walks it. */
static size_t boundaries(uint64_t **out)
{
	struct pt_packet_decoder *d = pt_pkt_alloc_decoder(&cur->config);
	uint64_t *v = NULL, offset;
	size_t n = 0, cap = 0;
	int status;

	if (!d)
		abort();
	status = pt_pkt_sync_forward(d);
	while (status != -pte_eos) {
		struct pt_packet p;

		if (status < 0) {
			status = pt_pkt_sync_forward(d);
			continue;
		}
		if (pt_pkt_get_offset(d, &offset) < 0)
			break;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = (uint64_t *) realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n++] = offset;
		status = pt_pkt_next(d, &p, sizeof(p));
	}
	pt_pkt_free_decoder(d);
	*out = v;
	return n;
}

static void free_recs(struct recs *r, int n)
{
	int i;

	for (i = 0; i < n; ++i)
		free(r[i].r);
}

static void run_case(struct hcase *c)
{
	struct recs whole[K_NUM];
	uint64_t *at = NULL;
	size_t n, i, step;
	unsigned long started = 0, fails = 0;
	int k;

	cur = c;
	image = pt_image_alloc(NULL);
	if (!image)
		abort();
	pt_image_set_callback(image, gmem_read, &c->mem);
	for (k = 0; k < K_NUM; ++k)
		decode(&whole[k], k, c->config.end, 0, NULL, NULL, NULL);

	n = boundaries(&at);
	step = n > 160 ? n / 160 : 1;
	for (i = 0; i < n; i += step) {
		struct ipt_start_state state[2];
		struct recs cut[K_NUM], go[K_NUM];
		int st[2] = { 0, 0 };
		uint64_t x = at[i];

		total.boundaries++;
		memset(state, 0, sizeof(state));
		state[0].size = state[1].size = sizeof(state[0]);
		decode(&cut[K_INSN], K_INSN, c->config.begin + x, 0, NULL,
		       &state[0], &st[0]);
		decode(&cut[K_BLK], K_BLK, c->config.begin + x, 0, NULL,
		       &state[1], &st[1]);
		decode(&cut[K_EVT], K_EVT, c->config.begin + x, 0, NULL, NULL,
		       NULL);
		decode(&cut[K_QRY], K_QRY, c->config.begin + x, 0, NULL, NULL,
		       NULL);
		decode(&cut[K_COV], K_COV, c->config.begin + x, 0, NULL, NULL,
		       NULL);
		/* Both decoders stand in the same state, or neither can
		 * say one. */
		if (!CHECK(st[0] == st[1] &&
			   (st[0] < 0 || !memcmp(&state[0], &state[1],
						  sizeof(state[0]))))) {
			printf("     %s at %" PRIx64 ": insn %d, blk %d\n",
			       c->name, x, st[0], st[1]);
			fails++;
		}
		if (st[1] < 0) {
			if (st[1] == -pte_bad_context)
				total.inside++;
			else if (CHECK(st[1] == -pte_nosync))
				total.nosync++;
			else
				printf("     %s at %" PRIx64 ": %s\n", c->name,
				       x, pt_errstr(pt_errcode(st[1])));
			free_recs(cut, K_NUM);
			continue;
		}
		started++;
		total.ahead += state[1].repeat != 0;
		if (cut_diverged(&whole[K_INSN], &cut[K_INSN]) ||
		    cut_diverged(&whole[K_EVT], &cut[K_EVT])) {
			total.diverged++;
			free_recs(cut, K_NUM);
			continue;
		}
		for (k = 0; k < K_NUM; ++k) {
			long diff;
			int ok;

			decode(&go[k], k, c->config.end, x, &state[1], NULL,
			       NULL);
			ok = k == K_COV ||
			     drop_start(&go[k], k == K_QRY,
					start_events(&state[1]));
			if (k == K_COV) {
				/* The branch whose destination the cut
				 * decode did not see (its trace ended
				 * first) counts in neither part. */
				diff = compare(&whole[k], &cut[k], &go[k], 0);
				if (diff >= 0 && cut[k].n < whole[k].n) {
					struct recs gap = cut[k];

					gap.n = cut[k].n + 1;
					gap.r = whole[k].r;
					if ((!cut[k].n ||
					     !memcmp(cut[k].r, whole[k].r,
						     cut[k].n *
							     sizeof(*gap.r))) &&
					    compare(&whole[k], &gap, &go[k],
						    0) < 0) {
						diff = -1;
						total.cov_gap++;
					}
				}
			} else if (k == K_QRY) {
				/* The start IP aside, the answers of the
				 * started decoder end the whole one's. */
				size_t m = go[k].n ? go[k].n - 1 : 0;

				diff = !go[k].n || m > whole[k].n ||
				       memcmp(go[k].r + 1,
					      whole[k].r + whole[k].n - m,
					      m * sizeof(*go[k].r)) ? 0 : -1;
			} else {
				if (k != K_EVT && k != K_COV)
					drop_ahead(&cut[k], state[1].repeat);
				diff = compare(&whole[k], &cut[k], &go[k],
					       k == K_BLK);
			}
			if (!CHECK(ok && diff < 0) && fails++ < 8)
				printf("     %s %s at %" PRIx64 ": start events %d,"
				       " differs at item %ld of %zu (cut %zu,"
				       " started %zu)\n", c->name,
				       kind_name[k], x, ok, diff, whole[k].n,
				       cut[k].n, go[k].n);
		}
		free_recs(cut, K_NUM);
		free_recs(go, K_NUM);
	}
	total.started += started;
	free(at);
	free_recs(whole, K_NUM);
	pt_image_free(image);
}

/* Bad arguments are refused. */
static void check_args(void)
{
	struct ipt_start_state s;
	uint8_t buf[16] = { 0x02, 0x82 };
	struct pt_config config;
	struct pt_insn_decoder *d;
	uint64_t off;

	memset(&s, 0, sizeof(s));
	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + sizeof(buf);
	d = pt_insn_alloc_decoder(&config);
	if (!CHECK(d != NULL))
		return;
	CHECK_EQ(ipt_insn_start_at(d, 0, &s), -pte_invalid);
	s.size = sizeof(s);
	CHECK_EQ(ipt_insn_start_at(NULL, 0, &s), -pte_invalid);
	CHECK_EQ(ipt_insn_start_at(d, 0, NULL), -pte_invalid);
	CHECK_EQ(ipt_insn_start_at(d, sizeof(buf) + 1, &s), -pte_eos);
	s.nret = ipt_start_max_ret + 1;
	CHECK_EQ(ipt_insn_start_at(d, 0, &s), -pte_invalid);
	s.nret = 0;
	CHECK_EQ(ipt_insn_get_start_state(d, &off, &s), -pte_nosync);
	CHECK_EQ(ipt_insn_get_start_state(d, NULL, &s), -pte_invalid);
	pt_insn_free_decoder(d);
}

int main(int argc, char **argv)
{
	hv_cases(argc, argv, run_case);
	check_args();
	printf("     %lu boundaries: %lu started, %lu inside a packet group, "
	       "%lu not synchronized; the cut trace decoded another way %lu "
	       "times; %lu starts repeat instructions reported ahead; "
	       "a branch the cut coverage decode left pending %lu times\n",
	       total.boundaries, total.started, total.inside, total.nosync,
	       total.diverged, total.ahead, total.cov_gap);
	CHECK(total.started > total.boundaries / 4);
	return check_done();
}

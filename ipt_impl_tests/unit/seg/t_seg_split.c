/* t_seg_split - ipt_seg_split, ipt_seg_decode and the stitch, on a loop
 * whose states are known: a pretend decoder that moves one byte (or a
 * few) through the trace per step and outputs where it was.  Its output
 * decoded in pieces and stitched must be the one-piece output:
 *
 *   - with every piece joining the next (kind 1), for any number of
 *     pieces, pieces decoded in any order;
 *   - with a call before a PSB whose return comes after it: the join
 *     across it is kind 2, the later piece finds its return stack empty,
 *     and the piece before the join is decoded once more, its output
 *     taken up where the stitch says;
 *   - with a piece that cannot start: the piece before decodes on;
 *   - in a trace shorter than a dozen steps;
 *   - with memory running out at each allocation in turn (no leak, every
 *     free of the size allocated);
 * and the arguments the declarations call invalid. */

#include "ipt.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

/* ---- a trace: PSBs about every @gap bytes, PADs between ---- */

static uint8_t trace[8192];

static size_t make_trace(struct pt_config *config, size_t psbs, size_t gap,
			 uint64_t *offsets)
{
	struct pt_encoder *enc;
	struct pt_packet pad, psb, psbend;
	uint64_t offset = 0;
	size_t i, k;

	memset(&pad, 0, sizeof(pad));
	pad.type = ppt_pad;
	psb = psbend = pad;
	psb.type = ppt_psb;
	psbend.type = ppt_psbend;
	pt_config_init(config);
	config->begin = trace;
	config->end = trace + sizeof(trace);
	enc = pt_alloc_encoder(config);
	for (i = 0; enc && i < psbs; ++i) {
		pt_enc_get_offset(enc, &offsets[i]);
		pt_enc_next(enc, &psb);
		pt_enc_next(enc, &psbend);
		for (k = 0; k < gap; ++k)
			pt_enc_next(enc, &pad);
	}
	pt_enc_get_offset(enc, &offset);
	pt_free_encoder(enc);
	config->end = trace + offset;
	return (size_t) offset;
}

/* ---- the pretend loop ----
 * At @call it makes a call, at @ret it returns: a loop that made the
 * call outputs the position, one that did not finds its return stack
 * empty and outputs a mark of that.  It cannot start at @bad.  From
 * @jump_at it moves @jump bytes in one step. */

struct fake {
	uint64_t size, call, ret, bad, stride, jump_at, jump;
	uint64_t pos;
	int depth, done;
	int64_t *out;
	size_t n;
};

struct fake_state {
	uint64_t pos;
	int depth, done;
};

static int fake_start(void *arg, uint64_t offset, int first)
{
	struct fake *f = (struct fake *) arg;

	f->n = 0;
	f->depth = 0;
	f->done = 0;
	f->pos = first ? 0 : offset;
	return !first && offset == f->bad ? -pte_nosync : 0;
}

static int fake_step(void *arg, unsigned int n, uint64_t *mark)
{
	struct fake *f = (struct fake *) arg;

	for (; n; --n) {
		int64_t rec = (int64_t) f->pos;
		int empty = 0;

		if (f->done || f->pos >= f->size) {
			f->done = 1;
			return ipt_seg_done;
		}
		if (f->pos == f->call)
			f->depth += 1;
		if (f->pos == f->ret) {
			empty = !f->depth;
			f->depth -= !empty;
			rec = empty ? -1 - rec : rec;
		}
		f->out[f->n++] = rec;
		f->pos += f->pos == f->jump_at ? f->jump : f->stride;
		if (empty) {
			*mark = f->n - 1;
			return ipt_seg_retstack;
		}
	}
	return ipt_seg_go;
}

static int fake_at(void *arg, uint64_t *offset, uint64_t *mark)
{
	struct fake *f = (struct fake *) arg;

	*mark = f->n;
	*offset = f->pos;
	return !f->done;
}

static int fake_save(const void *arg, void *state)
{
	const struct fake *f = (const struct fake *) arg;
	struct fake_state *s = (struct fake_state *) state;

	s->pos = f->pos;
	s->depth = f->depth;
	s->done = f->done;
	return 0;
}

/* A loop that made more calls than the saved one joins it, kind 2. */
static int fake_same(void *arg, const void *state)
{
	const struct fake *f = (const struct fake *) arg;
	const struct fake_state *s = (const struct fake_state *) state;

	if (s->pos != f->pos || s->done != f->done || s->depth > f->depth)
		return 0;
	return s->depth == f->depth ? 1 : 2;
}

static const struct ipt_seg_loop fake_ops = {
	fake_start, fake_step, fake_at, fake_save, fake_same
};

/* A loop over a new trace of @psbs PSBs, without call or bad PSB. */
static void fake_proto(struct fake *proto, struct pt_config *config,
		       size_t psbs, size_t gap, uint64_t *psb)
{
	memset(proto, 0, sizeof(*proto));
	proto->size = make_trace(config, psbs, gap, psb);
	proto->call = proto->ret = proto->bad = proto->jump_at = UINT64_MAX;
	proto->stride = 1;
}

static void fake_init(struct fake *f, const struct fake *proto)
{
	*f = *proto;
	f->out = (int64_t *) malloc((size_t) f->size * sizeof(*f->out));
	if (!f->out)
		abort();
}

/* ---- an allocator that counts, and fails the @fail-th allocation ---- */

struct counting {
	long live, bytes, calls, fail;
	int bad_free;
};

static void *count_alloc(void *context, size_t size)
{
	struct counting *c = (struct counting *) context;
	size_t *p;

	if (++c->calls == c->fail)
		return NULL;
	p = (size_t *) malloc(size + 16);
	if (!p)
		return NULL;
	*p = size;
	c->live += 1;
	c->bytes += (long) size;
	return (char *) p + 16;
}

static void count_free(void *context, void *ptr, size_t size)
{
	struct counting *c = (struct counting *) context;
	size_t *p = (size_t *) (void *) ((char *) ptr - 16);

	c->bad_free |= *p != size;
	c->live -= 1;
	c->bytes -= (long) size;
	free(p);
}

/* ---- decode in pieces, stitch, compare ---- */

/* The whole trace on one loop. */
static size_t one_piece(const struct fake *proto, int64_t *out)
{
	struct fake f;
	uint64_t mark;
	size_t n;

	fake_init(&f, proto);
	fake_start(&f, 0, 1);
	while (fake_step(&f, 1, &mark) != ipt_seg_done)
		;
	memcpy(out, f.out, f.n * sizeof(*out));
	n = f.n;
	free(f.out);
	return n;
}

struct result {
	int ok, rerun, kind2;
	size_t joins, failed, count;
};

/* Decode in at most @max pieces, in reverse order with @reverse, and
 * compare the stitched output with the one-piece one.  NULL memory:
 * the default allocator. */
static struct result split_check(const struct pt_config *config,
				 const struct fake *proto, size_t max,
				 int reverse,
				 const struct ipt_allocator *allocator)
{
	struct result res = { 0, 0, 0, 0, 0, 0 };
	struct ipt_seg_split *split;
	struct ipt_seg_worker *w = NULL;
	struct ipt_seg_stitch st;
	struct ipt_seg_range r;
	struct fake loop, probe, *pieces = NULL;
	int64_t *one, *joined;
	size_t n, none, njoined = 0, i;
	int k;

	one = (int64_t *) malloc((size_t) proto->size * sizeof(*one));
	joined = (int64_t *) malloc((size_t) proto->size * 2 * sizeof(*one));
	if (!one || !joined)
		abort();
	none = one_piece(proto, one);

	split = ipt_seg_split_alloc(config, max, &fake_ops,
				    sizeof(struct fake_state), allocator);
	if (split)
		w = ipt_seg_worker_alloc(split);
	if (!split || !w)
		goto out;
	n = ipt_seg_split_count(split);
	res.count = n;
	pieces = (struct fake *) calloc(n, sizeof(*pieces));
	if (!pieces)
		abort();
	fake_init(&probe, proto);
	for (i = 0; i < n; ++i)
		fake_init(&pieces[i], proto);
	for (i = 0; i < n; ++i) {
		size_t idx = reverse ? n - 1 - i : i;

		loop = pieces[idx];
		if (ipt_seg_decode(w, idx, &loop, &probe) < 0)
			goto out;
		pieces[idx] = loop;
		res.failed += (size_t) ipt_seg_split_piece(split, idx)->failed;
	}

	ipt_seg_stitch_init(&st);
	while ((k = ipt_seg_stitch_next(split, &st, &r)) == 1) {
		const struct ipt_seg_piece *p = ipt_seg_split_piece(split,
								    r.idx);

		if (r.to > pieces[r.idx].n || r.from > r.to)
			goto out;
		memcpy(joined + njoined, pieces[r.idx].out + r.from,
		       (size_t) (r.to - r.from) * sizeof(*joined));
		njoined += (size_t) (r.to - r.from);
		res.joins += p->join != 0;
		res.kind2 |= p->join == 2;
	}
	if (k == 2) {
		struct fake again;

		res.rerun = 1;
		fake_init(&again, proto);
		if (ipt_seg_rerun(split, r.idx, &again) == 0 &&
		    r.from <= again.n) {
			memcpy(joined + njoined, again.out + r.from,
			       (size_t) (again.n - r.from) * sizeof(*joined));
			njoined += (size_t) (again.n - r.from);
		}
		free(again.out);
	} else if (k < 0)
		goto out;
	res.ok = njoined == none && !memcmp(one, joined, none * sizeof(*one));
out:
	if (pieces) {
		for (i = 0; i < ipt_seg_split_count(split); ++i)
			free(pieces[i].out);
		free(probe.out);
	}
	free(pieces);
	ipt_seg_worker_free(w);
	ipt_seg_split_free(split);
	free(one);
	free(joined);
	return res;
}

static void test_joins(void)
{
	struct pt_config config;
	uint64_t psb[8];
	struct fake proto;
	struct result res;
	size_t max;

	/* Every piece joins the next.  Pieces begin at the first PSB at or
	 * after where they should, so that with PSBs this far apart a few
	 * fall together; from ten on, one begins at each PSB. */
	fake_proto(&proto, &config, 8, 700, psb);
	for (max = 1; max <= 12; ++max) {
		res = split_check(&config, &proto, max, 0, NULL);
		CHECK(res.ok && !res.rerun && !res.kind2 && !res.failed);
		CHECK(res.count <= max && res.count + 2 >= (max < 8 ? max : 8));
		CHECK_EQ(res.joins, res.count - 1);
		res = split_check(&config, &proto, max, 1, NULL);
		CHECK(res.ok && !res.rerun);
	}
	CHECK_EQ(res.count, 8);

	/* A piece at each PSB from here on.  A call before the third PSB,
	 * its return after it. */
	proto.call = psb[2] - 5;
	proto.ret = psb[2] + 40;
	res = split_check(&config, &proto, 12, 0, NULL);
	CHECK(res.ok && res.kind2 && res.rerun);
	/* Its return before the join: nothing of the later piece stands. */
	proto.ret = psb[2] + 2;
	res = split_check(&config, &proto, 12, 0, NULL);
	CHECK(res.ok && res.kind2 && res.rerun);
	/* A return that a later piece never sees: the join holds. */
	proto.ret = UINT64_MAX;
	res = split_check(&config, &proto, 12, 0, NULL);
	CHECK(res.ok && res.kind2 && !res.rerun);

	/* The fifth piece cannot start: the fourth decodes on. */
	proto.call = proto.ret = UINT64_MAX;
	proto.bad = psb[4];
	res = split_check(&config, &proto, 12, 0, NULL);
	CHECK(res.ok && !res.rerun && res.failed == 1);
	CHECK_EQ(res.joins, 6);
	/* And with a kind 2 join before it. */
	proto.call = psb[1] - 5;
	res = split_check(&config, &proto, 12, 0, NULL);
	CHECK(res.ok && res.kind2);

	/* A step from before the fourth PSB to far past it, further than
	 * the probe there takes states: the probe steps over what the loop
	 * passed, and the pieces join all the same. */
	proto.call = proto.bad = UINT64_MAX;
	proto.jump_at = psb[3] - 10;
	proto.jump = 600;
	CHECK(psb[3] + 590 < psb[4]);
	res = split_check(&config, &proto, 12, 0, NULL);
	CHECK(res.ok && !res.rerun && !res.failed);
	CHECK_EQ(res.count, 8);
	CHECK_EQ(res.joins, 7);

	/* A short trace, three bytes a step: a loop that took a dozen
	 * steps at once from its start would be done before it looked. */
	fake_proto(&proto, &config, 2, 0, psb);
	proto.stride = 3;
	CHECK_EQ(psb[1] % 3, 0);
	res = split_check(&config, &proto, 8, 0, NULL);
	CHECK(res.ok && !res.rerun);
	CHECK_EQ(res.joins, 1);
}

static void test_memory(void)
{
	struct counting c;
	struct ipt_allocator a;
	struct pt_config config;
	uint64_t psb[4];
	struct fake proto;
	struct result res;
	long fail;

	fake_proto(&proto, &config, 4, 300, psb);
	a.alloc = count_alloc;
	a.free = count_free;
	a.realloc = NULL;
	a.context = &c;
	/* The split, its pieces, the worker, its states: four. */
	for (fail = 1; fail <= 5; ++fail) {
		memset(&c, 0, sizeof(c));
		c.fail = fail;
		res = split_check(&config, &proto, 4, 0, &a);
		CHECK_EQ(res.ok, fail == 5);
		CHECK_EQ(c.calls, fail == 5 ? 4 : fail);
		CHECK(!c.live && !c.bytes && !c.bad_free);
	}
}

static void test_args(void)
{
	struct ipt_seg_loop ops = fake_ops;
	struct ipt_seg_split *split;
	struct ipt_seg_worker *w;
	struct ipt_seg_stitch st;
	struct ipt_seg_range r;
	struct pt_config config;
	uint64_t psb[2];
	struct fake f;

	fake_proto(&f, &config, 2, 10, psb);
	CHECK(!ipt_seg_split_alloc(NULL, 4, &ops, 8, NULL));
	CHECK(!ipt_seg_split_alloc(&config, 0, &ops, 8, NULL));
	CHECK(!ipt_seg_split_alloc(&config, 4, NULL, 8, NULL));
	CHECK(!ipt_seg_split_alloc(&config, 4, &ops, 0, NULL));
	ops.same = NULL;
	CHECK(!ipt_seg_split_alloc(&config, 4, &ops, 8, NULL));
	ops = fake_ops;
	config.end = config.begin - 1;
	CHECK(!ipt_seg_split_alloc(&config, 4, &ops, 8, NULL));
	config.end = config.begin + f.size;
	CHECK(!ipt_seg_worker_alloc(NULL));
	CHECK_EQ(ipt_seg_split_count(NULL), 0);
	CHECK(!ipt_seg_split_piece(NULL, 0));
	ipt_seg_split_free(NULL);
	ipt_seg_worker_free(NULL);
	ipt_seg_stitch_init(NULL);

	split = ipt_seg_split_alloc(&config, 4, &ops, sizeof(struct fake_state),
				    NULL);
	w = ipt_seg_worker_alloc(split);
	CHECK(split && w);
	if (!split || !w)
		return;
	CHECK_EQ(ipt_seg_split_count(split), 2);
	CHECK_EQ(ipt_seg_split_piece(split, 1)->begin, psb[1]);
	CHECK(!ipt_seg_split_piece(split, 2));
	fake_init(&f, &f);
	CHECK_EQ(ipt_seg_decode(NULL, 0, &f, &f), -pte_invalid);
	CHECK_EQ(ipt_seg_decode(w, 0, NULL, &f), -pte_invalid);
	CHECK_EQ(ipt_seg_decode(w, 0, &f, NULL), -pte_invalid);
	CHECK_EQ(ipt_seg_decode(w, 2, &f, &f), -pte_invalid);
	CHECK_EQ(ipt_seg_rerun(NULL, 0, &f), -pte_invalid);
	CHECK_EQ(ipt_seg_rerun(split, 0, NULL), -pte_invalid);
	CHECK_EQ(ipt_seg_rerun(split, 2, &f), -pte_invalid);
	ipt_seg_stitch_init(&st);
	CHECK_EQ(ipt_seg_stitch_next(NULL, &st, &r), -pte_invalid);
	CHECK_EQ(ipt_seg_stitch_next(split, NULL, &r), -pte_invalid);
	CHECK_EQ(ipt_seg_stitch_next(split, &st, NULL), -pte_invalid);
	free(f.out);
	ipt_seg_worker_free(w);
	ipt_seg_split_free(split);
}

int main(void)
{
	test_joins();
	test_memory();
	test_args();
	return check_done();
}

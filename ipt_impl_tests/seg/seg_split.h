/* seg_split.h - decode a trace in one piece and in pieces, and compare.
 *
 * ss_check() decodes a trace with an instruction or a block decoder the
 * way a simple tool does (sync forward, drain events, decode, on an error
 * sync forward again) and logs every result: each instruction or block,
 * each event, each error with the trace offset it came at.  Then it
 * decodes the same trace split at its PSBs (ipt_seg_index), a decoder per
 * piece, each piece joined to a later one where the two decoders' states
 * agree (ipt_insn_converged, ipt_blk_converged: the stitching rule in
 * ipt.h's >>api-seg), and stitches the pieces' logs.  The two logs must
 * be equal, or, where a step budget cut either short, one a prefix of the
 * other.
 *
 * The pieces are decoded one after the other here, or, built with
 * -DSS_THREADS, on threads (ss_split_threads); examples/ptxed --threads
 * does the same.  A log made with count set keeps no records, only their
 * number (for benchmarks).  Used by seg_split.c, the block and
 * instruction fuzz harnesses and bench/threads_api.c.  Built with
 * -DSS_DEBUG, it tells on stderr how the pieces joined and where the
 * logs differ. */
#ifndef SEG_SPLIT_H
#define SEG_SPLIT_H

#include "../../ipt.h"

#include <stdlib.h>
#include <string.h>
#ifdef SS_THREADS
#include <pthread.h>
#endif
#ifdef SS_DEBUG
#include <stdio.h>
#endif

#if defined(__GNUC__)
#define SS static __attribute__((unused))
#else
#define SS static
#endif

enum {
	/* The states of a probe; the pieces at most. */
	ss_probe_max = 256,
	ss_pieces_max = 64
};

/* What a decode needs besides the trace: the code, through a callback
 * that must answer the same for every decoder. */
struct ss_code {
	read_memory_callback_t *read;
	void *context;
};

/* One logged result.  Zeroed before it is filled, so it compares as
 * bytes. */
struct ss_rec {
	int kind;
	int status;
	uint64_t offset;
	union {
		struct pt_insn insn;
		struct pt_block block;
		struct pt_event event;
	} u;
};

enum { ss_rec_sync_error = 1, ss_rec_error, ss_rec_event, ss_rec_item };

struct ss_log {
	struct ss_rec *rec;
	size_t n, cap;
	/* Count the records, keep none (rec holds the last one). */
	int count;
};

enum { ss_sync, ss_run, ss_done };

/* A decoder and where its loop is. */
struct ss_dec {
	int insn;
	struct pt_insn_decoder *id;
	struct pt_block_decoder *bd;
	struct pt_image *image;
	int phase;
	int status;
	uint64_t sync;
	/* The budget: steps, instructions in blocks, and steps without
	 * getting further in the trace (code that loops without trace goes
	 * on for ever).  @cut: it ran out. */
	size_t steps;
	uint64_t insns, max_insns;
	uint64_t last;
	unsigned int idle, max_idle;
	int cut;
};

SS struct ss_rec *ss_add(struct ss_log *log, int kind, int status)
{
	struct ss_rec *rec;

	if (log->count) {
		if (!log->rec) {
			log->rec = (struct ss_rec *) malloc(sizeof(*rec));
			if (!log->rec)
				abort();
		}
		log->n += 1;
		log->rec->offset = 0;
		log->rec->kind = kind;
		log->rec->status = status;
		return log->rec;
	}
	if (log->n == log->cap) {
		size_t cap = log->cap ? log->cap * 2 : 256;
		struct ss_rec *p;

		p = (struct ss_rec *) realloc(log->rec, cap * sizeof(*p));
		if (!p)
			abort();
		log->rec = p;
		log->cap = cap;
	}
	rec = &log->rec[log->n++];
	memset(rec, 0, sizeof(*rec));
	rec->kind = kind;
	rec->status = status;
	return rec;
}

/* The last record of a log that has one. */
SS struct ss_rec *ss_last(struct ss_log *log)
{
	return log->count ? log->rec : &log->rec[log->n - 1];
}

/* A budget for each decoder: @steps steps; with @idle, at most @idle
 * steps in a row without getting further in the trace, and 8
 * instructions in blocks per step. */
struct ss_budget {
	size_t steps;
	unsigned int idle;
};

SS int ss_open(struct ss_dec *d, int insn, const struct pt_config *config,
	       const struct ss_code *code, const struct ss_budget *budget)
{
	memset(d, 0, sizeof(*d));
	d->insn = insn;
	d->steps = budget->steps;
	d->max_idle = budget->idle;
	d->max_insns = budget->idle ? (uint64_t) budget->steps * 8
				    : UINT64_MAX;
	d->last = UINT64_MAX;
	d->image = pt_image_alloc(NULL);
	if (!d->image ||
	    pt_image_set_callback(d->image, code->read, code->context) < 0)
		return -pte_nomem;
	if (insn) {
		d->id = pt_insn_alloc_decoder(config);
		if (!d->id || pt_insn_set_image(d->id, d->image) < 0)
			return -pte_nomem;
	} else {
		d->bd = pt_blk_alloc_decoder(config);
		if (!d->bd || pt_blk_set_image(d->bd, d->image) < 0)
			return -pte_nomem;
	}
	return 0;
}

SS void ss_close(struct ss_dec *d)
{
	pt_insn_free_decoder(d->id);
	pt_blk_free_decoder(d->bd);
	pt_image_free(d->image);
}

SS uint64_t ss_offset(const struct ss_dec *d)
{
	uint64_t offset = UINT64_MAX;

	if (d->insn)
		(void) pt_insn_get_offset(d->id, &offset);
	else
		(void) pt_blk_get_offset(d->bd, &offset);
	return offset;
}

SS void ss_start_at(struct ss_dec *d, uint64_t offset)
{
	d->sync = 0;
	d->insns = 0;
	d->idle = 0;
	d->last = UINT64_MAX;
	d->cut = 0;
	d->status = d->insn ? pt_insn_sync_set(d->id, offset)
			    : pt_blk_sync_set(d->bd, offset);
	d->phase = d->status < 0 ? ss_done : ss_run;
}

/* One step: one call into the decoder, logged. */
SS void ss_step(struct ss_dec *d, struct ss_log *log)
{
	struct ss_rec *rec;
	int status;

	if (d->phase == ss_done)
		return;
	if (!d->steps || d->insns > d->max_insns ||
	    (d->max_idle && d->idle > d->max_idle)) {
		d->cut = 1;
		d->phase = ss_done;
		return;
	}
	d->steps -= 1;

	if (d->phase == ss_sync) {
		uint64_t at;

		status = d->insn ? pt_insn_sync_forward(d->id)
				 : pt_blk_sync_forward(d->bd);
		if (status >= 0) {
			d->status = status;
			d->phase = ss_run;
			return;
		}
		at = ss_offset(d);
		if (status == -pte_eos || at <= d->sync ||
		    at == UINT64_MAX) {
			d->phase = ss_done;
			return;
		}
		ss_add(log, ss_rec_sync_error, status)->offset = at;
		d->sync = at;
		return;
	}

	status = d->status;
	if (status < 0) {
		if (status != -pte_eos)
			ss_add(log, ss_rec_error, status)->offset =
				ss_offset(d);
		d->phase = status == -pte_eos ? ss_done : ss_sync;
		return;
	}
	if (status & pts_event_pending) {
		rec = ss_add(log, ss_rec_event, 0);
		rec->offset = ss_offset(d);
		d->status = d->insn ? pt_insn_event(d->id, &rec->u.event,
						    sizeof(rec->u.event))
				    : pt_blk_event(d->bd, &rec->u.event,
						   sizeof(rec->u.event));
		rec->status = d->status;
		return;
	}
	if (status & pts_eos) {
		d->phase = ss_done;
		return;
	}
	rec = ss_add(log, ss_rec_item, 0);
	/* A log that counts keeps no offsets; only an idle budget needs
	 * them then. */
	if (!log->count || d->max_idle) {
		rec->offset = ss_offset(d);
		if (rec->offset != d->last) {
			d->last = rec->offset;
			d->idle = 0;
		} else
			d->idle += 1;
	}
	d->status = d->insn ? pt_insn_next(d->id, &rec->u.insn,
					   sizeof(rec->u.insn))
			    : pt_blk_next(d->bd, &rec->u.block,
					  sizeof(rec->u.block));
	rec->status = d->status;
	if (!d->insn)
		d->insns += rec->u.block.ninsn;
}

/* A state of a probe, and the log length before it. */
struct ss_snap {
	void *state;
	int status;
	uint64_t offset;
	size_t log;
};

struct ss_piece {
	uint64_t begin;
	struct ss_log log;
	int failed;
	/* Its decoder ran out of steps. */
	int cut;
	/* The join: kind as ipt_*_converged, the piece, its log length. */
	int kind;
	size_t to;
	size_t at;
	/* Log indices of -pte_retstack_empty errors. */
	size_t rserr[16];
	size_t nrserr;
};

/* What decodes pieces: a decoder, kept from piece to piece as a thread
 * of examples/ptxed keeps its decoder, and a probe with its states. */
struct ss_worker {
	struct ss_dec d;
	int open;
	struct ss_dec probe;
	struct ss_snap snaps[ss_probe_max];
};

struct ss_split {
	int insn;
	const struct pt_config *config;
	const struct ss_code *code;
	struct ss_budget budget;
	/* Log records only by their number. */
	int count;
	/* Ask where the decoder is, to look for the next piece, every
	 * @look_every steps (as examples/ptxed does) until it is past that
	 * piece's PSB; zero: at every step. */
	unsigned int look_every;
	/* With @spread, up to that many pieces at PSBs about evenly spread
	 * over the trace, as examples/ptxed plans them; else a piece per
	 * PSB, up to ss_pieces_max. */
	size_t spread;
	struct ss_piece *pieces;
	size_t npieces;
	/* How many joins were made and held. */
	size_t joins;
	/* A decoder whose log was used ran out of steps. */
	int cut;
};

SS int ss_converged(const struct ss_dec *d, const void *state)
{
	return d->insn ? ipt_insn_converged(d->id, state)
		       : ipt_blk_converged(d->bd, state);
}

SS size_t ss_probe(struct ss_split *s, struct ss_worker *w, uint64_t begin)
{
	struct ss_log log = { NULL, 0, 0, 1 };
	struct ss_dec *p = &w->probe;
	size_t n, size;

	size = s->insn ? ipt_insn_state_size() : ipt_blk_state_size();
	p->steps = s->budget.steps;
	ss_start_at(p, begin);
	for (n = 0; p->phase != ss_done && n < ss_probe_max;) {
		if (p->phase == ss_run && p->status >= 0) {
			struct ss_snap *snap = &w->snaps[n];
			int err;

			err = s->insn ? ipt_insn_save(p->id, snap->state, size)
				      : ipt_blk_save(p->bd, snap->state, size);
			if (err < 0)
				abort();
			snap->status = p->status;
			snap->offset = ss_offset(p);
			snap->log = log.n;
			n += 1;
		}
		ss_step(p, &log);
	}
	free(log.rec);
	return n;
}

SS int ss_try_join(struct ss_worker *w, struct ss_piece *piece,
		   uint64_t offset, size_t nsnaps, size_t to)
{
	size_t j;

	for (j = 0; j < nsnaps; ++j) {
		const struct ss_snap *snap = &w->snaps[j];
		int kind;

		if (snap->offset != offset || snap->status != w->d.status)
			continue;
		kind = ss_converged(&w->d, snap->state);
		if (kind <= 0)
			continue;
		piece->kind = kind;
		piece->to = to;
		piece->at = snap->log;
		return 1;
	}
	return 0;
}

SS int ss_worker_init(struct ss_split *s, struct ss_worker *w)
{
	size_t size, i;

	memset(w, 0, sizeof(*w));
	size = s->insn ? ipt_insn_state_size() : ipt_blk_state_size();
	for (i = 0; i < ss_probe_max; ++i) {
		w->snaps[i].state = malloc(size);
		if (!w->snaps[i].state)
			return -pte_nomem;
	}
	return ss_open(&w->probe, s->insn, s->config, s->code, &s->budget);
}

SS void ss_worker_fini(struct ss_worker *w)
{
	size_t i;

	if (w->open)
		ss_close(&w->d);
	ss_close(&w->probe);
	for (i = 0; i < ss_probe_max; ++i)
		free(w->snaps[i].state);
}

SS void ss_decode_piece(struct ss_split *s, struct ss_worker *w, size_t idx)
{
	struct ss_piece *piece = &s->pieces[idx];
	struct ss_dec *d = &w->d;
	size_t next = idx + 1, probed = 0, nsnaps = 0;
	unsigned int look = 0;

	piece->log.count = s->count;
	/* The first piece starts from a decoder that has seen nothing. */
	if (w->open && idx == 0) {
		ss_close(d);
		w->open = 0;
	}
	if (!w->open) {
		if (ss_open(d, s->insn, s->config, s->code, &s->budget) < 0)
			abort();
		w->open = 1;
	}
	d->steps = s->budget.steps;
	if (idx == 0) {
		d->phase = ss_sync;
		d->cut = 0;
	} else {
		ss_start_at(d, piece->begin);
		piece->failed = d->phase == ss_done;
	}

	while (d->phase != ss_done) {
		size_t before;

		if (look)
			look -= 1;
		else if (next < s->npieces && d->phase == ss_run &&
			 d->status >= 0) {
			uint64_t offset = ss_offset(d);

			look = s->look_every;
			while (next + 1 < s->npieces &&
			       s->pieces[next + 1].begin <= offset)
				next += 1;
			if (offset != UINT64_MAX &&
			    s->pieces[next].begin <= offset) {
				look = 0;
				if (probed != next) {
					nsnaps = ss_probe(
						s, w, s->pieces[next].begin);
					probed = next;
				}
				if (ss_try_join(w, piece, offset, nsnaps, next))
					break;
				if (!nsnaps ||
				    w->snaps[nsnaps - 1].offset < offset)
					next += 1;
			}
		}

		before = piece->log.n;
		ss_step(d, &piece->log);
		if (piece->log.n > before &&
		    ss_last(&piece->log)->kind == ss_rec_item &&
		    ss_last(&piece->log)->status == -pte_retstack_empty) {
			if (piece->nrserr < 16)
				piece->rserr[piece->nrserr] =
					piece->log.n - 1;
			piece->nrserr += 1;
		}
	}
	piece->cut = d->cut;
}

SS void ss_append(struct ss_log *dst, const struct ss_log *src,
		  size_t from, size_t to)
{
	if (dst->count) {
		dst->n += to - from;
		return;
	}
	while (from < to)
		*ss_add(dst, 0, 0) = src->rec[from++];
}

SS int ss_join_ok(const struct ss_split *s, const struct ss_piece *piece)
{
	const struct ss_piece *to = &s->pieces[piece->to];

	return piece->kind && !to->failed && piece->at <= to->log.n;
}

/* Where, at or after @from, did @piece first find its return stack empty?
 * Its log length if it did not. */
SS size_t ss_rserr_from(const struct ss_piece *piece, size_t from)
{
	size_t i;

	for (i = 0; i < piece->nrserr && i < 16; ++i)
		if (piece->rserr[i] >= from)
			return piece->rserr[i];
	return piece->nrserr > 16 ? from : piece->log.n;
}

/* Decode piece @idx once more, on to the end, logging after its first
 * @skip records. */
SS void ss_rerun(struct ss_split *s, size_t idx, size_t skip,
		 struct ss_log *out)
{
	struct ss_log log = { NULL, 0, 0, 0 };
	struct ss_dec d;

	log.count = s->count;
	if (ss_open(&d, s->insn, s->config, s->code, &s->budget) < 0)
		abort();
	if (idx == 0)
		d.phase = ss_sync;
	else
		ss_start_at(&d, s->pieces[idx].begin);
	while (d.phase != ss_done)
		ss_step(&d, &log);
	s->cut |= d.cut;
	if (skip < log.n)
		ss_append(out, &log, skip, log.n);
	free(log.rec);
	ss_close(&d);
}

/* Index the trace and plan the pieces. */
SS void ss_split_begin(struct ss_split *s)
{
	struct ipt_segment *segs;
	uint64_t size, step;
	size_t max;
	int64_t n, i;

	n = ipt_seg_index(s->config, NULL, 0);
	segs = (struct ipt_segment *) calloc((size_t) (n > 0 ? n : 1),
					     sizeof(*segs));
	if (!segs)
		abort();
	if (n > 0)
		n = ipt_seg_index(s->config, segs, (size_t) n);
	max = s->spread ? s->spread : ss_pieces_max;
	s->pieces = (struct ss_piece *) calloc(max, sizeof(*s->pieces));
	if (!s->pieces)
		abort();
	size = (uint64_t) (s->config->end - s->config->begin);
	step = s->spread ? size / s->spread : 0;
	/* The first piece finds its PSB as the one-piece decode does. */
	s->npieces = 1;
	for (i = 1; i < n && s->npieces < max; ++i)
		if (segs[i].offset >= step * s->npieces)
			s->pieces[s->npieces++].begin = segs[i].offset;
	free(segs);
}

/* Stitch the pieces' logs into @out, as examples/ptxed's ptxed_stitch
 * prints the pieces: from the first join whose return stacks differ on,
 * the logs stand up to the first record where a decoder found its return
 * stack empty, or up to a join to a piece that could not start; the piece
 * before that first join is decoded once more for the rest. */
SS void ss_split_stitch(struct ss_split *s, struct ss_log *out)
{
	const size_t none = s->npieces;
	size_t idx = 0, at = 0, end, again = none, base = 0;
	int rerun = 0;

	for (;;) {
		struct ss_piece *piece = &s->pieces[idx];
		size_t before = out->n;

		end = piece->log.n;
		if (again != none) {
			end = ss_rserr_from(piece, at);
			rerun = end < piece->log.n;
		}
#ifdef SS_DEBUG
		fprintf(stderr, "piece %zu begin %lx: %zu recs, kind %d to "
			"%zu at %zu, from %zu to %zu\n", idx,
			(unsigned long) piece->begin, piece->log.n,
			piece->kind, piece->to, piece->at, at, end);
#endif
		if (end > at)
			ss_append(out, &piece->log, at, end);
		s->cut |= piece->cut;
		if (rerun)
			break;
		if (again == none &&
		    (piece->kind == 2 ||
		     (piece->kind && !ss_join_ok(s, piece)))) {
			again = idx;
			base = before - at;
		}
		if (!ss_join_ok(s, piece)) {
			rerun = piece->kind != 0;
			break;
		}
		s->joins += 1;
		at = piece->at;
		idx = piece->to;
	}
	if (rerun)
		ss_rerun(s, again, out->n - base, out);
}

SS void ss_split_end(struct ss_split *s)
{
	size_t idx;

	for (idx = 0; idx < s->npieces; ++idx)
		free(s->pieces[idx].log.rec);
	free(s->pieces);
}

/* Decode in pieces, one after the other, and stitch the logs into
 * @out. */
SS void ss_split_decode(struct ss_split *s, struct ss_log *out)
{
	struct ss_worker w;
	size_t idx;

	ss_split_begin(s);
	if (ss_worker_init(s, &w) < 0)
		abort();
	for (idx = 0; idx < s->npieces; ++idx)
		ss_decode_piece(s, &w, idx);
	ss_worker_fini(&w);
	ss_split_stitch(s, out);
	ss_split_end(s);
}

#ifdef SS_THREADS
struct ss_pool {
	struct ss_split *s;
	pthread_mutex_t lock;
	size_t next;
};

struct ss_thread {
	struct ss_pool *pool;
	struct ss_worker w;
	pthread_t thread;
};

static void *ss_thread_main(void *arg)
{
	struct ss_thread *t = (struct ss_thread *) arg;
	struct ss_pool *pool = t->pool;

	for (;;) {
		size_t idx;

		pthread_mutex_lock(&pool->lock);
		idx = pool->next++;
		pthread_mutex_unlock(&pool->lock);
		if (idx >= pool->s->npieces)
			break;
		ss_decode_piece(pool->s, &t->w, idx);
	}
	return NULL;
}

/* ss_split_decode with @threads threads taking the pieces in order. */
SS void ss_split_threads(struct ss_split *s, struct ss_log *out,
			 unsigned int threads)
{
	struct ss_thread *t;
	struct ss_pool pool;
	unsigned int i;

	ss_split_begin(s);
	pool.s = s;
	pool.next = 0;
	pthread_mutex_init(&pool.lock, NULL);
	t = (struct ss_thread *) calloc(threads, sizeof(*t));
	if (!t)
		abort();
	for (i = 0; i < threads; ++i) {
		t[i].pool = &pool;
		if (ss_worker_init(s, &t[i].w) < 0 ||
		    pthread_create(&t[i].thread, NULL, ss_thread_main, &t[i]))
			abort();
	}
	for (i = 0; i < threads; ++i) {
		pthread_join(t[i].thread, NULL);
		ss_worker_fini(&t[i].w);
	}
	free(t);
	pthread_mutex_destroy(&pool.lock);
	ss_split_stitch(s, out);
	ss_split_end(s);
}
#endif

/* Decode @config's trace in one piece and in pieces with an instruction
 * (@insn) or block decoder, each decoder within @budget.  Returns 1
 * if the two logs agree, 0 if not; *@joins (if not NULL) gets the number
 * of joins the split decode made. */
SS int ss_check(const struct pt_config *config, const struct ss_code *code,
		int insn, const struct ss_budget *budget, size_t *joins)
{
	struct ss_log one = { NULL, 0, 0, 0 }, split = { NULL, 0, 0, 0 };
	struct ss_split s;
	struct ss_dec d;
	size_t n;
	int same;

	if (ss_open(&d, insn, config, code, budget) < 0)
		abort();
	d.phase = ss_sync;
	while (d.phase != ss_done)
		ss_step(&d, &one);
	ss_close(&d);

	memset(&s, 0, sizeof(s));
	s.insn = insn;
	s.config = config;
	s.code = code;
	s.budget = *budget;
	ss_split_decode(&s, &split);

	/* A budget cuts a log short: then compare what both have. */
	n = one.n < split.n ? one.n : split.n;
	same = (!n || !memcmp(one.rec, split.rec, n * sizeof(*one.rec))) &&
	       (one.n == split.n || d.cut || s.cut);
#ifdef SS_DEBUG
	{
		size_t k;

		for (k = 0; k < n; ++k)
			if (memcmp(&one.rec[k], &split.rec[k],
				   sizeof(one.rec[k])))
				break;
		fprintf(stderr, "one %zu recs, split %zu, joins %zu, "
			"first difference at %zu\n", one.n, split.n, s.joins,
			k);
		for (k = k > 3 ? k - 3 : 0, n = (k + 10 < n ? k + 10 : n); k < n; ++k)
			fprintf(stderr, "%zu: %d/%d %d/%d off %lx/%lx "
				"ip %lx/%lx ev %d/%d\n", k,
				one.rec[k].kind, split.rec[k].kind,
				one.rec[k].status, split.rec[k].status,
				(unsigned long) one.rec[k].offset,
				(unsigned long) split.rec[k].offset,
				(unsigned long) one.rec[k].u.block.ip,
				(unsigned long) split.rec[k].u.block.ip,
				one.rec[k].u.event.type,
				split.rec[k].u.event.type);
	}
#endif
	if (joins)
		*joins = s.joins;
	free(one.rec);
	free(split.rec);
	return same;
}

#endif /* SEG_SPLIT_H */

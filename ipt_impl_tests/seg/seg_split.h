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
 * The pieces are decoded one after the other here; examples/ptxed
 * --threads does the same on threads.  Used by seg_split.c and by the
 * block and instruction fuzz harnesses.  Built with -DSS_DEBUG, it tells
 * on stderr how the pieces joined and where the logs differ. */
#ifndef SEG_SPLIT_H
#define SEG_SPLIT_H

#include "../../ipt.h"

#include <stdlib.h>
#include <string.h>
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
	ss_probe_max = 64,
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
	rec->offset = ss_offset(d);
	if (rec->offset != d->last) {
		d->last = rec->offset;
		d->idle = 0;
	} else
		d->idle += 1;
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
	struct ss_dec d;
	struct ss_log log;
	int failed;
	/* The join: kind as ipt_*_converged, the piece, its log length. */
	int kind;
	size_t to;
	size_t at;
	/* Log indices of -pte_retstack_empty errors. */
	size_t rserr[16];
	size_t nrserr;
};

struct ss_split {
	int insn;
	const struct pt_config *config;
	const struct ss_code *code;
	struct ss_budget budget;
	struct ss_piece *pieces;
	size_t npieces;
	struct ss_dec probe;
	struct ss_snap snaps[ss_probe_max];
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

SS size_t ss_probe(struct ss_split *s, uint64_t begin)
{
	struct ss_log log = { NULL, 0, 0 };
	struct ss_dec *p = &s->probe;
	size_t n, size;

	size = s->insn ? ipt_insn_state_size() : ipt_blk_state_size();
	p->steps = s->budget.steps;
	ss_start_at(p, begin);
	for (n = 0; p->phase != ss_done && n < ss_probe_max;) {
		if (p->phase == ss_run && p->status >= 0) {
			struct ss_snap *snap = &s->snaps[n];
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

SS int ss_try_join(struct ss_split *s, struct ss_piece *piece,
		   uint64_t offset, size_t nsnaps, size_t to)
{
	size_t j;

	for (j = 0; j < nsnaps; ++j) {
		const struct ss_snap *snap = &s->snaps[j];
		int kind;

		if (snap->offset != offset || snap->status != piece->d.status)
			continue;
		kind = ss_converged(&piece->d, snap->state);
		if (kind <= 0)
			continue;
		piece->kind = kind;
		piece->to = to;
		piece->at = snap->log;
		return 1;
	}
	return 0;
}

SS void ss_decode_piece(struct ss_split *s, size_t idx)
{
	struct ss_piece *piece = &s->pieces[idx];
	size_t next = idx + 1, probed = 0, nsnaps = 0;

	if (ss_open(&piece->d, s->insn, s->config, s->code, &s->budget) < 0)
		abort();
	if (idx == 0)
		piece->d.phase = ss_sync;
	else {
		ss_start_at(&piece->d, piece->begin);
		piece->failed = piece->d.phase == ss_done;
	}

	while (piece->d.phase != ss_done) {
		if (next < s->npieces && piece->d.phase == ss_run &&
		    piece->d.status >= 0) {
			uint64_t offset = ss_offset(&piece->d);

			while (next + 1 < s->npieces &&
			       s->pieces[next + 1].begin <= offset)
				next += 1;
			if (offset != UINT64_MAX &&
			    s->pieces[next].begin <= offset) {
				if (probed != next) {
					nsnaps = ss_probe(
						s, s->pieces[next].begin);
					probed = next;
				}
				if (ss_try_join(s, piece, offset, nsnaps, next))
					break;
				if (!nsnaps ||
				    s->snaps[nsnaps - 1].offset < offset)
					next += 1;
			}
		}

		ss_step(&piece->d, &piece->log);
		if (piece->log.n &&
		    piece->log.rec[piece->log.n - 1].kind == ss_rec_item &&
		    piece->log.rec[piece->log.n - 1].status ==
			    -pte_retstack_empty) {
			if (piece->nrserr < 16)
				piece->rserr[piece->nrserr] =
					piece->log.n - 1;
			piece->nrserr += 1;
		}
	}
}

SS void ss_append(struct ss_log *dst, const struct ss_rec *rec, size_t n)
{
	while (n--)
		*ss_add(dst, 0, 0) = *rec++;
}

SS int ss_join_ok(const struct ss_split *s, const struct ss_piece *piece)
{
	const struct ss_piece *to = &s->pieces[piece->to];

	return piece->kind && !to->failed && piece->at <= to->log.n;
}

SS int ss_rserr_after(const struct ss_piece *piece, size_t from)
{
	size_t i;

	if (piece->nrserr > 16)
		return 1;
	for (i = 0; i < piece->nrserr; ++i)
		if (piece->rserr[i] >= from)
			return 1;
	return 0;
}

/* Decode piece @idx once more, on to the end, logging after its first
 * @skip records. */
SS void ss_rerun(struct ss_split *s, size_t idx, size_t skip,
		 struct ss_log *out)
{
	struct ss_log log = { NULL, 0, 0 };
	struct ss_dec d;

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
		ss_append(out, log.rec + skip, log.n - skip);
	free(log.rec);
	ss_close(&d);
}


/* Decode in pieces and stitch the logs into @out. */
SS void ss_split_decode(struct ss_split *s, struct ss_log *out)
{
	struct ipt_segment segs[ss_pieces_max];
	size_t idx, size;
	int64_t n, i;

	n = ipt_seg_index(s->config, segs, ss_pieces_max);
	if (n > ss_pieces_max)
		n = ss_pieces_max;
	s->pieces = (struct ss_piece *) calloc((size_t) (n > 0 ? n : 1),
					       sizeof(*s->pieces));
	if (!s->pieces)
		abort();
	/* The first piece finds its PSB as the one-piece decode does. */
	s->npieces = 1;
	for (i = 1; i < n; ++i)
		s->pieces[s->npieces++].begin = segs[i].offset;

	size = s->insn ? ipt_insn_state_size() : ipt_blk_state_size();
	for (i = 0; i < ss_probe_max; ++i) {
		s->snaps[i].state = malloc(size);
		if (!s->snaps[i].state)
			abort();
	}
	if (ss_open(&s->probe, s->insn, s->config, s->code, &s->budget) < 0)
		abort();

	for (idx = 0; idx < s->npieces; ++idx)
		ss_decode_piece(s, idx);

	/* As examples/ptxed's ptxed_stitch: from the first join whose
	 * return stacks differ on, no decoder whose log is used may find its
	 * stack empty, or the piece before that join decodes on. */
	{
		const size_t none = s->npieces;
		size_t *chain, *start, n = 0, first2 = none, c;
		int rerun = 0;

		chain = (size_t *) calloc(s->npieces, sizeof(*chain));
		start = (size_t *) calloc(s->npieces, sizeof(*start));
		if (!chain || !start)
			abort();
		for (idx = 0;;) {
			struct ss_piece *piece = &s->pieces[idx];
			size_t at = n ? s->pieces[chain[n - 1]].at : 0;

			if (first2 != none && ss_rserr_after(piece, at)) {
				rerun = 1;
				break;
			}
			chain[n] = idx;
			start[n] = at;
			n += 1;
			if (!ss_join_ok(s, piece)) {
				rerun = piece->kind != 0;
				break;
			}
			if (piece->kind == 2 && first2 == none)
				first2 = n - 1;
			idx = piece->to;
		}
		if (rerun && first2 != none)
			n = first2 + 1;
		for (c = 0; c < n; ++c) {
			struct ss_piece *piece = &s->pieces[chain[c]];

#ifdef SS_DEBUG
			fprintf(stderr, "piece %zu begin %lx: %zu recs, kind "
				"%d to %zu at %zu, from %zu\n", chain[c],
				(unsigned long) piece->begin, piece->log.n,
				piece->kind, piece->to, piece->at, start[c]);
#endif
			if (start[c] < piece->log.n)
				ss_append(out, piece->log.rec + start[c],
					  piece->log.n - start[c]);
			s->cut |= piece->d.cut;
			if (c + 1 < n)
				s->joins += 1;
			else if (rerun)
				ss_rerun(s, chain[c], piece->log.n, out);
		}
		free(chain);
		free(start);
	}

	for (idx = 0; idx < s->npieces; ++idx) {
		ss_close(&s->pieces[idx].d);
		free(s->pieces[idx].log.rec);
	}
	free(s->pieces);
	ss_close(&s->probe);
	for (i = 0; i < ss_probe_max; ++i)
		free(s->snaps[i].state);
}

/* Decode @config's trace in one piece and in pieces with an instruction
 * (@insn) or block decoder, each decoder within @budget.  Returns 1
 * if the two logs agree, 0 if not; *@joins (if not NULL) gets the number
 * of joins the split decode made. */
SS int ss_check(const struct pt_config *config, const struct ss_code *code,
		int insn, const struct ss_budget *budget, size_t *joins)
{
	struct ss_log one = { NULL, 0, 0 }, split = { NULL, 0, 0 };
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

/* seg_split.h - decode a trace in one piece and in pieces, and compare.
 *
 * ss_check() decodes a trace with an instruction or a block decoder the
 * way a simple tool does (sync forward, drain events, decode, on an error
 * sync forward again) and logs every result: each instruction or block,
 * each event, each error with the trace offset it came at.  Then it
 * decodes the same trace in pieces through ipt.h's ipt_seg_split (the
 * stitching rule of >>api-seg), the same loop behind struct ipt_seg_loop,
 * a log per piece, and puts the pieces' logs together as the stitch says.
 * The two logs must be equal, or, where a step budget cut either short,
 * one a prefix of the other.  The pieces are decoded one after the other
 * here; examples/ptxed --threads and bench.c's par layers decode them on
 * threads.  Used by seg_split.c and the block and instruction fuzz
 * harnesses.  Built with -DSS_DEBUG, it tells on stderr how the pieces
 * joined and where the logs differ. */
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

/* The pieces at most. */
enum { ss_pieces_max = 64 };

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

/* ---- the loop behind struct ipt_seg_loop ---- */

/* What a split decode needs, and what it found. */
struct ss_split {
	int insn;
	const struct pt_config *config;
	const struct ss_code *code;
	struct ss_budget budget;
	/* How many joins the stitch followed. */
	size_t joins;
	/* A decoder whose log was used ran out of steps. */
	int cut;
};

/* A loop: a decoder, kept from piece to piece as a thread of
 * examples/ptxed keeps its decoder, and the log it writes.  The marks
 * are records. */
struct ss_loop {
	const struct ss_split *s;
	struct ss_dec d;
	int open;
	struct ss_log *log;
};

/* A saved state: the loop's status, then the decoder's. */
enum { ss_state_head = 16 };

SS size_t ss_state_size(int insn)
{
	return ss_state_head +
	       (insn ? ipt_insn_state_size() : ipt_blk_state_size());
}

SS int ss_loop_start(void *arg, uint64_t offset, int first)
{
	struct ss_loop *l = (struct ss_loop *) arg;
	const struct ss_split *s = l->s;

	l->log->n = 0;
	/* The first piece starts from a decoder that has seen nothing. */
	if (l->open && first) {
		ss_close(&l->d);
		l->open = 0;
	}
	if (!l->open) {
		if (ss_open(&l->d, s->insn, s->config, s->code, &s->budget) < 0)
			abort();
		l->open = 1;
	}
	l->d.steps = s->budget.steps;
	if (first) {
		l->d.phase = ss_sync;
		l->d.cut = 0;
		return 0;
	}
	ss_start_at(&l->d, offset);
	return l->d.phase == ss_done ? -pte_nosync : 0;
}

SS int ss_loop_step(void *arg, unsigned int n, uint64_t *mark)
{
	struct ss_loop *l = (struct ss_loop *) arg;

	while (n--) {
		size_t before = l->log->n;

		ss_step(&l->d, l->log);
		if (l->d.phase == ss_done)
			return ipt_seg_done;
		if (l->log->n > before &&
		    l->log->rec[before].kind == ss_rec_item &&
		    l->log->rec[before].status == -pte_retstack_empty) {
			*mark = before;
			return ipt_seg_retstack;
		}
	}
	return ipt_seg_go;
}

SS int ss_loop_at(void *arg, uint64_t *offset, uint64_t *mark)
{
	struct ss_loop *l = (struct ss_loop *) arg;

	*mark = l->log->n;
	if (l->d.phase != ss_run || l->d.status < 0)
		return 0;
	*offset = ss_offset(&l->d);
	return *offset != UINT64_MAX;
}

SS int ss_loop_save(const void *arg, void *state)
{
	const struct ss_loop *l = (const struct ss_loop *) arg;
	unsigned char *p = (unsigned char *) state;
	size_t size = ss_state_size(l->d.insn) - ss_state_head;

	memcpy(p, &l->d.status, sizeof(l->d.status));
	return l->d.insn ? ipt_insn_save(l->d.id, p + ss_state_head, size)
			 : ipt_blk_save(l->d.bd, p + ss_state_head, size);
}

SS int ss_loop_same(void *arg, const void *state)
{
	struct ss_loop *l = (struct ss_loop *) arg;
	const unsigned char *p = (const unsigned char *) state;
	int status;

	memcpy(&status, p, sizeof(status));
	if (status != l->d.status)
		return 0;
	return l->d.insn ? ipt_insn_converged(l->d.id, p + ss_state_head)
			 : ipt_blk_converged(l->d.bd, p + ss_state_head);
}

static const struct ipt_seg_loop ss_loop_ops = {
	ss_loop_start, ss_loop_step, ss_loop_at, ss_loop_save, ss_loop_same
};

SS void ss_loop_fini(struct ss_loop *l)
{
	if (l->open)
		ss_close(&l->d);
}

SS void ss_append(struct ss_log *dst, const struct ss_log *src,
		  uint64_t from, uint64_t to)
{
	while (from < to && from < src->n)
		*ss_add(dst, 0, 0) = src->rec[from++];
}

/* Decode in pieces, one after the other, and put the pieces' logs
 * together into @out as the stitch says. */
SS void ss_split_decode(struct ss_split *s, struct ss_log *out)
{
	struct ipt_seg_split *split;
	struct ipt_seg_worker *w;
	struct ipt_seg_stitch st;
	struct ipt_seg_range r;
	struct ss_log probe_log = { NULL, 0, 0 };
	struct ss_loop loop, probe;
	struct ss_log *logs;
	size_t n, idx;
	int *cuts, k;

	split = ipt_seg_split_alloc(s->config, ss_pieces_max, &ss_loop_ops,
				    ss_state_size(s->insn), NULL);
	w = ipt_seg_worker_alloc(split);
	if (!split || !w)
		abort();
	n = ipt_seg_split_count(split);
#ifdef SS_DEBUG
	fprintf(stderr, "%zu pieces of %ld PSBs\n", n,
		(long) ipt_seg_index(s->config, NULL, 0));
#endif
	logs = (struct ss_log *) calloc(n, sizeof(*logs));
	cuts = (int *) calloc(n, sizeof(*cuts));
	if (!logs || !cuts)
		abort();
	memset(&loop, 0, sizeof(loop));
	memset(&probe, 0, sizeof(probe));
	loop.s = probe.s = s;
	probe.log = &probe_log;
	for (idx = 0; idx < n; ++idx) {
		loop.log = &logs[idx];
		if (ipt_seg_decode(w, idx, &loop, &probe) < 0)
			abort();
		cuts[idx] = loop.d.cut;
	}
	ss_loop_fini(&loop);
	ss_loop_fini(&probe);
	ipt_seg_worker_free(w);

	ipt_seg_stitch_init(&st);
	for (idx = 0; (k = ipt_seg_stitch_next(split, &st, &r)) == 1; ++idx) {
#ifdef SS_DEBUG
		const struct ipt_seg_piece *p = ipt_seg_split_piece(split,
								    r.idx);

		fprintf(stderr, "piece %zu begin %lx: %zu recs, join %d to "
			"%zu at %lu, from %lu to %lu\n", r.idx,
			(unsigned long) p->begin, logs[r.idx].n, p->join,
			p->join_to, (unsigned long) p->join_at,
			(unsigned long) r.from, (unsigned long) r.to);
#endif
		s->joins += idx ? 1 : 0;
		s->cut |= cuts[r.idx];
		ss_append(out, &logs[r.idx], r.from, r.to);
	}
	if (k == 2) {
		struct ss_log again = { NULL, 0, 0 };

		memset(&loop, 0, sizeof(loop));
		loop.s = s;
		loop.log = &again;
		if (ipt_seg_rerun(split, r.idx, &loop) < 0)
			abort();
		s->cut |= loop.d.cut;
		ss_append(out, &again, r.from, again.n);
		ss_loop_fini(&loop);
		free(again.rec);
	} else if (k < 0)
		abort();

	for (idx = 0; idx < n; ++idx)
		free(logs[idx].rec);
	free(logs);
	free(cuts);
	free(probe_log.rec);
	ipt_seg_split_free(split);
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

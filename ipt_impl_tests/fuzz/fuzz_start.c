/* Start harness: decoders started where there is no PSB (ipt_*_start_at)
 * with a state from the input, and with the state a decoder of the trace
 * cut short stood in (ipt_*_get_start_state).
 *
 * Input: as fuzz_blk.c (common header, image fields, trace).  The header's
 * sync offset picks the offset (modulo the trace's size plus one); a hash
 * of the header gives the state: IP near the image, mode, CR3, VMCS,
 * tracing on or off, last IP, a return stack, a stale mode, a TRIG
 * count, the instruction before the start.  The event, query, block,
 * instruction and coverage decoders start there and decode to the end
 * within a budget; then an instruction decoder decodes the trace cut at
 * the offset and says its state, and decoders started with it decode the
 * whole trace.  Nothing may crash, hang or leak; a state said must be one
 * a decoder starts with, and the cut decode carried over by it must give
 * the whole decode's instructions. */
#include "fuzz.h"
#include "../unit/hv/fault_util.h"

static uint64_t mix(uint64_t *seed)
{
	*seed = hv_mix(*seed + 0x9e3779b97f4a7c15ull);
	return *seed;
}

static void make_state(struct ipt_start_state *s, uint64_t seed,
		       uint64_t base)
{
	uint64_t r = mix(&seed);
	uint32_t n;

	memset(s, 0, sizeof(*s));
	s->size = (r & 7) ? sizeof(*s) : offsetof(struct ipt_start_state, mode);
	s->enabled = (r >> 3) & 1;
	s->has_cr3 = (r >> 4) & 1;
	s->non_root = (r >> 5) & 1;
	s->has_vmcs = (r >> 6) & 1;
	s->speculative = (r >> 7) & 1;
	s->iflag = (r >> 8) & 1;
	s->has_time = (r >> 9) & 1;
	s->mode_stale = (r >> 10) & 1;
	s->has_icnt = (r >> 15) & 1;
	s->icnt = (uint32_t) (r >> 40) & 0xff;
	s->mode = (enum pt_exec_mode) ((r >> 11) & 3);
	s->ip = base + (mix(&seed) & 0xff);
	s->has_last_insn = (r >> 18) & 1;
	s->last_insn_ip = base + (mix(&seed) & 0xff);
	s->cr3 = mix(&seed) & ~0xfffull;
	s->vmcs = mix(&seed) & ~0xfffull;
	if ((r >> 13) & 1) {
		s->last_ip.ip = mix(&seed);
		s->last_ip.have_ip = 1;
	}
	ipt_time_init(&s->time);
	ipt_tcal_init(&s->tcal);
	s->time.tsc = mix(&seed);
	s->time.have_tsc = (r >> 14) & 1;
	s->nret = (uint32_t) ((r >> 16) % (ipt_start_max_ret + 1));
	for (n = 0; n < s->nret; ++n)
		s->ret[n] = base + (mix(&seed) & 0xff);
}

/* Code that loops without trace goes on for ever: a decode ends after
 * this many steps that read no further into the trace (fuzz_blk.c). */
enum { max_idle_blk = 64, max_idle_insn = IPT_COV_IDLE_MAX };

/* Has the decode at @offset gone @max steps without moving on? */
static int idle(uint64_t offset, uint64_t *last, unsigned *steps,
		unsigned max)
{
	if (offset != *last) {
		*last = offset;
		*steps = 0;
		return 0;
	}
	return ++*steps >= max;
}

/* Decode to the end, within @budget steps. */
static void run_blk(struct pt_block_decoder *d, int status, size_t budget)
{
	uint64_t last = UINT64_MAX, offset = 0, insns = 0;
	uint64_t max_insns = (uint64_t) budget * 4;
	unsigned steps = 0;

	/* A block may hold 65535 instructions: cap those too. */
	while (budget-- && insns < max_insns) {
		struct pt_event ev;
		struct pt_block b;

		if (status < 0)
			return;
		(void) pt_blk_get_offset(d, &offset);
		if (idle(offset, &last, &steps, max_idle_blk))
			return;
		if (status & pts_event_pending) {
			status = pt_blk_event(d, &ev, sizeof(ev));
			continue;
		}
		b.ninsn = 0;
		status = pt_blk_next(d, &b, sizeof(b));
		insns += b.ninsn;
	}
}


/* The instructions an instruction decoder reports from @status on, up
 * to its first error, within @budget steps; 0 if it got to that error
 * (or the end), 1 if it was stopped. */
struct ips {
	uint64_t *v;
	size_t n, cap;
};

static int insn_ips(struct ips *o, struct pt_insn_decoder *d, int status,
		    size_t budget)
{
	uint64_t last = UINT64_MAX, offset = 0;
	unsigned steps = 0;

	while (budget--) {
		struct pt_event ev;
		struct pt_insn insn;

		if (status < 0)
			return 0;
		(void) pt_insn_get_offset(d, &offset);
		if (idle(offset, &last, &steps, max_idle_insn))
			return 1;
		if (status & pts_event_pending) {
			status = pt_insn_event(d, &ev, sizeof(ev));
			continue;
		}
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (insn.iclass == ptic_error)
			continue;
		if (o->n == o->cap) {
			o->cap = o->cap ? 2 * o->cap : 256;
			o->v = (uint64_t *) realloc(o->v,
						    o->cap * sizeof(*o->v));
			if (!o->v)
				abort();
		}
		o->v[o->n++] = insn.ip;
	}
	return 1;
}

static void start_all(const struct pt_config *config,
		      struct pt_image *image, uint64_t offset,
		      const struct ipt_start_state *s, size_t budget)
{
	struct pt_event_decoder *evt;
	struct pt_query_decoder *qry;
	struct pt_block_decoder *blk;
	struct pt_insn_decoder *insn;
	struct ipt_cov_decoder *cov;
	struct ipt_cov_config cc;
	struct pt_event ev;
	uint64_t ip;
	int status;
	size_t n;

	evt = ipt_evt_alloc_decoder_with(config, fz_allocator());
	if (evt) {
		status = ipt_evt_start_at(evt, offset, s);
		for (n = 0; status >= 0 && n < budget; ++n)
			status = pt_evt_next(evt, &ev, sizeof(ev));
		pt_evt_free_decoder(evt);
	}
	qry = ipt_qry_alloc_decoder_with(config, fz_allocator());
	if (qry) {
		status = ipt_qry_start_at(qry, &ip, offset, s);
		for (n = 0; status >= 0 && n < budget; ++n) {
			int taken;

			if (status & pts_event_pending)
				status = pt_qry_event(qry, &ev, sizeof(ev));
			else if (pt_qry_cond_branch(qry, &taken) < 0)
				status = pt_qry_indirect_branch(qry, &ip);
		}
		pt_qry_free_decoder(qry);
	}
	blk = ipt_blk_alloc_decoder_with(config, fz_allocator());
	if (blk) {
		pt_blk_set_image(blk, image);
		run_blk(blk, ipt_blk_start_at(blk, offset, s), budget);
		pt_blk_free_decoder(blk);
	}
	insn = ipt_insn_alloc_decoder_with(config, fz_allocator());
	if (insn) {
		struct ips ips = { NULL, 0, 0 };

		pt_insn_set_image(insn, image);
		(void) insn_ips(&ips, insn, ipt_insn_start_at(insn, offset, s),
				budget);
		free(ips.v);
		pt_insn_free_decoder(insn);
	}
	memset(&cc, 0, sizeof(cc));
	cov = ipt_cov_alloc_decoder_with(config, &cc, fz_allocator());
	if (cov) {
		uint8_t map[256];

		(void) ipt_cov_set_image(cov, image);
		(void) ipt_cov_set_bitmap(cov, map, sizeof(map));
		if (ipt_cov_start_at(cov, offset, s) >= 0)
			(void) ipt_cov_decode(cov);
		ipt_cov_free_decoder(cov);
	}
}

/* An instruction decoder on @config from its first PSB, or started. */
static int decode_ips(struct ips *o, const struct pt_config *config,
		      struct pt_image *image, const struct ipt_start_state *s,
		      uint64_t at, size_t budget, struct ipt_start_state *out,
		      uint64_t *out_at, int *out_status)
{
	struct pt_insn_decoder *d;
	int stopped;

	d = ipt_insn_alloc_decoder_with(config, fz_allocator());
	if (!d)
		return -1;
	pt_insn_set_image(d, image);
	stopped = insn_ips(o, d, s ? ipt_insn_start_at(d, at, s) :
				     pt_insn_sync_forward(d), budget);
	if (out)
		*out_status = ipt_insn_get_start_state(d, out_at, out);
	pt_insn_free_decoder(d);
	return stopped;
}

/* Decode the trace cut at @offset; start decoders with the state the
 * decoder stood in at the end.  Where that state holds exactly, the
 * instructions of the cut decode, less the last state.repeat of them,
 * and those of the started one are those of a decode of the whole. */
static void carry_over(const struct pt_config *config,
		       struct pt_image *image, uint64_t offset, size_t budget)
{
	struct pt_config cut = *config;
	struct ips whole = { NULL, 0, 0 }, part = { NULL, 0, 0 };
	struct ips rest = { NULL, 0, 0 };
	struct ipt_start_state s;
	uint64_t at = 0;
	int status = -1, stopped;

	cut.end = cut.begin + offset;
	memset(&s, 0, sizeof(s));
	s.size = sizeof(s);
	stopped = decode_ips(&part, &cut, image, NULL, 0, budget, &s, &at,
			     &status);
	if (stopped < 0 || status < 0)
		goto out;
	if (at > offset)
		fz_fail("start state past the cut", (long long) at,
			(long long) offset);
	if (s.repeat > part.n)
		fz_fail("start state repeats more than was reported",
			(long long) s.repeat, (long long) part.n);
	start_all(config, image, at, &s, budget);

	stopped |= decode_ips(&whole, config, image, NULL, 0, budget, NULL,
			      NULL, NULL);
	stopped |= decode_ips(&rest, config, image, &s, at, budget, NULL, NULL,
			      NULL);
	if (!stopped) {
		size_t keep = part.n - s.repeat;

		if (keep + rest.n != whole.n ||
		    (keep && memcmp(whole.v, part.v, keep * sizeof(*part.v))) ||
		    (rest.n && memcmp(whole.v + keep, rest.v,
				      rest.n * sizeof(*rest.v))))
			fz_fail("carried-over decode differs from the whole",
				(long long) keep, (long long) rest.n);
	}
out:
	free(whole.v);
	free(part.v);
	free(rest.v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ipt_start_state s;
	struct pt_image *image;
	struct fz_twice in;
	struct gmem mem;
	size_t budget;
	uint64_t offset;

	fz_twice_read(&in, data, size);
	memset(&mem, 0, sizeof(mem));
	gmem_add(&mem, in.img.base, in.img.code, in.img.size);
	image = ipt_image_alloc_with("start", fz_allocator());
	if (image && pt_image_set_callback(image, gmem_read, &mem) >= 0) {
		budget = 1024 + in.tsize * 8;
		offset = in.h.sync_offset % (in.tsize + 1);
		make_state(&s, in.h.cpuid_0x15_eax ^
				       ((uint64_t) in.h.sync_offset << 32),
			   in.img.base);
		start_all(&in.config, image, offset, &s, budget);
		carry_over(&in.config, image, offset, budget);
	}
	pt_image_free(image);
	free(mem.released);
	fz_twice_free(&in);
	return 0;
}

/* bench - decode one trace with one layer, time it, measure peak memory.
 *
 * One source, two programs: built against ipt.h, and with -DUSE_LIBIPT
 * against the system's libipt (<intel-pt.h>, -lipt).  `make bench` runs
 * both on the same traces, alternating, and compares (see ./run).
 *
 *     bench --layer pkt|qry|insn|blk|cov|covwarm|seg
 *           [--image cb|file|iscache|batch]
 *           [--warm] [--min-time SEC] DIR NAME
 *
 * reads DIR/NAME.pt, DIR/NAME.cfg ("key value" lines: mtc_freq, nom_freq,
 * cpuid_0x15_eax, cpuid_0x15_ebx, cpu_family, cpu_model, cpu_stepping)
 * and DIR/image.txt ("start end file [name]" lines, file relative to DIR).
 *
 * Layers:
 *   pkt   pt_pkt_next over the whole trace (resynchronizing on errors);
 *         with --image batch (ipt.h only), ipt_pkt_next_batch instead
 *   qry   the execution-flow reconstruction loop of the pt_qry_cond_branch
 *         man page, with events: instructions are decoded by Zydis here,
 *         through a small direct-mapped cache, the same in both programs
 *   insn  pt_insn_next
 *   blk   pt_blk_next (blocks are counted, not expanded)
 *   cov   edge coverage into a 64 KiB bitmap: ipt.h's ipt_cov_decode on a
 *         fresh decoder; libipt's block decoder as fuzzers use it, each
 *         block an edge from the previous block's end, hashed into the
 *         bitmap ("insn" counts edges)
 *   covwarm  ipt.h only: ipt_cov_decode on one decoder and image kept
 *         from pass to pass (warmed by an untimed pass), the way a fuzzer
 *         decodes trace after trace
 *   seg   the segment index: every PSB and its PSB+ (ipt_seg_index; with
 *         libipt, pt_pkt_sync_forward and pt_pkt_next up to PSBEND, as
 *         its ptseg tool finds segments)
 *   par-insn, par-blk  ipt.h only: the trace in pieces at PSBs, decoded
 *         on --threads N threads (default 2) and joined into exactly the
 *         sequential decode, through the API (ipt_seg_split: 16
 *         pieces per thread, each thread's decoder kept from piece to
 *         piece, an image per thread over the same callback); insn
 *         counts what the insn and blk layers count
 *
 * Images (insn, blk):
 *   cb       pt_image_set_callback, reading the mappings loaded from DIR
 *   file     pt_image_add_file per mapping
 *   iscache  pt_iscache_add_file + pt_image_add_cached per mapping
 *
 * Each pass allocates the image, section cache and decoder anew and frees
 * them at its end, so every pass starts cold: the first pass of a decoder.
 * The allocator keeps the memory freed at a pass's end for the next
 * (glibc: mallopt), on every thread: glibc's own thresholds give a single
 * thread that, and would give threads' arenas fresh pages from the kernel
 * in every pass (page faults, and unmappings that stop the other CPU),
 * which a one-thread pass does not pay.
 * With --warm (insn, blk), one untimed pass fills the caches and every
 * timed pass decodes the trace again with the same decoder, image and
 * section cache (pt_*_sync_set back to the first pass's sync offset).  Passes repeat until
 * --min-time seconds (default 0.3) have passed; the time reported is the
 * mean per pass, in processor time (user + system) of the process.  The
 * clock is read around batches of passes, a batch doubling until it takes
 * a millisecond (qry: one pass, its instruction cache reset untimed
 * before it): reading the process clock is a system call that costs a
 * microsecond or so, a tenth of a pass over the smallest hardware traces
 * (2 KiB), and would otherwise be charged to the decoder.  Memory:
 * getrusage's ru_maxrss after all passes minus
 * ru_maxrss just before the first (trace and mappings already loaded), so
 * it is the peak of the decoder, its image and their caches.
 *
 * --wall: time in wall-clock time instead of processor time, for the par
 * layers, whose threads add their processor times up (run the insn and
 * blk layers with --wall too to compare).
 *
 * Prints one line:
 *   bytes=N insn=N passes=N sec=S mem_kb=N errors=N
 * with bytes and insn per pass.
 */

#define _GNU_SOURCE
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <Zydis/Zydis.h>
#ifndef USE_LIBIPT
#include <pthread.h>
#endif


#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

struct segment {
	uint64_t start, end;
	uint8_t *data;
	char path[4096];
};

static struct segment segs[256];
static int nsegs;
/* The last mapping read, per thread: the par layers read on threads. */
static __thread const struct segment *last_seg;

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "bench: %s%s%s\n", what, arg ? " " : "",
		arg ? arg : "");
	exit(2);
}

static uint8_t *load_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		die("cannot read", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = (uint8_t *) malloc(n > 0 ? (size_t) n : 1);
	if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n)
		die("cannot read", path);
	fclose(f);
	*size = (size_t) n;
	return buf;
}

static void load_image(const char *dir)
{
	char path[4096], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/image.txt", dir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && nsegs < 256) {
		unsigned long long start, end;
		char file[1024];
		struct segment *s = &segs[nsegs];
		size_t size;

		if (sscanf(line, "%llx %llx %1023s", &start, &end, file) != 3)
			continue;
		s->start = start;
		s->end = end;
		snprintf(s->path, sizeof(s->path), "%s/%s", dir, file);
		s->data = load_file(s->path, &size);
		if (size < end - start)
			die("short mapping", s->path);
		nsegs++;
	}
	fclose(f);
}

static const struct segment *find_seg(uint64_t ip)
{
	int i;

	if (last_seg && last_seg->start <= ip && ip < last_seg->end)
		return last_seg;
	for (i = 0; i < nsegs; i++) {
		if (segs[i].start <= ip && ip < segs[i].end) {
			last_seg = &segs[i];
			return last_seg;
		}
	}
	return NULL;
}

/* The read-memory callback: bytes from the loaded mappings. */
static int read_mem(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context)
{
	const struct segment *s = find_seg(ip);
	size_t n;

	(void) asid;
	(void) context;
	if (!s)
		return -pte_nomap;
	n = (size_t) (s->end - ip);
	if (n > size)
		n = size;
	memcpy(buffer, s->data + (ip - s->start), n);
	return (int) n;
}

static void load_cfg(struct pt_config *config, const char *path)
{
	char key[64];
	unsigned long val;
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fscanf(f, "%63s %lu", key, &val) == 2) {
		if (!strcmp(key, "mtc_freq"))
			config->mtc_freq = (uint8_t) val;
		else if (!strcmp(key, "nom_freq"))
			config->nom_freq = (uint8_t) val;
		else if (!strcmp(key, "cpuid_0x15_eax"))
			config->cpuid_0x15_eax = (uint32_t) val;
		else if (!strcmp(key, "cpuid_0x15_ebx"))
			config->cpuid_0x15_ebx = (uint32_t) val;
		else if (!strcmp(key, "cpu_family")) {
			config->cpu.vendor = pcv_intel;
			config->cpu.family = (uint16_t) val;
		} else if (!strcmp(key, "cpu_model"))
			config->cpu.model = (uint8_t) val;
		else if (!strcmp(key, "cpu_stepping"))
			config->cpu.stepping = (uint8_t) val;
	}
	fclose(f);
	if (config->cpu.vendor && pt_cpu_errata(&config->errata,
						&config->cpu) < 0)
		die("bad cpu in", path);
}

/* --wall: wall-clock time rather than processor time. */
static int wall;

/* Processor time of this process: less disturbed than wall-clock time by
 * whatever else runs on the machine. */
static double now(void)
{
	struct timespec t;

	clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static uint64_t ninsn;
static int nerrors;
static int verbose;

/* ---- the layers ---- */

/* Packets per ipt_pkt_next_batch call. */
#define PKT_BATCH 64

static void run_pkt(const struct pt_config *config, int batch)
{
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(config);
	struct pt_packet packet[PKT_BATCH];
	int status;

	if (!dec)
		die("cannot allocate the packet decoder", NULL);
	for (;;) {
		status = pt_pkt_sync_forward(dec);
		if (status < 0)
			break;
		while (!batch) {
			status = pt_pkt_next(dec, &packet[0], sizeof(packet[0]));
			if (status < 0)
				break;
		}
#ifndef USE_LIBIPT
		while (batch) {
			status = ipt_pkt_next_batch(dec, packet, PKT_BATCH);
			if (status < 0)
				break;
		}
#endif
		if (status == -pte_eos)
			break;
		nerrors++;
	}
	pt_pkt_free_decoder(dec);
}

/* What the qry loop needs to know of an instruction. */
enum qclass {
	qc_other,
	qc_cond,	/* conditional branch: target */
	qc_jump,	/* direct jump: target */
	qc_call,	/* direct call: target, pushes next */
	qc_icall,	/* indirect call: pushes next */
	qc_ret,		/* near return: maybe compressed */
	qc_ind,		/* indirect jump, far transfer */
	qc_far,		/* syscall, sysenter, int: may disable */
	qc_bad
};

struct qinsn {
	uint64_t ip;
	uint64_t target;
	uint8_t size;
	uint8_t cls;
};

/* Direct-mapped cache of decoded instructions, keyed by IP. */
#define QCACHE_SIZE (1u << 16)
static struct qinsn *qcache;
static ZydisDecoder zdec;

static const struct qinsn *qdecode(uint64_t ip)
{
	struct qinsn *q = &qcache[(ip ^ (ip >> 16)) & (QCACHE_SIZE - 1)];
	ZydisDecodedInstruction zi;
	const struct segment *s;

	if (q->ip == ip && q->size)
		return q;
	q->ip = ip;
	q->size = 0;
	q->cls = qc_bad;
	s = find_seg(ip);
	if (!s ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(
		    &zdec, NULL, s->data + (ip - s->start),
		    (ZyanUSize) (s->end - ip), &zi)))
		return q;
	q->size = zi.length;
	q->target = 0;
	q->cls = qc_other;
	if (zi.raw.imm[0].is_relative)
		q->target = ip + zi.length + (uint64_t) zi.raw.imm[0].value.s;

	switch (zi.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		q->cls = qc_cond;
		break;
	case ZYDIS_CATEGORY_UNCOND_BR:
		q->cls = zi.raw.imm[0].is_relative ? qc_jump : qc_ind;
		break;
	case ZYDIS_CATEGORY_CALL:
		q->cls = zi.raw.imm[0].is_relative ? qc_call : qc_icall;
		if (zi.mnemonic == ZYDIS_MNEMONIC_CALL &&
		    zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
			q->cls = qc_ind;
		break;
	case ZYDIS_CATEGORY_RET:
		q->cls = zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR ?
				 qc_ind : qc_ret;
		if (zi.mnemonic == ZYDIS_MNEMONIC_IRET ||
		    zi.mnemonic == ZYDIS_MNEMONIC_IRETD ||
		    zi.mnemonic == ZYDIS_MNEMONIC_IRETQ)
			q->cls = qc_ind;
		break;
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_INTERRUPT:
		q->cls = qc_far;
		break;
	case ZYDIS_CATEGORY_SYSRET:
		q->cls = qc_ind;
		break;
	default:
		break;
	}
	return q;
}

/* One pending event of the qry loop, applied when its IP is reached. */
struct qevent {
	int type;
	uint64_t at, to;
	int ip_suppressed;
};

/* The qry loop: a decoder's state and a return stack. */
struct qstate {
	struct pt_query_decoder *dec;
	uint64_t ip;
	int enabled;
	int status;
	uint64_t retstack[64];
	int top, depth;
	struct qevent pend[8];
	int npend;
};

enum { ev_sync_disable = 1000 };

/* Take pending events out of the decoder.  Those that happen at once
 * are applied; those bound to an IP wait in pend[]. */
static int qry_events(struct qstate *q)
{
	/* Events come in order: none is taken while one waits for its IP. */
	while ((q->status & pts_event_pending) && !q->npend) {
		struct pt_event ev;
		struct qevent *p;

		q->status = pt_qry_event(q->dec, &ev, sizeof(ev));
		if (q->status < 0)
			return q->status;
		switch (ev.type) {
		case ptev_enabled:
			q->ip = ev.variant.enabled.ip;
			q->enabled = 1;
			break;
		case ptev_overflow:
			q->npend = 0;
			q->depth = 0;
			if (ev.ip_suppressed) {
				q->enabled = 0;
			} else {
				q->ip = ev.variant.overflow.ip;
				q->enabled = 1;
			}
			break;
		case ptev_disabled:
		case ptev_async_disabled:
		case ptev_async_branch:
			if (q->npend == 8)
				return -pte_internal;
			p = &q->pend[q->npend++];
			p->type = ev.type;
			p->ip_suppressed = ev.ip_suppressed;
			if (ev.type == ptev_disabled) {
				p->type = ev_sync_disable;
				p->at = ev.variant.disabled.ip;
			} else if (ev.type == ptev_async_disabled) {
				p->at = ev.variant.async_disabled.at;
			} else {
				p->at = ev.variant.async_branch.from;
				p->to = ev.variant.async_branch.to;
			}
			if (!q->enabled) {
				/* Nothing to wait for. */
				q->npend--;
				q->enabled = 0;
			}
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Apply the asynchronous events bound to the current IP; returns 1 if
 * tracing stopped. */
static int qry_async(struct qstate *q)
{
	while (q->npend) {
		struct qevent *p = &q->pend[0];

		if (p->type == ev_sync_disable || p->at != q->ip)
			return 0;
		if (p->type == ptev_async_branch) {
			q->ip = p->to;
		} else {
			q->enabled = 0;
		}
		memmove(q->pend, q->pend + 1,
			(size_t) (q->npend - 1) * sizeof(q->pend[0]));
		q->npend--;
		if (!q->enabled)
			return 1;
	}
	return 0;
}

/* After a far transfer (or any branch, if one is pending): a synchronous
 * disable. */
static void qry_sync_disable(struct qstate *q)
{
	if (q->npend && q->pend[0].type == ev_sync_disable) {
		memmove(q->pend, q->pend + 1,
			(size_t) (q->npend - 1) * sizeof(q->pend[0]));
		q->npend--;
		q->enabled = 0;
	}
}

static int qry_flow(struct qstate *q)
{
	int errcode, taken;

	for (;;) {
		const struct qinsn *in;

		errcode = qry_events(q);
		if (errcode < 0)
			return errcode;
		if (q->enabled && qry_async(q))
			continue;
		if (!q->enabled) {
			if (q->status & pts_eos)
				return -pte_eos;
			if (!(q->status & pts_event_pending))
				return -pte_bad_query;
			continue;
		}

		in = qdecode(q->ip);
		if (in->cls == qc_bad)
			return -pte_nomap;
		ninsn++;
		if (verbose > 1)
			printf("%016" PRIx64 "\n", q->ip);
		switch (in->cls) {
		case qc_other:
			q->ip += in->size;
			break;
		case qc_jump:
			q->ip = in->target;
			break;
		case qc_call:
			if (in->target != q->ip + in->size) {
				q->top = (q->top + 1) & 63;
				q->retstack[q->top] = q->ip + in->size;
				if (q->depth < 64)
					q->depth++;
			}
			q->ip = in->target;
			break;
		case qc_cond:
			q->status = pt_qry_cond_branch(q->dec, &taken);
			if (q->status < 0)
				return q->status;
			q->ip = taken ? in->target : q->ip + in->size;
			break;
		case qc_ret:
			q->status = pt_qry_cond_branch(q->dec, &taken);
			if (q->status >= 0) {
				if (!taken || !q->depth)
					return -pte_bad_retcomp;
				q->ip = q->retstack[q->top];
				q->top = (q->top - 1) & 63;
				q->depth--;
				break;
			}
			if (q->status != -pte_bad_query)
				return q->status;
			/* fall through */
		case qc_icall:
		case qc_ind:
		case qc_far:
			if (in->cls == qc_icall) {
				q->top = (q->top + 1) & 63;
				q->retstack[q->top] = q->ip + in->size;
				if (q->depth < 64)
					q->depth++;
			}
			if (in->cls == qc_far && q->npend &&
			    q->pend[0].type == ev_sync_disable) {
				qry_sync_disable(q);
				break;
			}
			q->status = pt_qry_indirect_branch(q->dec, &q->ip);
			if (q->status < 0)
				return q->status;
			if (q->status & pts_ip_suppressed)
				q->enabled = 0;
			break;
		}
		/* A synchronous disable follows the indirect or far
		 * transfer that caused it. */
		if (q->npend && q->pend[0].type == ev_sync_disable &&
		    (in->cls == qc_ind || in->cls == qc_icall ||
		     in->cls == qc_ret))
			qry_sync_disable(q);
	}
}

static void run_qry(const struct pt_config *config)
{
	struct qstate q;
	int status;

	memset(&q, 0, sizeof(q));
	q.dec = pt_qry_alloc_decoder(config);
	if (!q.dec)
		die("cannot allocate the query decoder", NULL);
	for (;;) {
		status = pt_qry_sync_forward(q.dec, &q.ip);
		if (status < 0)
			break;
		q.status = status;
		q.enabled = !(status & pts_ip_suppressed);
		q.npend = 0;
		q.depth = 0;
		status = qry_flow(&q);
		if (status == -pte_eos)
			break;
		nerrors++;
		if (verbose) {
			uint64_t off = 0;

			pt_qry_get_offset(q.dec, &off);
			fprintf(stderr, "qry: st %x npend %d en %d: %s at ip %" PRIx64
				", offset %" PRIx64 "\n",
				q.status, q.npend, q.enabled, pt_errstr(pt_errcode(status)), q.ip, off);
		}
	}
	pt_qry_free_decoder(q.dec);
}

/* With --warm: the image, section cache and decoder of the first pass,
 * kept for the next; and where that pass first synchronized. */
static int warm;
static struct pt_image *w_image;
static struct pt_image_section_cache *w_iscache;
static struct pt_insn_decoder *w_insn;
static struct pt_block_decoder *w_blk;
static uint64_t w_sync;
static int w_synced;

/* The first synchronization of a pass: forward from the start, or, for a
 * decoder that has decoded the trace before, back to where that began. */
#define FIRST_SYNC(kind, dec)                                                  \
	(w_synced ? pt_##kind##_sync_set(dec, w_sync) :                        \
		    pt_##kind##_sync_forward(dec))

#define NOTE_SYNC(kind, dec)                                                   \
	do {                                                                   \
		if (warm && !w_synced &&                                       \
		    pt_##kind##_get_sync_offset(dec, &w_sync) >= 0)             \
			w_synced = 1;                                          \
	} while (0)

static void run_insn(struct pt_insn_decoder *dec)
{
	struct pt_insn insn;
	struct pt_event ev;
	int status, first = 1;

	for (;;) {
		status = first ? FIRST_SYNC(insn, dec) :
				 pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		if (first)
			NOTE_SYNC(insn, dec);
		first = 0;
		for (;;) {
			while (status & pts_event_pending) {
				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status < 0)
				break;
			ninsn++;
		}
		if (status == -pte_eos || (status >= 0 && (status & pts_eos)))
			break;
		nerrors++;
	}
}

static uint8_t covmap[1 << 16];

/* pt_blk_next over the trace; with @cov, as fuzzers use it for coverage:
 * each block is an edge from the previous block's end, hashed into covmap
 * (and counted in ninsn instead of instructions). */
static void run_blk(struct pt_block_decoder *dec, int cov)
{
	struct pt_block block;
	struct pt_event ev;
	uint64_t prev = 0;
	int status, first = 1;

	if (cov)
		memset(covmap, 0, sizeof(covmap));

	for (;;) {
		status = first ? FIRST_SYNC(blk, dec) :
				 pt_blk_sync_forward(dec);
		if (status < 0)
			break;
		if (first)
			NOTE_SYNC(blk, dec);
		first = 0;
		for (;;) {
			while (status & pts_event_pending) {
				status = pt_blk_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_blk_next(dec, &block, sizeof(block));
			if (!cov)
				ninsn += block.ninsn;
			if (status < 0)
				break;
			if (cov && block.ninsn) {
				uint64_t h = (prev * 0x9e3779b97f4a7c15ull) ^
					     (block.ip * 0xc2b2ae3d27d4eb4full);

				covmap[(h >> 32 ^ h) & (sizeof(covmap) - 1)]++;
				prev = block.end_ip;
				ninsn++;
			}
		}
		if (status == -pte_eos || (status >= 0 && (status & pts_eos)))
			break;
		nerrors++;
	}
}

#ifndef USE_LIBIPT
static void cov_decode(struct ipt_cov_decoder *dec, const struct pt_config *config)
{
	struct ipt_cov_status before, after;

	if (ipt_cov_get_status(dec, &before) < 0 ||
	    ipt_cov_set_trace(dec, config->begin, config->end, 1) < 0 ||
	    ipt_cov_decode(dec) < 0 || ipt_cov_get_status(dec, &after) < 0)
		die("coverage decode failed", NULL);
	ninsn = after.edges - before.edges;
	nerrors = (int) (after.errors - before.errors);
}

static void run_cov(const struct pt_config *config, struct pt_image *image)
{
	struct ipt_cov_config cc;
	struct ipt_cov_decoder *dec;

	memset(&cc, 0, sizeof(cc));
	dec = ipt_cov_alloc_decoder(config, &cc);
	if (!dec || ipt_cov_set_image(dec, image) < 0 ||
	    ipt_cov_set_bitmap(dec, covmap, sizeof(covmap)) < 0)
		die("cannot allocate the coverage decoder", NULL);
	cov_decode(dec, config);
	ipt_cov_free_decoder(dec);
}

/* One decoder and image for the whole process. */
static void run_covwarm(const struct pt_config *config)
{
	static struct ipt_cov_decoder *dec;
	static struct pt_image *image;
	struct ipt_cov_config cc;

	if (!dec) {
		memset(&cc, 0, sizeof(cc));
		image = pt_image_alloc("bench");
		dec = ipt_cov_alloc_decoder(config, &cc);
		if (!image || !dec ||
		    pt_image_set_callback(image, read_mem, NULL) < 0 ||
		    ipt_cov_set_image(dec, image) < 0 ||
		    ipt_cov_set_bitmap(dec, covmap, sizeof(covmap)) < 0)
			die("cannot allocate the coverage decoder", NULL);
	}
	cov_decode(dec, config);
}
#endif

#ifdef USE_LIBIPT
static void run_seg(const struct pt_config *config)
{
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(config);
	struct pt_packet packet;

	if (!dec)
		die("cannot allocate the packet decoder", NULL);
	while (pt_pkt_sync_forward(dec) >= 0) {
		ninsn += 1;
		while (pt_pkt_next(dec, &packet, sizeof(packet)) >= 0 &&
		       packet.type != ppt_psbend && packet.type != ppt_ovf)
			;
	}
	pt_pkt_free_decoder(dec);
}
#else
/* The segments are counted in ninsn. */
static void run_seg(const struct pt_config *config)
{
	static struct ipt_segment segs[1 << 16];
	int64_t n;

	n = ipt_seg_index(config, segs, sizeof(segs) / sizeof(segs[0]));
	if (n < 0)
		nerrors++;
	else
		ninsn += (uint64_t) n;
}
#endif

/* A new image for mode (cb, file, iscache), its section cache in
 * *iscache. */
static struct pt_image *make_image(const char *mode,
				   struct pt_image_section_cache **iscache)
{
	struct pt_image *image;
	int i;

	*iscache = NULL;
	image = pt_image_alloc("bench");
	if (!image)
		die("cannot allocate the image", NULL);
	if (!strcmp(mode, "iscache")) {
		*iscache = pt_iscache_alloc("bench");
		if (!*iscache)
			die("cannot allocate the iscache", NULL);
	}
	if (!strcmp(mode, "cb") &&
	    pt_image_set_callback(image, read_mem, NULL) < 0)
		die("cannot set the callback", NULL);
	for (i = 0; i < nsegs && strcmp(mode, "cb"); i++) {
		uint64_t n = segs[i].end - segs[i].start;
		int isid, err;

		if (*iscache) {
			isid = pt_iscache_add_file(*iscache, segs[i].path, 0,
						   n, segs[i].start);
			err = isid < 0 ? isid :
				pt_image_add_cached(image, *iscache, isid,
						    NULL);
		} else {
			err = pt_image_add_file(image, segs[i].path, 0, n,
						NULL, segs[i].start);
		}
		if (err < 0)
			die("cannot add", segs[i].path);
	}
	return image;
}

/* One pass over the whole trace; ninsn and nerrors count what it saw.
 * Without --warm, with a fresh image (insn, blk) and decoder; with it,
 * the first pass's. */
#ifndef USE_LIBIPT
/* ---- the par layers ----
 * The loop of run_insn and run_blk, one step at a time behind struct
 * ipt_seg_loop, counting what they count (the marks); threads take the
 * pieces in order, each with an image, a decoder and a probe of its
 * own, kept from piece to piece; the stitch adds the counts up. */

/* --threads, for the par layers. */
static unsigned int threads = 2;

enum { par_sync, par_run, par_done };

struct par_loop {
	int insn;
	const struct pt_config *config;
	struct pt_image *image;
	struct pt_insn_decoder *insndec;
	struct pt_block_decoder *blkdec;
	int phase, status;
	uint64_t count;
	struct pt_insn insn_item;
	struct pt_block block;
	struct pt_event ev;
};

static void par_free_decoder(struct par_loop *l)
{
	pt_insn_free_decoder(l->insndec);
	pt_blk_free_decoder(l->blkdec);
	l->insndec = NULL;
	l->blkdec = NULL;
}

static int par_start(void *arg, uint64_t offset, int first)
{
	struct par_loop *l = (struct par_loop *) arg;

	if (first)
		par_free_decoder(l);
	if (!l->insndec && !l->blkdec) {
		if (l->insn) {
			l->insndec = pt_insn_alloc_decoder(l->config);
			if (!l->insndec || pt_insn_set_image(l->insndec, l->image) < 0)
				die("cannot allocate the decoder", NULL);
		} else {
			l->blkdec = pt_blk_alloc_decoder(l->config);
			if (!l->blkdec || pt_blk_set_image(l->blkdec, l->image) < 0)
				die("cannot allocate the decoder", NULL);
		}
	}
	l->count = 0;
	l->phase = par_sync;
	if (first)
		return 0;
	l->status = l->insn ? pt_insn_sync_set(l->insndec, offset)
			    : pt_blk_sync_set(l->blkdec, offset);
	l->phase = l->status < 0 ? par_done : par_run;
	return l->status < 0 ? l->status : 0;
}

/* The rest of run_insn's and run_blk's loop: events, errors, sync. */
static int par_step_other(struct par_loop *l)
{
	int status = l->status;

	if (l->phase == par_run && status >= 0 &&
	    (status & pts_event_pending)) {
		l->status = l->insn ? pt_insn_event(l->insndec, &l->ev,
						    sizeof(l->ev))
				    : pt_blk_event(l->blkdec, &l->ev, sizeof(l->ev));
		return ipt_seg_go;
	}
	if (l->phase == par_run) {
		l->phase = status == -pte_eos || status >= 0 ? par_done
							     : par_sync;
		return l->phase == par_done ? ipt_seg_done : ipt_seg_go;
	}
	if (l->phase == par_done)
		return ipt_seg_done;
	l->status = l->insn ? pt_insn_sync_forward(l->insndec)
			    : pt_blk_sync_forward(l->blkdec);
	l->phase = l->status < 0 ? par_done : par_run;
	return l->phase == par_done ? ipt_seg_done : ipt_seg_go;
}

/* The decoder's calls of run_insn's and run_blk's loop, up to n, in a
 * loop as tight as theirs: the decoder, the item and the count in
 * locals, and an inner loop of only the decoder's next item while
 * nothing else is to be done.  add: what an item adds to the count;
 * bad: on an error too. */
#define PAR_STEP(kind, dtype, dec, itype, field, add, bad)                    \
static int par_step_##kind(void *arg, unsigned int n, uint64_t *mark)        \
{                                                                             \
	struct par_loop *l = (struct par_loop *) arg;                         \
	struct dtype *dec = l->dec;                                           \
	struct itype *item = &l->field;                                       \
	uint64_t count = l->count;                                            \
	int status = l->status, step = ipt_seg_go;                            \
                                                                              \
	while (n) {                                                           \
		if (l->phase != par_run || status < 0 ||                      \
		    (status & (pts_event_pending | pts_eos))) {               \
			l->status = status;                                   \
			step = par_step_other(l);                             \
			status = l->status;                                   \
			if (step != ipt_seg_go)                               \
				break;                                        \
			--n;                                                  \
			continue;                                             \
		}                                                             \
		do {                                                          \
			status = pt_##kind##_next(dec, item, sizeof(*item));  \
			--n;                                                  \
			if (status < 0) {                                     \
				if (status == -pte_retstack_empty) {          \
					*mark = count;                        \
					step = ipt_seg_retstack;              \
				}                                             \
				count += bad;                                 \
				break;                                        \
			}                                                     \
			count += add;                                         \
		} while (n && !(status & (pts_event_pending | pts_eos)));     \
		if (step != ipt_seg_go)                                       \
			break;                                                \
	}                                                                     \
	l->count = count;                                                     \
	l->status = status;                                                   \
	return step;                                                          \
}

PAR_STEP(insn, pt_insn_decoder, insndec, pt_insn, insn_item, 1, 0)
PAR_STEP(blk, pt_block_decoder, blkdec, pt_block, block, item->ninsn,
	 item->ninsn)

static int par_at(void *arg, uint64_t *offset, uint64_t *mark)
{
	struct par_loop *l = (struct par_loop *) arg;

	*mark = l->count;
	if (l->phase != par_run || l->status < 0)
		return 0;
	return (l->insn ? pt_insn_get_offset(l->insndec, offset)
			: pt_blk_get_offset(l->blkdec, offset)) >= 0;
}

/* A state: the loop's status, then the decoder's. */
static int par_save(const void *arg, void *state)
{
	const struct par_loop *l = (const struct par_loop *) arg;
	char *p = (char *) state;

	memcpy(p, &l->status, sizeof(l->status));
	return l->insn ? ipt_insn_save(l->insndec, p + 16, ipt_insn_state_size())
		       : ipt_blk_save(l->blkdec, p + 16, ipt_blk_state_size());
}

static int par_same(void *arg, const void *state)
{
	struct par_loop *l = (struct par_loop *) arg;
	const char *p = (const char *) state;
	int status;

	memcpy(&status, p, sizeof(status));
	if (status != l->status)
		return 0;
	return l->insn ? ipt_insn_converged(l->insndec, p + 16)
		       : ipt_blk_converged(l->blkdec, p + 16);
}

static const struct ipt_seg_loop par_ops[2] = {
	{ par_start, par_step_blk, par_at, par_save, par_same },
	{ par_start, par_step_insn, par_at, par_save, par_same }
};

struct par_pool {
	struct ipt_seg_split *split;
	pthread_mutex_t lock;
	size_t next;
};

struct par_thread {
	struct par_pool *pool;
	struct par_loop loop, probe;
	pthread_t thread;
};

/* A loop on @image, or, for NULL, on an image of its own. */
static void par_loop_init(struct par_loop *l, const struct pt_config *config,
			  int insn, struct pt_image *image)
{
	memset(l, 0, sizeof(*l));
	l->insn = insn;
	l->config = config;
	l->image = image;
	if (image)
		return;
	l->image = pt_image_alloc("bench");
	if (!l->image || pt_image_set_callback(l->image, read_mem, NULL) < 0)
		die("cannot allocate the image", NULL);
}

static void par_free_decoder_image(struct par_loop *l, int image)
{
	par_free_decoder(l);
	if (image)
		pt_image_free(l->image);
}

static void *par_thread_main(void *arg)
{
	struct par_thread *t = (struct par_thread *) arg;
	struct par_pool *pool = t->pool;
	struct ipt_seg_worker *w = ipt_seg_worker_alloc(pool->split);

	if (!w)
		die("cannot allocate a worker", NULL);
	for (;;) {
		size_t idx;

		pthread_mutex_lock(&pool->lock);
		idx = pool->next++;
		pthread_mutex_unlock(&pool->lock);
		if (idx >= ipt_seg_split_count(pool->split))
			break;
		if (ipt_seg_decode(w, idx, &t->loop, &t->probe) < 0)
			die("cannot decode a piece", NULL);
	}
	ipt_seg_worker_free(w);
	return NULL;
}

static void run_par(const struct pt_config *config, int insn)
{
	unsigned int n = threads ? threads : 1, i;
	struct par_thread *t;
	struct par_pool pool;
	struct ipt_seg_stitch st;
	struct ipt_seg_range r;
	size_t size = 16 + (insn ? ipt_insn_state_size()
				 : ipt_blk_state_size());
	int k;

	pool.split = ipt_seg_split_alloc(config, (size_t) n * 16,
					 &par_ops[insn], size, NULL);
	pool.next = 0;
	t = (struct par_thread *) calloc(n, sizeof(*t));
	if (!pool.split || !t)
		die("cannot split the trace", NULL);
	pthread_mutex_init(&pool.lock, NULL);
	for (i = 0; i < n; ++i) {
		t[i].pool = &pool;
		/* The probe reads through the loop's image, on its
		 * thread. */
		par_loop_init(&t[i].loop, config, insn, NULL);
		par_loop_init(&t[i].probe, config, insn, t[i].loop.image);
		if (pthread_create(&t[i].thread, NULL, par_thread_main, &t[i]))
			die("cannot start a thread", NULL);
	}
	for (i = 0; i < n; ++i)
		pthread_join(t[i].thread, NULL);

	ipt_seg_stitch_init(&st);
	while ((k = ipt_seg_stitch_next(pool.split, &st, &r)) == 1)
		ninsn += r.to - r.from;
	if (k == 2) {
		if (ipt_seg_rerun(pool.split, r.idx, &t[0].loop) < 0)
			die("cannot decode again", NULL);
		ninsn += t[0].loop.count - r.from;
	}
	for (i = 0; i < n; ++i) {
		par_free_decoder_image(&t[i].probe, 0);
		par_free_decoder_image(&t[i].loop, 1);
	}
	free(t);
	pthread_mutex_destroy(&pool.lock);
	ipt_seg_split_free(pool.split);
}
#endif

static void one_pass(const char *layer, const char *mode,
		     const struct pt_config *config)
{
	struct pt_image_section_cache *iscache = NULL;
	struct pt_image *image = NULL;
	int insn = !strcmp(layer, "insn"), blk = !strcmp(layer, "blk");

	ninsn = 0;
	nerrors = 0;
	if (!strcmp(layer, "pkt")) {
		run_pkt(config, !strcmp(mode, "batch"));
		return;
	}
	if (!strcmp(layer, "qry")) {
		run_qry(config);
		return;
	}
	if (!strcmp(layer, "seg")) {
		run_seg(config);
		return;
	}
#ifndef USE_LIBIPT
	if (!strncmp(layer, "par-", 4)) {
		run_par(config, !strcmp(layer, "par-insn"));
		return;
	}
	if (!strcmp(layer, "covwarm")) {
		run_covwarm(config);
		return;
	}
	if (!strcmp(layer, "cov")) {
		image = make_image(mode, &iscache);
		run_cov(config, image);
		pt_image_free(image);
		pt_iscache_free(iscache);
		return;
	}
#else
	if (!strcmp(layer, "cov"))
		blk = 2;
#endif
	if (!insn && !blk)
		die("unknown layer", layer);

	if (warm && w_image) {
		if (insn)
			run_insn(w_insn);
		else
			run_blk(w_blk, blk == 2);
		return;
	}

	image = make_image(mode, &iscache);
	if (insn) {
		struct pt_insn_decoder *dec = pt_insn_alloc_decoder(config);

		if (!dec || pt_insn_set_image(dec, image) < 0)
			die("cannot allocate the instruction decoder", NULL);
		run_insn(dec);
		if (warm)
			w_insn = dec;
		else
			pt_insn_free_decoder(dec);
	} else {
		struct pt_block_decoder *dec = pt_blk_alloc_decoder(config);

		if (!dec || pt_blk_set_image(dec, image) < 0)
			die("cannot allocate the block decoder", NULL);
		run_blk(dec, blk == 2);
		if (warm)
			w_blk = dec;
		else
			pt_blk_free_decoder(dec);
	}
	if (warm) {
		w_image = image;
		w_iscache = iscache;
		return;
	}
	pt_image_free(image);
	pt_iscache_free(iscache);
}

int main(int argc, char **argv)
{
	const char *layer = NULL, *mode = "cb", *dir, *name;
	double min_time = 0.3, t0, t1, total = 0.0;
	struct pt_config config;
	char path[4096];
	uint8_t *trace;
	size_t size;
	long base;
	int i, passes = 0, batch = 1;

#ifdef __GLIBC__
	/* See the header: memory stays with the process from pass to pass;
	 * 32 MiB is the largest mmap threshold glibc takes. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
	for (i = 1; i < argc - 2; i++) {
		if (!strcmp(argv[i], "--layer") && i + 1 < argc - 2)
			layer = argv[++i];
		else if (!strcmp(argv[i], "--image") && i + 1 < argc - 2)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--min-time") && i + 1 < argc - 2)
			min_time = atof(argv[++i]);
		else if (!strcmp(argv[i], "--warm"))
			warm = 1;
		else if (!strcmp(argv[i], "--wall"))
			wall = 1;
#ifndef USE_LIBIPT
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc - 2)
			threads = (unsigned int) atoi(argv[++i]);
#endif
		else
			break;
	}
	if (!layer || i != argc - 2 ||
	    (strcmp(mode, "cb") && strcmp(mode, "file") &&
	     strcmp(mode, "iscache") &&
	     (strcmp(mode, "batch") || strcmp(layer, "pkt")))) {
		fprintf(stderr, "usage: bench --layer pkt|qry|insn|blk|cov|covwarm|seg"
			"|par-insn|par-blk [--threads N] [--wall] "
			"[--image cb|file|iscache|batch] [--warm] "
			"[--min-time SEC] DIR NAME\n");
		return 2;
	}
#ifdef USE_LIBIPT
	if (!strcmp(mode, "batch"))
		die("libipt has no batch packet decoder", NULL);
#endif
	dir = argv[argc - 2];
	name = argv[argc - 1];

	verbose = getenv("BENCH_VERBOSE") ? atoi(getenv("BENCH_VERBOSE")) : 0;
	ZydisDecoderInit(&zdec, ZYDIS_MACHINE_MODE_LONG_64,
			 ZYDIS_STACK_WIDTH_64);
	load_image(dir);
	snprintf(path, sizeof(path), "%s/%s.pt", dir, name);
	trace = load_file(path, &size);

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	snprintf(path, sizeof(path), "%s/%s.cfg", dir, name);
	load_cfg(&config, path);

	if (!strcmp(layer, "qry")) {
		qcache = (struct qinsn *) calloc(QCACHE_SIZE, sizeof(*qcache));
		if (!qcache)
			die("out of memory", NULL);
		/* The harness's own cache is not the decoder's memory. */
		memset(qcache, 0xff, QCACHE_SIZE * sizeof(*qcache));
	}

	base = maxrss_kb();
	/* Warm passes: the first pass fills the caches, untimed. */
	if (warm && (!strcmp(layer, "insn") || !strcmp(layer, "blk")))
		one_pass(layer, mode, &config);
	do {
		int k;

		/* The harness's instruction cache starts cold, untimed; so
		 * qry passes are not batched. */
		if (qcache)
			memset(qcache, 0xff, QCACHE_SIZE * sizeof(*qcache));
		t0 = now();
		for (k = 0; k < batch; k++) {
			one_pass(layer, mode, &config);
			passes++;
		}
		t1 = now();
		total += t1 - t0;
		if (!qcache && t1 - t0 < 1e-3 && batch < (1 << 20))
			batch *= 2;
	} while (total < min_time);

	printf("bytes=%zu insn=%" PRIu64 " passes=%d sec=%.9f mem_kb=%ld "
	       "errors=%d\n", size, ninsn, passes, total / passes,
	       maxrss_kb() - base, nerrors);
	free(trace);
	return 0;
}

/* hvagent.c - Intel PT decoding inside a hypervisor introspection agent.
 *
 * A hypervisor that traces a guest gets two things from it: the trace
 * buffer the processor filled, and the guest's memory, reachable only
 * through the hypervisor's own page-table walk.  Neither may be trusted: a
 * hostile guest can write anything into its code pages and, with the right
 * setup, into the trace.  And the agent runs where there is no libc: no
 * malloc, no printf, no files.
 *
 * This example shows ipt.h in that setting.  The agent part of this file
 * (everything outside HVAGENT_HOST) is built freestanding:
 *
 *     cc -O2 -ffreestanding -nostdlib -fno-builtin \
 *        -I. -c -o hvagent.o examples/hvagent.c
 *
 * and `nm -u hvagent.o` lists nothing but Zydis: ipt.h gets its memory from
 * an arena the hypervisor hands in, through the decoder's own allocator
 * (struct ipt_allocator, no global state), copies with the agent's own
 * loops, reads code only through a read-memory callback
 * (pt_image_set_callback), never touches a file (IPT_NO_STDIO, which also
 * tells Zydis' headers that there is no libc: ZYAN_NO_LIBC), and keeps
 * every function static (IPT_STATIC) so the object exports only
 * hvagent_vcpu_init(), hvagent_start() and hvagent_feed().  Decoding is
 * bounded: the agent stops after a budget of steps (instructions, events,
 * resynchronizations), as a hypervisor must not spend unbounded time in
 * one exit.
 *
 * What a real agent does, and this one too:
 *
 *   - one decoder per virtual CPU, made once in the vCPU's arena and
 *     pointed at each new trace buffer (ipt_insn_set_ring): its caches
 *     stay warm and nothing is allocated per trace;
 *   - the trace decoded in pieces, as the processor writes it: at each
 *     exit the hypervisor says how far the buffer is written
 *     (hvagent_feed), the decoder's end moves on (ipt_insn_extend) and it
 *     goes on where it stood; a packet the processor has not finished
 *     writing is -ipt_pte_need_more, not an error, and the flow comes
 *     out as if the whole trace had been there at once;
 *   - a ring buffer the processor has wrapped around in, read where it
 *     lies: the older trace at the buffer's end, the newer at its start
 *     (ipt_insn_set_ring); a packet the wrap cuts in two is read whole,
 *     and nothing is copied;
 *   - guest pages fetched on demand: a page the guest has not paged in (or
 *     the hypervisor has not copied yet) is not an error.  The decoder
 *     stops before the instruction it needs (-pte_nomap,
 *     ipt_insn_get_fault), the agent asks the hypervisor for that page and
 *     calls pt_insn_next again, and the flow comes out as if all memory had
 *     been there;
 *   - VM entries as the hardware writes them (ipt_insn_set_vm_tolerant):
 *     a guest's trace has a PSB+ and a TIP.PGE at each entry, which
 *     libipt 2.3 takes as errors;
 *   - the guest's flow only: where PIP says the processor runs the host
 *     (VMX root operation, ipt_insn_in_guest() 0), instructions are not
 *     reported.  A trace with no PIP says nothing, and all is reported.
 *
 * The rest of the file (HVAGENT_HOST) is a small hosted driver standing in
 * for the hypervisor: it loads a trace and a code image from files, and
 * prints the address of each instruction the agent reports:
 *
 *     cc -DHVAGENT_HOST -o hvagent examples/hvagent.c hvagent.o -lZydis
 *     ./hvagent [--cpu F/M[/S]] [--missing PCT:SEED] [--times N]
 *               [--pieces MAX:SEED] [--ring N] FILE[:START-END]:ADDR
 *               trace.pt
 *
 * --missing makes PCT percent of the guest's pages (picked by SEED)
 * missing until the agent asks for them; --times decodes the trace N times
 * with the same vCPU; --pieces hands the trace to the agent as the
 * processor would write it, in pieces of 1 to MAX bytes (sizes picked by
 * SEED), instead of all at once; --ring hands it over as a ring buffer
 * of the trace's size that the processor wrapped around in after N
 * bytes (the first N at the ring's end, the rest, in pieces if asked,
 * at its start).  (make hvagent builds both; make test runs it on the
 * real-hardware conformance traces, with and without missing pages, and
 * compares with the expected instruction addresses.)
 */

#include <stddef.h>
#include <stdint.h>

/* What the hypervisor gives the agent and gets back.  No ipt.h types, so
 * the hypervisor side needs only this. */
struct hvagent_guest {
	/* Read up to size bytes of guest memory at gva in the address space
	 * cr3; return the number of bytes read, or a negative number if
	 * nothing is there (now). */
	int (*read)(void *ctx, uint64_t cr3, uint64_t gva, uint8_t *buf,
		    size_t size);
	/* The page at gva in cr3 is needed and was not there: make it
	 * readable (copy it out of the guest, or have the guest page it in)
	 * and return 0, or return a negative number if it cannot be had. */
	int (*fetch)(void *ctx, uint64_t cr3, uint64_t gva);
	void *ctx;
};

struct hvagent_sink {
	/* One executed instruction. */
	void (*insn)(void *ctx, uint64_t ip, unsigned size);
	/* Decoding lost track at a trace offset: error code (a negative
	 * pte_* value); the agent resynchronizes at the next PSB. */
	void (*error)(void *ctx, int code, uint64_t offset);
	void *ctx;
};

struct hvagent_cpu {
	unsigned family, model, stepping;
};

/* A virtual CPU's decoder, made once in an arena of the hypervisor's. */
struct hvagent_vcpu;

/* Make the vCPU's decoder in arena; NULL if the arena is too small. */
struct hvagent_vcpu *hvagent_vcpu_init(const struct hvagent_cpu *cpu,
				       const struct hvagent_guest *guest,
				       void *arena, size_t arena_size);

/* A new trace buffer of the vCPU, @size bytes, a ring the processor writes
 * round and round.  The last @older bytes hold trace written before the
 * processor wrapped around (0: it has not); it goes on writing at the
 * buffer's start, up to where that trace begins.  0, or -1 on bad
 * arguments. */
int hvagent_start(struct hvagent_vcpu *vcpu, const uint8_t *buffer,
		  size_t size, size_t older);

/* The processor has written the first @written bytes of the buffer (after
 * the wrap, if it wrapped; @last: and will write no more).  Decode what is
 * there; the decoder waits where the trace ends for now, and the next call
 * goes on from there.  Returns
 * the number of instructions reported, or -1 on bad arguments. */
int hvagent_feed(struct hvagent_vcpu *vcpu, size_t written, int last,
		 const struct hvagent_sink *sink, unsigned long budget);

#ifndef HVAGENT_HOST

/* ---- the agent's runtime: an arena and byte loops ----
 *
 * ipt.h takes its memory from a struct ipt_allocator handed to the
 * decoder when it is made (ipt_insn_alloc_decoder_with): a context pointer
 * comes with every call, so each virtual CPU (hvagent_vcpu_init()) has an
 * arena of its own and nothing is global.  The free
 * gets the block's size, so the arena keeps no headers. */

struct hv_arena {
	uint8_t *base;
	size_t size, used;
};

enum { hv_align = 16 };

static size_t hv_round(size_t size)
{
	return (size + hv_align - 1) / hv_align * hv_align;
}

static void *hv_alloc(void *context, size_t size)
{
	struct hv_arena *a = (struct hv_arena *) context;
	size_t need = hv_round(size);
	uint8_t *p;

	if (!a || size == 0 || need < size || a->size - a->used < need)
		return NULL;
	p = a->base + a->used;
	a->used += need;
	return p;
}

static void hv_free(void *context, void *ptr, size_t size)
{
	struct hv_arena *a = (struct hv_arena *) context;
	uint8_t *p = (uint8_t *) ptr;

	if (!a || !p)
		return;
	/* Only the last block goes back; the rest when the arena resets. */
	if (p + hv_round(size) == a->base + a->used)
		a->used -= hv_round(size);
}

static void *hv_memcpy(void *dst, const void *src, size_t size)
{
	volatile uint8_t *d = (volatile uint8_t *) dst;
	const uint8_t *s = (const uint8_t *) src;

	/* Whole words where both are aligned: decoders copy their state
	 * (a few KiB) before each call that may have to wait for more
	 * trace. */
	if (!(((uintptr_t) dst | (uintptr_t) src) & 7)) {
		volatile uint64_t *dw = (volatile uint64_t *) dst;
		const uint64_t *sw = (const uint64_t *) src;

		for (; size >= 8; size -= 8)
			*dw++ = *sw++;
		d = (volatile uint8_t *) dw;
		s = (const uint8_t *) sw;
	}
	/* volatile: keeps the compiler from turning the loops into calls
	 * to memcpy, which does not exist here. */
	while (size--)
		*d++ = *s++;
	return dst;
}

static void *hv_memset(void *dst, int c, size_t size)
{
	volatile uint8_t *d = (volatile uint8_t *) dst;

	while (size--)
		*d++ = (uint8_t) c;
	return dst;
}

#if defined(__GNUC__)
__attribute__((unused))
#endif
static int hv_memcmp(const void *a, const void *b, size_t size)
{
	const uint8_t *x = (const uint8_t *) a, *y = (const uint8_t *) b;

	for (; size; --size, ++x, ++y) {
		if (*x != *y)
			return *x < *y ? -1 : 1;
	}
	return 0;
}

/* No default allocator: an object made without the agent's allocator
 * gets no memory, and ipt.h never calls a malloc that is not there. */
#define IPT_MALLOC(n) ((void) (n), (void *) 0)
#define IPT_REALLOC(p, n) ((void) (p), (void) (n), (void *) 0)
#define IPT_FREE(p) ((void) (p))
#define IPT_MEMCPY(d, s, n) hv_memcpy(d, s, n)
#define IPT_MEMSET(d, c, n) hv_memset(d, c, n)
#define IPT_MEMCMP(a, b, n) hv_memcmp(a, b, n)
#define IPT_NO_STDIO
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "../ipt.h"

/* ---- the agent ---- */

struct hvagent_vcpu {
	struct hv_arena arena;
	struct pt_insn_decoder *decoder;
	const struct hvagent_guest *guest;
	/* The trace buffer, how far the processor may write into it, how
	 * much of it the decoder has, and what the decode loop does next:
	 * synchronize (@syncing), else as @status says (fetch an event if
	 * one is pending, else an instruction). */
	uint8_t *buffer;
	size_t room;
	size_t written;
	int status;
	int syncing;
};

/* Guest memory, as ipt.h asks for it: the address space comes with each
 * read, so one image serves every process of the guest. */
static int hv_read_memory(uint8_t *buffer, size_t size,
			  const struct pt_asid *asid, uint64_t ip,
			  void *context)
{
	const struct hvagent_vcpu *v = (const struct hvagent_vcpu *) context;
	uint64_t cr3 = asid ? asid->cr3 : pt_asid_no_cr3;
	int n;

	if (size > 0x7fffffff)
		size = 0x7fffffff;
	n = v->guest->read(v->guest->ctx, cr3, ip, buffer, size);
	if (n < 0)
		return -pte_nomap;
	return n > (int) size ? (int) size : n;
}

struct hvagent_vcpu *hvagent_vcpu_init(const struct hvagent_cpu *cpu,
				       const struct hvagent_guest *guest,
				       void *arena, size_t arena_size)
{
	struct ipt_allocator allocator;
	struct pt_config config;
	struct hv_arena a;
	struct hvagent_vcpu *v;
	static uint8_t none;

	if (!guest || !guest->read)
		return (struct hvagent_vcpu *) 0;
	a.base = (uint8_t *) arena;
	a.size = arena_size;
	a.used = 0;
	v = (struct hvagent_vcpu *) hv_alloc(&a, sizeof(*v));
	if (!v)
		return v;
	v->arena = a;
	v->guest = guest;
	allocator.alloc = hv_alloc;
	allocator.free = hv_free;
	allocator.context = &v->arena;
	/* The decoders never resize: no realloc needed. */
	allocator.realloc = (void *(*)(void *, void *, size_t, size_t)) 0;

	/* No trace yet: each hvagent_start() brings its buffer. */
	pt_config_init(&config);
	config.begin = &none;
	config.end = &none;
	if (cpu && cpu->family) {
		config.cpu.vendor = pcv_intel;
		config.cpu.family = (uint16_t) cpu->family;
		config.cpu.model = (uint8_t) cpu->model;
		config.cpu.stepping = (uint8_t) cpu->stepping;
		(void) pt_cpu_errata(&config.errata, &config.cpu);
	}
	v->decoder = ipt_insn_alloc_decoder_with(&config, &allocator);
	if (!v->decoder ||
	    pt_image_set_callback(pt_insn_get_image(v->decoder),
				  hv_read_memory, v) < 0)
		return (struct hvagent_vcpu *) 0;
	(void) ipt_insn_set_vm_tolerant(v->decoder, 1);
	(void) ipt_insn_set_wait_for_code(v->decoder, 1);
	return v;
}

/* A decoder call stopped at status: if at a page the guest has not given
 * us yet, fetch it.  Returns 1 if the call is to be made again. */
static int hv_fetch(struct hvagent_vcpu *v, int status)
{
	struct ipt_fault fault;

	if (status >= 0 || !v->guest->fetch ||
	    ipt_insn_get_fault(v->decoder, &fault, sizeof(fault)) <= 0)
		return 0;
	return v->guest->fetch(v->guest->ctx, fault.asid.cr3,
			       fault.addr) >= 0;
}

/* A sync call returned status: if it stopped at a missing page, fetch it
 * and synchronize at the same PSB again. */
static int hv_sync(struct hvagent_vcpu *v, int status)
{
	while (hv_fetch(v, status)) {
		uint64_t sync = 0;

		(void) pt_insn_get_sync_offset(v->decoder, &sync);
		status = pt_insn_sync_set(v->decoder, sync);
	}
	return status;
}

/* The decoder reads the ring as it lies: the older trace at the end of
 * the buffer, then the newer at its start, growing (ipt_insn_set_ring,
 * no copy). */
int hvagent_start(struct hvagent_vcpu *v, const uint8_t *buffer,
		  size_t size, size_t older)
{
	uint8_t *end;

	if (!v || !buffer || older > size)
		return -1;
	/* ipt.h only reads the trace, although the field is not const. */
	v->buffer = (uint8_t *) (uintptr_t) buffer;
	v->room = size - older;
	v->written = 0;
	v->syncing = 1;
	v->status = 0;
	end = v->buffer + size;
	if (ipt_insn_set_ring(v->decoder, end - older, end, v->buffer,
			      v->buffer) < 0 ||
	    ipt_insn_extend(v->decoder, v->buffer, 1) < 0)
		return -1;
	return 0;
}

int hvagent_feed(struct hvagent_vcpu *v, size_t written, int last,
		 const struct hvagent_sink *sink, unsigned long budget)
{
	struct pt_insn_decoder *decoder;
	struct pt_insn insn;
	struct pt_event event;
	unsigned long count = 0, steps = 0;
	int status;

	if (!v || !v->buffer || !sink || written < v->written ||
	    written > v->room)
		return -1;
	decoder = v->decoder;
	if (ipt_insn_extend(decoder, v->buffer + written, !last) < 0)
		return -1;
	v->written = written;

	/* Decode to where the trace ends for now.  After an error, go on at
	 * the next PSB: a corrupted stretch of trace costs that stretch
	 * only.  A missing page is fetched and the same call made again; a
	 * sync that stopped at one starts over at the same PSB. */
	for (; steps < budget; ++steps) {
		if (v->syncing) {
			status = hv_sync(v, pt_insn_sync_forward(decoder));
			/* No PSB yet, or not all of its PSB+. */
			if (status == -ipt_pte_need_more ||
			    (status == -pte_eos && !last))
				break;
			v->syncing = 0;
			v->status = status;
			continue;
		}
		status = v->status;
		if (status < 0) {
			if (status == -pte_eos)
				break;
			if (sink->error) {
				uint64_t offset = 0;

				(void) pt_insn_get_offset(decoder, &offset);
				sink->error(sink->ctx, status, offset);
			}
			v->syncing = 1;
			continue;
		}
		if (status & pts_event_pending) {
			status = pt_insn_event(decoder, &event, sizeof(event));
			if (status == -ipt_pte_need_more)
				break;
			if (!hv_fetch(v, status))
				v->status = status;
			continue;
		}
		status = pt_insn_next(decoder, &insn, sizeof(insn));
		if (status == -ipt_pte_need_more)
			break;
		/* The last instruction of a block may come with an error.
		 * The host's flow is not the guest's. */
		if ((status >= 0 || insn.iclass != ptic_error) &&
		    ipt_insn_in_guest(decoder) != 0) {
			count++;
			if (sink->insn)
				sink->insn(sink->ctx, insn.ip, insn.size);
		}
		v->status = hv_fetch(v, status) ? 0 : status;
	}
	return (int) (count > 0x7fffffff ? 0x7fffffff : count);
}

#else /* HVAGENT_HOST */

/* ---- the hosted driver: files in, addresses out ---- */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct host_image {
	uint8_t *bytes;
	size_t size;
	uint64_t base;
	/* Pages not there until fetched: PCT percent, picked by a hash of
	 * the page and SEED; @fetched marks those fetched since. */
	unsigned pct;
	uint64_t seed;
	uint8_t *fetched;
	unsigned long fetches;
};

static uint8_t *host_load(const char *path, long start, long end,
			  size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	if (end <= 0) {
		fseek(f, 0, SEEK_END);
		end = ftell(f);
	}
	n = end - start;
	buf = (uint8_t *) malloc(n > 0 ? (size_t) n : 1);
	if (!buf || n < 0 || fseek(f, start, SEEK_SET) != 0 ||
	    fread(buf, 1, (size_t) n, f) != (size_t) n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*size = (size_t) n;
	return buf;
}

/* The page at offset off of the image, counted from the image's first. */
static uint64_t host_page(const struct host_image *img, uint64_t off)
{
	return ((img->base + off) >> 12) - (img->base >> 12);
}

/* Is the page at offset off of the image not there (yet)? */
static int host_missing(const struct host_image *img, uint64_t off)
{
	uint64_t page = (img->base + off) >> 12, h;

	if (!img->pct || img->fetched[host_page(img, off)])
		return 0;
	h = (page ^ img->seed) * 0x9e3779b97f4a7c15ull;
	return (h >> 32) % 100 < img->pct;
}

/* The guest's memory: one image at one address, in every address space;
 * a read stops at a missing page, as a view of memory does. */
static int host_read(void *ctx, uint64_t cr3, uint64_t gva, uint8_t *buf,
		     size_t size)
{
	const struct host_image *img = (const struct host_image *) ctx;
	uint64_t off, n;

	(void) cr3;
	if (gva < img->base || gva - img->base >= img->size)
		return -1;
	off = gva - img->base;
	if (host_missing(img, off))
		return -1;
	if (size > img->size - off)
		size = (size_t) (img->size - off);
	for (n = ((gva | 0xfff) + 1) - gva; n < size; n += 0x1000)
		if (host_missing(img, off + n)) {
			size = (size_t) n;
			break;
		}
	memcpy(buf, img->bytes + off, size);
	return (int) size;
}

static int host_fetch(void *ctx, uint64_t cr3, uint64_t gva)
{
	struct host_image *img = (struct host_image *) ctx;
	uint64_t off;

	(void) cr3;
	if (gva < img->base || gva - img->base >= img->size)
		return -1;
	off = gva - img->base;
	if (!host_missing(img, off))
		return -1;
	img->fetched[host_page(img, off)] = 1;
	img->fetches++;
	return 0;
}

static void host_insn(void *ctx, uint64_t ip, unsigned size)
{
	(void) ctx;
	(void) size;
	printf("%016" PRIx64 "\n", ip);
}

static void host_error(void *ctx, int code, uint64_t offset)
{
	(void) ctx;
	printf("[%" PRIx64 ": error %d]\n", offset, code);
}

int main(int argc, char **argv)
{
	static uint8_t arena[1 << 20];
	struct hvagent_cpu cpu = { 0, 0, 0 };
	struct hvagent_guest guest;
	struct hvagent_sink sink;
	struct hvagent_vcpu *vcpu;
	struct host_image img;
	uint8_t *trace;
	size_t tsize;
	char *spec, *c1, *c2;
	long start = 0, end = 0;
	unsigned times = 1, t, piece_max = 0;
	uint64_t piece_seed = 0;
	size_t older = 0, newer;
	uint8_t *ring;
	int i = 1, n = 0;

	memset(&img, 0, sizeof(img));
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--cpu"))
			sscanf(argv[i + 1], "%u/%u/%u", &cpu.family,
			       &cpu.model, &cpu.stepping);
		else if (!strcmp(argv[i], "--missing"))
			sscanf(argv[i + 1], "%u:%" SCNu64, &img.pct,
			       &img.seed);
		else if (!strcmp(argv[i], "--times"))
			times = (unsigned) strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--pieces"))
			sscanf(argv[i + 1], "%u:%" SCNu64, &piece_max,
			       &piece_seed);
		else if (!strcmp(argv[i], "--ring"))
			older = (size_t) strtoul(argv[i + 1], NULL, 0);
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: %s [--cpu F/M[/S]] [--missing PCT:SEED] "
			"[--times N] [--pieces MAX:SEED] [--ring N] "
			"FILE[:START-END]:ADDR TRACE\n", argv[0]);
		return 2;
	}
	spec = argv[i];
	c1 = strchr(spec, ':');
	if (!c1)
		return 2;
	*c1 = 0;
	c2 = strchr(c1 + 1, ':');
	if (c2) {
		start = strtol(c1 + 1, NULL, 0);
		end = strtol(strchr(c1 + 1, '-') ? strchr(c1 + 1, '-') + 1
			     : "0", NULL, 0);
		img.base = strtoull(c2 + 1, NULL, 0);
	} else
		img.base = strtoull(c1 + 1, NULL, 0);
	img.bytes = host_load(spec, start, end, &img.size);
	trace = host_load(argv[i + 1], 0, 0, &tsize);
	if (!img.bytes || !trace) {
		fprintf(stderr, "cannot read %s or %s\n", spec, argv[i + 1]);
		return 1;
	}
	img.fetched = (uint8_t *) calloc((img.size >> 12) + 2, 1);
	/* The ring as the processor leaves it after wrapping around after
	 * the first @older bytes: those at its end, the rest at its start. */
	if (older > tsize)
		older = tsize;
	newer = tsize - older;
	ring = (uint8_t *) malloc(tsize ? tsize : 1);
	if (!ring)
		return 1;
	memcpy(ring + newer, trace, older);
	memcpy(ring, trace + older, newer);

	guest.read = host_read;
	guest.fetch = host_fetch;
	guest.ctx = &img;
	sink.insn = host_insn;
	sink.error = host_error;
	sink.ctx = NULL;
	vcpu = hvagent_vcpu_init(&cpu, &guest, arena, sizeof(arena));
	if (!vcpu || !img.fetched) {
		fprintf(stderr, "cannot make the vCPU's decoder\n");
		return 1;
	}
	/* The same vCPU for every trace; the trace written all at once, or
	 * piece by piece. */
	for (t = 0; t < times && n >= 0; ++t) {
		size_t written = 0;

		n = hvagent_start(vcpu, ring, tsize, older);
		while (n >= 0 && written < newer) {
			size_t step = newer - written;
			int more;

			if (piece_max) {
				piece_seed = piece_seed *
					6364136223846793005ull +
					1442695040888963407ull;
				step = 1 + (size_t) ((piece_seed >> 33) %
						     piece_max);
				if (step > newer - written)
					step = newer - written;
			}
			written += step;
			more = hvagent_feed(vcpu, written, written == newer,
					    &sink, 10000000ul);
			n = more < 0 ? more : n + more;
		}
		if (n >= 0 && !newer)
			n = hvagent_feed(vcpu, 0, 1, &sink, 10000000ul);
	}
	fprintf(stderr, "%d instructions, %lu pages fetched\n", n,
		img.fetches);
	free(img.fetched);
	free(ring);
	free(trace);
	free(img.bytes);
	return n < 0;
}

#endif /* HVAGENT_HOST */

/* fuzz.h - what the ipt.h fuzz harnesses share.
 *
 * Every harness reads its input the same way: a fixed-size header that
 * chooses the configuration (CPU, errata, decoder flags, timing, how to
 * synchronize), then harness-specific fields, then the trace.  Bytes the
 * input does not have read as zero, so any input is valid and the fuzzer
 * never wastes time on rejected ones.  The seed maker (mkseed.c) writes the
 * same layout through fz_put_*.
 *
 * The trace and the code image are copied into buffers of exactly their
 * size, so AddressSanitizer sees any read outside [begin; end).
 *
 * A harness calls fz_fail() when a decoder breaks a rule that holds for any
 * input (no progress, a size that does not match, a bad round trip); that
 * aborts, and the fuzzer keeps the input as a crash.
 */
#ifndef IPT_FUZZ_H
#define IPT_FUZZ_H

#include "ipt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define FZ static __attribute__((unused))
#else
#define FZ static
#endif

/* ---- reading the input ---- */

struct fz {
	const uint8_t *p;
	size_t n;
};

FZ void fz_init(struct fz *in, const uint8_t *data, size_t size)
{
	in->p = data;
	in->n = size;
}

FZ uint8_t fz_u8(struct fz *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = in->p[0];
		in->p++;
		in->n--;
	}
	return v;
}

FZ uint16_t fz_u16(struct fz *in)
{
	uint16_t lo = fz_u8(in);

	return (uint16_t) (lo | (fz_u8(in) << 8));
}

FZ uint32_t fz_u32(struct fz *in)
{
	uint32_t lo = fz_u16(in);

	return lo | ((uint32_t) fz_u16(in) << 16);
}

FZ uint64_t fz_u64(struct fz *in)
{
	uint64_t lo = fz_u32(in);

	return lo | ((uint64_t) fz_u32(in) << 32);
}

/* A heap copy of the next @size bytes (fewer if the input ends), exactly
 * as large as what it holds; a one-byte dummy if empty so the result is
 * never NULL.  *@got says how many bytes are in it. */
FZ uint8_t *fz_copy(struct fz *in, size_t size, size_t *got)
{
	uint8_t *buf;

	if (size > in->n)
		size = in->n;
	buf = (uint8_t *) malloc(size ? size : 1);
	if (!buf)
		abort();
	if (size)
		memcpy(buf, in->p, size);
	in->p += size;
	in->n -= size;
	*got = size;
	return buf;
}

FZ void fz_fail(const char *what, long long a, long long b)
{
	fprintf(stderr, "fuzz invariant broken: %s (%lld, %lld)\n", what, a, b);
	abort();
}

/* ---- the allocator ----
 *
 * Every object the harnesses make gets its memory from fz_allocator()
 * (ipt_*_with): malloc and free underneath, and under AddressSanitizer each
 * free checks that ipt.h gives back the size it asked for.  It has no
 * realloc, so ipt.h's alloc-copy-free path is the one taken.  The input
 * may pick one allocation to fail (fz_header: the top byte of the errata
 * word, which no erratum uses): the decoders must then report -pte_nomem
 * or do without, and LeakSanitizer sees anything they leak. */

#if defined(__SANITIZE_ADDRESS__)
#define FZ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif

#ifdef FZ_ASAN
/* AddressSanitizer's: the size a live block was allocated with. */
size_t __sanitizer_get_allocated_size(const volatile void *p);
#endif

struct fz_alloc_state {
	/* Allocations so far, and the one to fail (1-based; 0: none). */
	unsigned long calls, fail_at;
};

FZ struct fz_alloc_state fz_alloc_state;

FZ void fz_alloc_fail_at(unsigned long n)
{
	fz_alloc_state.calls = 0;
	fz_alloc_state.fail_at = n;
}

FZ void *fz_alloc(void *context, size_t size)
{
	(void) context;
	if (++fz_alloc_state.calls == fz_alloc_state.fail_at)
		return NULL;
	return malloc(size);
}

FZ void fz_free(void *context, void *ptr, size_t size)
{
	(void) context;
	(void) size;
#ifdef FZ_ASAN
	if (ptr && __sanitizer_get_allocated_size(ptr) != size)
		fz_fail("freed with another size than allocated",
			(long long) __sanitizer_get_allocated_size(ptr),
			(long long) size);
#endif
	free(ptr);
}

FZ const struct ipt_allocator *fz_allocator(void)
{
	static const struct ipt_allocator allocator = {
		fz_alloc, fz_free, NULL, NULL
	};

	return &allocator;
}

/* ---- open bugs ----
 *
 * A bug the fuzzer found and its owner has not fixed yet would stop every
 * run at once.  Until it is fixed the harnesses steer around it, unless
 * built with -DFZ_STRICT (the strict replay of regress/ in make test, with
 * KNOWN listing the inputs expected to fail).  Each workaround names its
 * entry in KNOWN. */

#ifdef FZ_STRICT
#define FZ_LENIENT 0
#else
#define FZ_LENIENT 1
#endif

/* ---- the common header ---- */

enum {
	/* How the harness synchronizes: flags & fz_sync_mask. */
	fz_sync_forward = 0,
	fz_sync_backward = 1,
	fz_sync_set = 2,
	fz_sync_mask = 3,
	/* Fill in the CPU's errata with pt_cpu_errata(). */
	fz_cpu_errata = 1 << 2,
	/* Install a decode callback for unknown packets. */
	fz_unknown_cb = 1 << 3,
	/* Image: allocate one and pt_*_set_image() it, rather than using the
	 * decoder's own. */
	fz_own_image = 1 << 4,
	/* Image: the read callback returns at most a few bytes per call,
	 * as a guest page boundary would. */
	fz_short_reads = 1 << 5,
	/* Image: the read callback fails now and then. */
	fz_flaky_reads = 1 << 6,
	/* Use pt_*_resync() instead of sync_forward after an error. */
	fz_resync = 1 << 7
};

enum { fz_header_size = 24 };

struct fz_header {
	uint8_t flags;
	/* Raw decoder flag bits: pt_conf_flags.variant.reserved[0]. */
	uint8_t dflags;
	uint8_t family;
	uint8_t model;
	uint8_t stepping;
	uint8_t mtc_freq;
	uint8_t nom_freq;
	/* The size the caller claims for struct pt_event (0: its real size). */
	uint8_t evsize;
	/* Raw errata bits: the first word of struct pt_errata, but for the
	 * top byte, which picks an allocation to fail (0: none). */
	uint32_t errata;
	uint32_t cpuid_0x15_eax;
	uint32_t cpuid_0x15_ebx;
	/* For fz_sync_set: the offset, modulo the trace size. */
	uint32_t sync_offset;
};

FZ void fz_header(struct fz *in, struct fz_header *h)
{
	h->flags = fz_u8(in);
	h->dflags = fz_u8(in);
	h->family = fz_u8(in);
	h->model = fz_u8(in);
	h->stepping = fz_u8(in);
	h->mtc_freq = fz_u8(in);
	h->nom_freq = fz_u8(in);
	h->evsize = fz_u8(in);
	h->errata = fz_u32(in);
	h->cpuid_0x15_eax = fz_u32(in);
	h->cpuid_0x15_ebx = fz_u32(in);
	h->sync_offset = fz_u32(in);
	fz_alloc_fail_at(h->errata >> 24);
}

/* The unknown-packet callback: claims that a packet of 1..4 bytes starts
 * at @pos (more than may be left: the decoder must check), or fails. */
FZ int fz_decode_unknown(struct pt_packet_unknown *unknown,
			     const struct pt_config *config,
			     const uint8_t *pos, void *context)
{
	(void) context;
	if (!unknown || !config || pos < config->begin || config->end <= pos)
		fz_fail("unknown-packet callback outside the trace",
			pos ? (long long) (pos - config->begin) : -1, 0);
	unknown->priv = NULL;
	if ((pos[0] & 0xf0) == 0xf0)
		return -pte_bad_opc;
	return 1 + (pos[0] & 3);
}

FZ void fz_config(const struct fz_header *h, struct pt_config *config,
		      uint8_t *trace, size_t size)
{
	pt_config_init(config);
	config->begin = trace;
	config->end = trace + size;
	config->cpu.vendor = h->family ? pcv_intel : pcv_unknown;
	config->cpu.family = h->family;
	config->cpu.model = h->model;
	config->cpu.stepping = h->stepping;
	if (h->flags & fz_cpu_errata)
		(void) pt_cpu_errata(&config->errata, &config->cpu);
	{
		uint32_t word;

		memcpy(&word, &config->errata, sizeof(word));
		word |= h->errata & 0xffffffu;
		memcpy(&config->errata, &word, sizeof(word));
	}
	config->cpuid_0x15_eax = h->cpuid_0x15_eax;
	config->cpuid_0x15_ebx = h->cpuid_0x15_ebx;
	config->mtc_freq = h->mtc_freq;
	config->nom_freq = h->nom_freq;
	config->flags.variant.reserved[0] = h->dflags;
	if (h->flags & fz_unknown_cb)
		config->decode.callback = fz_decode_unknown;
}

/* ---- the code image of the block and instruction harnesses ----
 *
 * After the common header: base (u64), size (u16), filter config (u16),
 * four filter ranges (u16 start, u16 length, relative to base), then the
 * code bytes, then the trace. */

struct fz_image {
	uint64_t base;
	uint8_t *code;
	size_t size;
	uint8_t flags;
	unsigned int calls;
};

/* The guest-memory callback: the only way code reaches the decoders. */
FZ int fz_read_memory(uint8_t *buffer, size_t size,
			  const struct pt_asid *asid, uint64_t ip,
			  void *context)
{
	struct fz_image *img = (struct fz_image *) context;
	uint64_t offset;
	size_t n;

	(void) asid;
	if (!buffer || !img)
		fz_fail("read-memory callback without buffer", 0, 0);
	img->calls++;
	if ((img->flags & fz_flaky_reads) && (img->calls % 7) == 0)
		return -pte_nomap;
	if (ip < img->base)
		return -pte_nomap;
	offset = ip - img->base;
	if (offset >= img->size)
		return -pte_nomap;
	n = img->size - (size_t) offset;
	if (n > size)
		n = size;
	if ((img->flags & fz_short_reads) && n > 3)
		n = 3;
	/* Write all of @size so that ASan sees a too-small buffer. */
	memset(buffer, 0xcc, size);
	memcpy(buffer, img->code + offset, n);
	return (int) n;
}

FZ void fz_image_read(struct fz *in, const struct fz_header *h,
			  struct fz_image *img, struct pt_config *config)
{
	uint16_t size, cfg;
	uint64_t *range[4][2];
	int i;

	img->base = fz_u64(in);
	size = fz_u16(in);
	cfg = fz_u16(in);
	range[0][0] = &config->addr_filter.addr0_a;
	range[0][1] = &config->addr_filter.addr0_b;
	range[1][0] = &config->addr_filter.addr1_a;
	range[1][1] = &config->addr_filter.addr1_b;
	range[2][0] = &config->addr_filter.addr2_a;
	range[2][1] = &config->addr_filter.addr2_b;
	range[3][0] = &config->addr_filter.addr3_a;
	range[3][1] = &config->addr_filter.addr3_b;
	config->addr_filter.config.addr_cfg = cfg;
	for (i = 0; i < 4; ++i) {
		uint64_t start = img->base + fz_u16(in);

		*range[i][0] = start;
		*range[i][1] = start + fz_u16(in);
	}
	img->code = fz_copy(in, size, &img->size);
	img->flags = h->flags;
	img->calls = 0;
}

/* The input of the harnesses that decode one trace twice over the same
 * code and compare (fuzz_fault.c, fuzz_stream.c): header, image, trace.
 * No allocation fails, no packet callback, the image's address filters
 * kept.  @limit: how many instructions a decode goes at most, as code
 * without trace runs forever, and slowly while it walks towards an event
 * it never reaches; a few instructions per trace byte are plenty. */
struct fz_twice {
	struct fz in;
	struct fz_header h;
	struct fz_image img;
	struct pt_config config;
	uint8_t *trace;
	size_t tsize;
	uint64_t limit;
};

FZ void fz_twice_read(struct fz_twice *t, const uint8_t *data, size_t size)
{
	struct pt_conf_addr_filter filter;

	fz_init(&t->in, data, size);
	fz_header(&t->in, &t->h);
	fz_alloc_fail_at(0);
	pt_config_init(&t->config);
	fz_image_read(&t->in, &t->h, &t->img, &t->config);
	t->trace = fz_copy(&t->in, t->in.n, &t->tsize);
	filter = t->config.addr_filter;
	fz_config(&t->h, &t->config, t->trace, t->tsize);
	t->config.addr_filter = filter;
	t->config.decode.callback = NULL;
	t->limit = 2048 + (uint64_t) t->tsize * 4;
	if (t->limit > (1u << 16))
		t->limit = 1u << 16;
}

FZ void fz_twice_free(struct fz_twice *t)
{
	free(t->img.code);
	free(t->trace);
}

/* A struct pt_event buffer of exactly the size the caller claims, so that
 * writing past that size is caught.  The decoders must accept any size up
 * to sizeof(struct pt_event) that holds the fixed fields, and sizes above
 * it. */
struct fz_event {
	struct pt_event *event;
	size_t size;
};

FZ void fz_event_init(struct fz_event *ev, const struct fz_header *h)
{
	ev->size = h->evsize ? h->evsize : sizeof(struct pt_event);
	ev->event = (struct pt_event *) malloc(ev->size);
	if (!ev->event)
		abort();
}

FZ void fz_event_fini(struct fz_event *ev)
{
	free(ev->event);
}

/* A CR3 to filter on (ipt_*_set_cr3_filter): that of the @pick % 4-th
 * PIP among the trace's first packets, or, if there are fewer, one that is
 * none of theirs. */
FZ uint64_t fz_pip_cr3(const struct pt_config *config, uint32_t pick)
{
	struct pt_packet_decoder *d = pt_pkt_alloc_decoder(config);
	struct pt_packet p;
	uint64_t cr3 = 0x1000 + (uint64_t) pick * 0x20;
	int status, n = 0;

	if (!d)
		return cr3;
	pick %= 4;
	for (status = pt_pkt_sync_forward(d); status >= 0 && n < 4096; ++n) {
		status = pt_pkt_next(d, &p, sizeof(p));
		if (status < 0 || p.type != ppt_pip)
			continue;
		if (!pick--) {
			cr3 = p.payload.pip.cr3;
			break;
		}
	}
	pt_pkt_free_decoder(d);
	return cr3;
}

/* ---- writing inputs (the seed maker) ---- */

FZ void fz_put(FILE *f, uint64_t v, int bytes)
{
	while (bytes--) {
		fputc((int) (v & 0xff), f);
		v >>= 8;
	}
}

FZ void fz_put_header(FILE *f, const struct fz_header *h)
{
	fz_put(f, h->flags, 1);
	fz_put(f, h->dflags, 1);
	fz_put(f, h->family, 1);
	fz_put(f, h->model, 1);
	fz_put(f, h->stepping, 1);
	fz_put(f, h->mtc_freq, 1);
	fz_put(f, h->nom_freq, 1);
	fz_put(f, h->evsize, 1);
	fz_put(f, h->errata, 4);
	fz_put(f, h->cpuid_0x15_eax, 4);
	fz_put(f, h->cpuid_0x15_ebx, 4);
	fz_put(f, h->sync_offset, 4);
}

/* ---- the sideband harness's header (fuzz_sb.c) ----
 *
 * It has no trace: a perf_event stream follows, after the configuration
 * of the stream and the trace decoder events the session is given. */

enum {
	/* The stream's decoder is primary: it may switch images. */
	fz_sb_primary = 1 << 0,
	/* A second, secondary decoder reads the same stream. */
	fz_sb_secondary = 1 << 1,
	/* Records are printed (to /dev/null), by print_flags. */
	fz_sb_print = 1 << 2,
	/* vdso files are configured (they do not exist). */
	fz_sb_vdso = 1 << 3,
	/* The most sample types a sample configuration gets, and events. */
	fz_sb_max_stypes = 4,
	fz_sb_event_size = 28
};

struct fz_sb_header {
	uint8_t flags;
	/* enum pt_sb_print_flag bits. */
	uint8_t print_flags;
	/* The allocation to fail (0: none). */
	uint8_t fail_at;
	/* Sample configuration entries, at most fz_sb_max_stypes. */
	uint8_t nstypes;
	struct pev_sample_type stypes[fz_sb_max_stypes];
	uint64_t sample_type;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	uint64_t tsc_offset;
	uint64_t kernel_start;
	/* Then nevents events, fz_sb_event_size bytes each: type (u8),
	 * ip_suppressed (u8), time since the last event (u16), and 24 bytes
	 * of the event's variant (its IPs). */
	uint8_t nevents;
};

FZ void fz_sb_header(struct fz *in, struct fz_sb_header *h)
{
	int i;

	h->flags = fz_u8(in);
	h->print_flags = fz_u8(in);
	h->fail_at = fz_u8(in);
	h->nstypes = fz_u8(in) % (fz_sb_max_stypes + 1);
	for (i = 0; i < h->nstypes; ++i) {
		h->stypes[i].identifier = fz_u64(in);
		h->stypes[i].sample_type = fz_u64(in);
	}
	h->sample_type = fz_u64(in);
	h->time_shift = fz_u16(in);
	h->time_mult = fz_u32(in);
	h->time_zero = fz_u64(in);
	h->tsc_offset = fz_u64(in);
	h->kernel_start = fz_u64(in);
	h->nevents = fz_u8(in);
}

FZ void fz_sb_put_header(FILE *f, const struct fz_sb_header *h)
{
	int i;

	fz_put(f, h->flags, 1);
	fz_put(f, h->print_flags, 1);
	fz_put(f, h->fail_at, 1);
	fz_put(f, h->nstypes, 1);
	for (i = 0; i < h->nstypes; ++i) {
		fz_put(f, h->stypes[i].identifier, 8);
		fz_put(f, h->stypes[i].sample_type, 8);
	}
	fz_put(f, h->sample_type, 8);
	fz_put(f, h->time_shift, 2);
	fz_put(f, h->time_mult, 4);
	fz_put(f, h->time_zero, 8);
	fz_put(f, h->tsc_offset, 8);
	fz_put(f, h->kernel_start, 8);
	fz_put(f, h->nevents, 1);
}

/* How many iterations a decode loop may take before it counts as a hang:
 * generous, but linear in the trace. */
FZ size_t fz_budget(size_t trace_size, size_t per_byte)
{
	return trace_size * per_byte + 4096;
}

#endif

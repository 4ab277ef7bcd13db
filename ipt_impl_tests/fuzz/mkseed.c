/* mkseed.c - write seed inputs for the fuzz harnesses.
 *
 *     mkseed KIND [ptdump/ptxed options] TRACE      > seed
 *     mkseed gen DIR                                 (needs the encoder)
 *
 * KIND is pkt, evt, qry, blk or insn.  The options are the ones the
 * conformance MANIFEST passes (--cpu F/M[/S], --mtc-freq, --nom-freq,
 * --cpuid-0x15.eax/ebx, --raw FILE[:START-END]:ADDR, --pt FILE); others are
 * ignored.  Traces and images are cut to 64 KiB.
 *
 * `gen` writes small traces made with ipt.h's own encoder, with the code
 * they run over, to DIR/<harness>/, and encoder-harness inputs to
 * DIR/enc/. */
#include "fuzz.h"

enum { max_part = 0xffff };

static uint8_t *load(const char *path, uint64_t start, uint64_t end,
		     size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f) {
		perror(path);
		exit(1);
	}
	buf = (uint8_t *) malloc(max_part);
	if (!buf || fseek(f, (long) start, SEEK_SET) != 0)
		exit(1);
	if (end && end - start < max_part)
		n = fread(buf, 1, (size_t) (end - start), f);
	else
		n = fread(buf, 1, max_part, f);
	fclose(f);
	*size = n;
	return buf;
}

static void put_image(FILE *out, uint64_t base, const uint8_t *code,
		      size_t size)
{
	int i;

	fz_put(out, base, 8);
	fz_put(out, size, 2);
	fz_put(out, 0, 2);
	for (i = 0; i < 8; ++i)
		fz_put(out, 0, 2);
	fwrite(code, 1, size, out);
}

static void put_seed(FILE *out, const char *kind, const struct fz_header *h,
		     uint64_t base, const uint8_t *code, size_t csize,
		     const uint8_t *trace, size_t tsize)
{
	fz_put_header(out, h);
	if (!strcmp(kind, "qry"))
		fz_put(out, 0, 1);
	else if (!strcmp(kind, "blk") || !strcmp(kind, "insn") ||
		 !strcmp(kind, "cov"))
		put_image(out, base, code, csize);
	fwrite(trace, 1, tsize, out);
}

/* A small program and the trace of one run through it:
 *
 *   0x1000: mov eax, 3          b8 03 00 00 00
 *   0x1005: call 0x1010         e8 06 00 00 00
 *   0x100a: dec eax             ff c8
 *   0x100c: jnz 0x1005          75 f7
 *   0x100e: jmp rax             ff e0
 *   0x1010: ret                 c3
 *
 * Three compressed returns and three conditional jumps: TNT 111110. */
static const uint8_t gen_code[] = {
	0xb8, 0x03, 0x00, 0x00, 0x00, 0xe8, 0x06, 0x00, 0x00, 0x00,
	0xff, 0xc8, 0x75, 0xf7, 0xff, 0xe0, 0xc3, 0x90, 0x90, 0x90
};

static size_t gen_trace(uint8_t *buf, size_t cap, int variant)
{
	struct pt_encoder *encoder;
	struct pt_config config;
	struct pt_packet p;
	uint64_t offset = 0;
	int i;

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + cap;
	encoder = pt_alloc_encoder(&config);
	if (!encoder)
		exit(1);

#define EMIT(t)                                                              \
	do {                                                                 \
		p.type = t;                                                  \
		(void) pt_enc_next(encoder, &p);                             \
		memset(&p, 0, sizeof(p));                                    \
	} while (0)

	memset(&p, 0, sizeof(p));
	EMIT(ppt_psb);
	p.payload.tsc.tsc = 0x1000;
	EMIT(ppt_tsc);
	p.payload.cbr.ratio = 36;
	EMIT(ppt_cbr);
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	EMIT(ppt_mode);
	p.payload.pip.cr3 = 0x12345000;
	EMIT(ppt_pip);
	EMIT(ppt_psbend);
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = 0x1000;
	EMIT(ppt_tip_pge);
	for (i = 0; i < 2 + variant; ++i) {
		p.payload.mtc.ctc = (uint8_t) i;
		EMIT(ppt_mtc);
		p.payload.cyc.value = 5 + i;
		EMIT(ppt_cyc);
	}
	/* ret (compressed), jnz taken, ret, jnz taken, ret, jnz not taken */
	p.payload.tnt.bit_size = 6;
	p.payload.tnt.payload = variant & 1 ? 0x3e : 0x3a;
	EMIT(ppt_tnt_8);
	if (variant & 2) {
		p.payload.ip.ipc = pt_ipc_update_16;
		p.payload.ip.ip = 0x1010;
		EMIT(ppt_fup);
		p.payload.mode.leaf = pt_mol_tsx;
		p.payload.mode.bits.tsx.intx = 1;
		EMIT(ppt_mode);
		EMIT(ppt_ovf);
	}
	if (variant == 3) {
		p.payload.ptw.plc = 1;
		p.payload.ptw.payload = 0xdeadbeef;
		EMIT(ppt_ptw);
	}
	/* Disabled at the indirect jump. */
	p.payload.ip.ipc = pt_ipc_update_32;
	p.payload.ip.ip = 0x2000;
	EMIT(ppt_tip_pgd);
	EMIT(ppt_pad);
#undef EMIT
	(void) pt_enc_get_offset(encoder, &offset);
	pt_free_encoder(encoder);
	return (size_t) offset;
}

static FILE *open_seed(const char *dir, const char *kind, int n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/gen-%d", dir, kind, n);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	return f;
}

static void gen(const char *dir)
{
	static const char *const kinds[] = { "pkt", "evt", "qry", "blk",
					     "insn" };
	struct fz_header h;
	uint8_t trace[512];
	int variant, k, i;

	memset(&h, 0, sizeof(h));
	h.family = 6;
	h.model = 85;
	h.mtc_freq = 3;
	h.nom_freq = 36;
	h.cpuid_0x15_eax = 2;
	h.cpuid_0x15_ebx = 200;
	h.flags = fz_cpu_errata;
	for (variant = 0; variant < 4; ++variant) {
		size_t n = gen_trace(trace, sizeof(trace), variant);

		for (k = 0; k < 5; ++k) {
			FILE *f = open_seed(dir, kinds[k], variant);

			h.dflags = (uint8_t) (variant ? 0x1f : 0);
			put_seed(f, kinds[k], &h, 0x1000, gen_code,
				 sizeof(gen_code), trace, n);
			fclose(f);
		}
	}

	/* Encoder inputs: every packet type with a few payloads. */
	for (i = 0; i < 8; ++i) {
		FILE *f = open_seed(dir, "enc", i);
		int t;

		fz_put_header(f, &h);
		fz_put(f, i == 7 ? 40 : 4096, 2);
		for (t = 0; t <= ppt_trig; ++t) {
			struct pt_packet p;
			uint8_t *raw = (uint8_t *) &p.payload;
			size_t b;

			memset(&p, 0, sizeof(p));
			for (b = 0; b < sizeof(p.payload); ++b)
				raw[b] = (uint8_t) (i == 0 ? 0 : (b * 37 + t
						* i) & (0xff >> (i % 8)));
			if (t == ppt_tnt_8 || t == ppt_tnt_64) {
				p.payload.tnt.bit_size = (uint8_t) (i + 1);
				p.payload.tnt.payload = (1u << i) - 1;
			}
			if (t >= ppt_fup && t <= ppt_tip_pgd)
				p.payload.ip.ipc = (enum pt_ip_compression)
					(i == 5 ? 6 : i % 5);
			if (t == ppt_mode)
				p.payload.mode.leaf = i & 1 ? pt_mol_tsx
					: pt_mol_exec;
			fz_put(f, (uint64_t) t, 1);
			fwrite(&p.payload, 1, sizeof(p.payload), f);
		}
		fclose(f);
	}
}

/* A sideband seed: the stream of a --pevent:primary (or :secondary) FILE,
 * its configuration from the options before it, and events that walk
 * through user and kernel space over time, so that records apply and
 * postponed context switches find their place. */
static int sb_seed(int argc, char **argv)
{
	static const struct {
		uint8_t type, suppressed;
		uint16_t delta;
		uint64_t ip;
	} events[] = {
		{ ptev_enabled, 0, 1, 0x1000 },
		{ ptev_tick, 0, 1, 0x1001 },
		{ ptev_tip, 0, 1, 0x1003 },
		{ ptev_disabled, 1, 1, 0 },
		{ ptev_enabled, 0, 1, 0xffffffff80000000ull },
		{ ptev_async_disabled, 1, 2, 0 },
		{ ptev_tick, 0, 0x100, 0x2000 },
	};
	struct fz_sb_header h;
	const char *file = NULL;
	uint8_t *stream;
	size_t size, i;
	int a;

	memset(&h, 0, sizeof(h));
	h.flags = fz_sb_primary | fz_sb_print;
	h.print_flags = ptsbp_compact | ptsbp_file_offset;
	h.time_mult = 1;
	h.kernel_start = 0xffffffff80000000ull;
	for (a = 2; a + 1 < argc; ++a) {
		uint64_t v = strtoull(argv[a + 1], NULL, 0);

		if (!strcmp(argv[a], "--pevent:sample-type"))
			h.sample_type = v;
		else if (!strcmp(argv[a], "--pevent:time-zero"))
			h.time_zero = v;
		else if (!strcmp(argv[a], "--pevent:time-shift"))
			h.time_shift = (uint16_t) v;
		else if (!strcmp(argv[a], "--pevent:time-mult"))
			h.time_mult = (uint32_t) v;
		else if (!strcmp(argv[a], "--pevent:kernel-start"))
			h.kernel_start = v;
		else if (!strcmp(argv[a], "--pevent:primary") ||
			 (!file && !strcmp(argv[a], "--pevent:secondary")))
			file = argv[a + 1];
		else
			continue;
		++a;
	}
	if (!file) {
		fprintf(stderr, "mkseed: no sideband file\n");
		return 2;
	}
	stream = load(file, 0, 0, &size);
	h.nevents = (uint8_t) (sizeof(events) / sizeof(events[0]));
	fz_sb_put_header(stdout, &h);
	for (i = 0; i < h.nevents; ++i) {
		fz_put(stdout, events[i].type, 1);
		fz_put(stdout, events[i].suppressed, 1);
		fz_put(stdout, events[i].delta, 2);
		/* The IP goes first and second in the variant, where the
		 * event types keep it. */
		fz_put(stdout, events[i].ip, 8);
		fz_put(stdout, events[i].ip, 8);
		fz_put(stdout, 0, 8);
	}
	fwrite(stream, 1, size, stdout);
	free(stream);
	return 0;
}

int main(int argc, char **argv)
{
	struct fz_header h;
	const char *kind, *trace_path = NULL, *image_path = NULL;
	uint64_t base = 0, istart = 0, iend = 0;
	uint8_t *trace, *code = NULL;
	size_t tsize, csize = 0;
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: mkseed KIND [options] TRACE | "
			"mkseed gen DIR\n");
		return 2;
	}
	kind = argv[1];
	if (!strcmp(kind, "sb"))
		return sb_seed(argc, argv);
	if (!strcmp(kind, "gen")) {
		gen(argv[2]);
		return 0;
	}

	memset(&h, 0, sizeof(h));
	h.flags = fz_cpu_errata;
	for (i = 2; i < argc; ++i) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(a, "--cpu")) {
			unsigned f = 0, m = 0, s = 0;

			if (sscanf(v, "%u/%u/%u", &f, &m, &s) >= 2) {
				h.family = (uint8_t) f;
				h.model = (uint8_t) m;
				h.stepping = (uint8_t) s;
			}
			++i;
		} else if (!strcmp(a, "--mtc-freq")) {
			h.mtc_freq = (uint8_t) strtoul(v, NULL, 0);
			++i;
		} else if (!strcmp(a, "--nom-freq")) {
			h.nom_freq = (uint8_t) strtoul(v, NULL, 0);
			++i;
		} else if (!strcmp(a, "--cpuid-0x15.eax")) {
			h.cpuid_0x15_eax = (uint32_t) strtoul(v, NULL, 0);
			++i;
		} else if (!strcmp(a, "--cpuid-0x15.ebx")) {
			h.cpuid_0x15_ebx = (uint32_t) strtoul(v, NULL, 0);
			++i;
		} else if (!strcmp(a, "--raw")) {
			/* FILE:ADDR or FILE:START-END:ADDR */
			static char file[4096];
			const char *c1 = strchr(v, ':'), *c2;

			++i;
			if (!c1 || image_path)
				continue;
			snprintf(file, sizeof(file), "%.*s", (int) (c1 - v), v);
			image_path = file;
			c2 = strchr(c1 + 1, ':');
			if (c2) {
				istart = strtoull(c1 + 1, NULL, 0);
				iend = strtoull(strchr(c1, '-') ?
						strchr(c1, '-') + 1 : "0",
						NULL, 0);
				base = strtoull(c2 + 1, NULL, 0);
			} else
				base = strtoull(c1 + 1, NULL, 0);
		} else if (!strcmp(a, "--pt")) {
			trace_path = v;
			++i;
		} else if (a[0] != '-')
			trace_path = a;
	}
	if (!trace_path) {
		fprintf(stderr, "mkseed: no trace\n");
		return 2;
	}
	trace = load(trace_path, 0, 0, &tsize);
	if (image_path)
		code = load(image_path, istart, iend, &csize);
	put_seed(stdout, kind, &h, base, code, csize, trace, tsize);
	free(code);
	free(trace);
	return 0;
}

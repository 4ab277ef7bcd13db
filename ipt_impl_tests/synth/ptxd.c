/* ptxd - a small ptxed: decode a trace, print what ptxed --no-inst prints.
 *
 * One source, two programs: built against ipt.h, and with -DUSE_LIBIPT
 * against the system's libipt (<intel-pt.h>, -lipt), so the two decoders'
 * outputs can be compared with each other and with ptsynth's ground truth.
 * Code is read through the image's read-memory callback
 * (pt_image_set_callback) from the mappings ptsynth dumped.
 *
 *     ptxd --insn|--blk [--disasm] [--quiet] DIR NAME
 *
 * reads DIR/NAME.pt, DIR/NAME.cfg and DIR/image.txt, and prints one line
 * per instruction ("%016llx") and the event lines ptxed prints:
 * [enabled], [resumed], [disabled], [overflow], [exec mode: ...],
 * [end of trace], and "[offset, ip: error: message]" on errors, after
 * which it synchronizes again at the next PSB, as ptxed does.  The number
 * of instructions and the decode time go to stderr.  --disasm adds each
 * instruction in Intel syntax (Zydis); --quiet prints nothing but errors.
 */

#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <Zydis/Zydis.h>

#ifdef USE_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

struct segment {
	uint64_t start, end;
	uint8_t *data;
};

static struct segment segs[256];
static int nsegs;
static ZydisDecoder zdec;
static uint64_t ninsn;
static int disasm, quiet;
static ZydisFormatter zfmt;

static void load_image(const char *dir)
{
	char path[4096], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/image.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "ptxd: cannot read %s\n", path);
		exit(2);
	}
	while (fgets(line, sizeof(line), f) && nsegs < 256) {
		unsigned long long start, end;
		char file[1024];
		struct segment *s = &segs[nsegs];
		FILE *bin;

		if (sscanf(line, "%llx %llx %1023s", &start, &end, file) != 3)
			continue;
		s->start = start;
		s->end = end;
		s->data = (uint8_t *) malloc(end - start);
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		bin = fopen(path, "rb");
		if (!bin || !s->data ||
		    fread(s->data, 1, end - start, bin) != end - start) {
			fprintf(stderr, "ptxd: cannot read %s\n", path);
			exit(2);
		}
		fclose(bin);
		nsegs++;
	}
	fclose(f);
}

/* The read-memory callback: bytes from the dumped mappings. */
static int read_mem(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context)
{
	int i;

	(void) asid;
	(void) context;
	for (i = 0; i < nsegs; i++) {
		if (ip >= segs[i].start && ip < segs[i].end) {
			size_t n = (size_t) (segs[i].end - ip);

			if (n > size)
				n = size;
			memcpy(buffer, segs[i].data + (ip - segs[i].start), n);
			return (int) n;
		}
	}
	return -pte_nomap;
}

static uint8_t *load_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		fprintf(stderr, "ptxd: cannot read %s\n", path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = (uint8_t *) malloc(n ? (size_t) n : 1);
	if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n) {
		fprintf(stderr, "ptxd: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*size = (size_t) n;
	return buf;
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
	}
	fclose(f);
}

static const char *mode_name(enum pt_exec_mode mode)
{
	switch (mode) {
	case ptem_16bit:
		return "16-bit";
	case ptem_32bit:
		return "32-bit";
	case ptem_64bit:
		return "64-bit";
	default:
		return "<unknown>";
	}
}

static void print_event(const struct pt_event *ev)
{
	if (ev->status_update || quiet)
		return;
	switch (ev->type) {
	case ptev_enabled:
		printf("[%s]\n", ev->variant.enabled.resumed ? "resumed" :
		       "enabled");
		break;
	case ptev_disabled:
	case ptev_async_disabled:
		printf("[disabled]\n");
		break;
	case ptev_overflow:
		printf("[overflow]\n");
		break;
	case ptev_exec_mode:
		printf("[exec mode: %s]\n", mode_name(ev->variant.exec_mode.mode));
		break;
	case ptev_async_branch:
		printf("[interrupt]\n");
		break;
	case ptev_cbr:
		printf("[cbr: %x]\n", ev->variant.cbr.ratio);
		break;
	default:
		printf("[event %d]\n", (int) ev->type);
		break;
	}
}

static int read_mem(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context);

static void print_ip(uint64_t ip)
{
	ninsn++;
	if (quiet)
		return;
	if (disasm) {
		ZydisDecodedInstruction zi;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		uint8_t raw[15];
		char text[256];
		int n = read_mem(raw, sizeof(raw), NULL, ip, NULL);

		if (n > 0 &&
		    ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zdec, raw, (size_t) n,
							&zi, ops)) &&
		    ZYAN_SUCCESS(ZydisFormatterFormatInstruction(
			    &zfmt, &zi, ops, zi.operand_count_visible, text,
			    sizeof(text), ip, NULL))) {
			printf("%016" PRIx64 "  %s\n", ip, text);
			return;
		}
	}
	printf("%016" PRIx64 "\n", ip);
}

static void diagnose(uint64_t offset, uint64_t ip, const char *what, int err)
{
	printf("[%" PRIx64 ", %" PRIx64 ": %s: %s]\n", offset, ip, what,
	       pt_errstr(pt_errcode(err)));
}

static void decode_insn(struct pt_insn_decoder *dec)
{
	uint64_t sync = 0;

	for (;;) {
		struct pt_insn insn;
		int status;

		memset(&insn, 0, sizeof(insn));
		status = pt_insn_sync_forward(dec);
		if (status < 0) {
			uint64_t off = 0;

			if (status == -pte_eos)
				return;
			pt_insn_get_offset(dec, &off);
			diagnose(off, 0, "sync error", status);
			if (off <= sync)
				return;
			sync = off;
			continue;
		}
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				print_event(&ev);
			}
			if (status < 0)
				break;
			if (status & pts_eos) {
				if (!(status & pts_ip_suppressed))
					printf("[end of trace]\n");
				return;
			}
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status < 0) {
				if (status == -pte_event_ignored) {
					status = pts_event_pending;
					continue;
				}
				if (insn.iclass != ptic_error)
					print_ip(insn.ip);
				break;
			}
			print_ip(insn.ip);
		}
		if (status == -pte_eos)
			return;
		{
			uint64_t off = 0;

			pt_insn_get_offset(dec, &off);
			diagnose(off, insn.ip, "error", status);
		}
	}
}

/* Print the instructions of a block: their lengths come from Zydis, their
 * bytes from the image (or the block, for a truncated last one). */
static int print_block(const struct pt_block *block)
{
	uint64_t ip = block->ip;
	uint16_t n = block->ninsn;

	while (n) {
		uint8_t raw[15];
		int size;
		ZydisDecodedInstruction zi;

		print_ip(ip);
		if (!--n)
			break;
		size = read_mem(raw, sizeof(raw), NULL, ip, NULL);
		if (size <= 0 ||
		    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(
			    &zdec, NULL, raw, (ZyanUSize) size, &zi))) {
			printf("[%016" PRIx64 ": fetch error]\n", ip);
			return -1;
		}
		/* Blocks run on through direct jumps and calls. */
		ip += zi.length;
		if (zi.raw.imm[0].is_relative)
			ip += (uint64_t) zi.raw.imm[0].value.s;
	}
	if (block->ninsn && ip != block->end_ip) {
		printf("[%016" PRIx64 ": reconstruct error]\n", ip);
		return -1;
	}
	return 0;
}

static void decode_blk(struct pt_block_decoder *dec)
{
	uint64_t sync = 0;

	for (;;) {
		struct pt_block block;
		int status;

		memset(&block, 0, sizeof(block));
		status = pt_blk_sync_forward(dec);
		if (status < 0) {
			uint64_t off = 0;

			if (status == -pte_eos)
				return;
			pt_blk_get_offset(dec, &off);
			diagnose(off, 0, "sync error", status);
			if (off <= sync)
				return;
			sync = off;
			continue;
		}
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				print_event(&ev);
			}
			if (status < 0)
				break;
			if (status & pts_eos) {
				if (!(status & pts_ip_suppressed))
					printf("[end of trace]\n");
				return;
			}
			status = pt_blk_next(dec, &block, sizeof(block));
			if (status < 0) {
				if (status == -pte_event_ignored) {
					status = pts_event_pending;
					continue;
				}
				print_block(&block);
				break;
			}
			if (print_block(&block) < 0)
				break;
		}
		if (status == -pte_eos)
			return;
		{
			uint64_t off = 0;

			pt_blk_get_offset(dec, &off);
			diagnose(off, block.end_ip, "error", status);
		}
	}
}

int main(int argc, char **argv)
{
	struct pt_config config;
	struct pt_image *image;
	char path[4096];
	uint8_t *trace;
	size_t size;
	struct timespec t0, t1;
	int blk = -1, i;
	const char *dir, *name;

	for (i = 1; i < argc - 2; i++) {
		if (!strcmp(argv[i], "--insn"))
			blk = 0;
		else if (!strcmp(argv[i], "--blk"))
			blk = 1;
		else if (!strcmp(argv[i], "--disasm"))
			disasm = 1;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else
			break;
	}
	if (blk < 0 || i != argc - 2) {
		fprintf(stderr, "usage: ptxd --insn|--blk [--disasm] [--quiet] "
			"DIR NAME\n");
		return 2;
	}
	dir = argv[argc - 2];
	name = argv[argc - 1];
	ZydisDecoderInit(&zdec, ZYDIS_MACHINE_MODE_LONG_64,
			 ZYDIS_STACK_WIDTH_64);
	ZydisFormatterInit(&zfmt, ZYDIS_FORMATTER_STYLE_INTEL);
	load_image(dir);
	snprintf(path, sizeof(path), "%s/%s.pt", dir, name);
	trace = load_file(path, &size);

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + size;
	snprintf(path, sizeof(path), "%s/%s.cfg", dir, name);
	load_cfg(&config, path);

	image = pt_image_alloc("ptxd");
	if (!image || pt_image_set_callback(image, read_mem, NULL) < 0) {
		fprintf(stderr, "ptxd: cannot set up the image\n");
		return 2;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (blk) {
		struct pt_block_decoder *dec = pt_blk_alloc_decoder(&config);

		if (!dec || pt_blk_set_image(dec, image) < 0) {
			fprintf(stderr, "ptxd: cannot allocate the decoder\n");
			return 2;
		}
		decode_blk(dec);
		pt_blk_free_decoder(dec);
	} else {
		struct pt_insn_decoder *dec = pt_insn_alloc_decoder(&config);

		if (!dec || pt_insn_set_image(dec, image) < 0) {
			fprintf(stderr, "ptxd: cannot allocate the decoder\n");
			return 2;
		}
		decode_insn(dec);
		pt_insn_free_decoder(dec);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fflush(stdout);
	fprintf(stderr, "ptxd: %" PRIu64 " instructions, %zu bytes, %.3fs\n",
		ninsn, size,
		(double) (t1.tv_sec - t0.tv_sec) +
			(double) (t1.tv_nsec - t0.tv_nsec) * 1e-9);
	pt_image_free(image);
	free(trace);
	return 0;
}

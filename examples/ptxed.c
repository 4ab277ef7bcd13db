/* ptxed - show the instructions an Intel PT trace executed.
 *
 * This example reconstructs the control flow of a traced program from its
 * Intel PT stream and the code it ran over, with ipt.h's block decoder (the
 * default) or its instruction decoder, and prints one line per instruction,
 * with events in brackets between them.  Its command line and its output
 * are those of libipt's ptxed, so libipt's test suite and scripts written
 * for libipt's ptxed run unchanged against it.  It shows how a program
 * drives the high-level decoders: sync, drain pending events, decode,
 * report an error with the position it happened at, and resync.
 *
 * Code memory comes from --raw and --elf files.  In hosted builds they are
 * added to the image as file sections through an image section cache, as
 * libipt's ptxed does; with --ipt:callback (and always in IPT_NO_STDIO
 * builds, which have no file sections) ptxed maps or reads them itself
 * and serves them through pt_image_set_callback().
 *
 * Given Linux perf_event sideband (--pevent:primary FILE), ptxed decodes
 * each process in its own image: a sideband session (pt_sb_*) sees every
 * event the decoder reports, applies the records up to that time (mapped
 * files, exec, fork, context switches), and hands back the image to
 * switch to; --sb:* prints the records between the instructions.
 *
 * Instructions are disassembled with Zydis (libipt's ptxed uses XED).
 * --check decodes every instruction a second time and compares its length,
 * branch target and class with what the decoder reported.  Diagnostics
 * keep libipt's wording, including the iclass names XED would use, so the
 * output of both tools can be compared line by line.
 *
 * --threads N decodes the trace in pieces, N at a time, and prints what
 * one decoder prints: see "--threads" below for how the pieces join.
 *
 * Build:  cc -O2 -Wall -Wextra -Werror -I. -o examples/ptxed \
 *             examples/ptxed.c -lZydis -lm -pthread
 */

#define IPT_IMPLEMENTATION
#include "ipt.h"

#include <Zydis/Zydis.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "sideband.h"

/* ---- output ----
 * Everything ptxed prints goes through oprint, oputs and oprint_hex: to
 * stdout, or, on a thread that decodes a piece of the trace for
 * --threads, to that piece's buffer.  The address of each instruction is
 * formatted here rather than by printf, which would take most of the
 * time of a decode that prints addresses only. */

struct ptxed_buf {
	char *p;
	size_t n, cap;
	/* It could not grow: what it holds is incomplete. */
	int failed;
};

static __thread struct ptxed_buf *ptxed_out;

/* Room for @len more bytes in @buf, or NULL. */
static char *ptxed_buf_room(struct ptxed_buf *buf, size_t len)
{
	if (buf->cap - buf->n < len) {
		size_t cap = buf->cap ? buf->cap : 1 << 16;
		char *p;

		while (cap - buf->n < len)
			cap *= 2;
		p = (char *) realloc(buf->p, cap);
		if (!p) {
			buf->failed = 1;
			return NULL;
		}
		buf->p = p;
		buf->cap = cap;
	}
	return buf->p + buf->n;
}

static void oputs(const char *s, size_t len)
{
	char *p;

	if (!ptxed_out) {
		fwrite(s, 1, len, stdout);
		return;
	}
	p = ptxed_buf_room(ptxed_out, len);
	if (!p)
		return;
	memcpy(p, s, len);
	ptxed_out->n += len;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void oprint(const char *format, ...)
{
	struct ptxed_buf *buf = ptxed_out;
	va_list ap;
	char *p;
	int len;

	va_start(ap, format);
	if (!buf) {
		vfprintf(stdout, format, ap);
		va_end(ap);
		return;
	}
	p = ptxed_buf_room(buf, 256);
	len = p ? vsnprintf(p, buf->cap - buf->n, format, ap) : -1;
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t) len >= buf->cap - buf->n) {
		p = ptxed_buf_room(buf, (size_t) len + 1);
		if (!p)
			return;
		va_start(ap, format);
		(void) vsnprintf(p, (size_t) len + 1, format, ap);
		va_end(ap);
	}
	buf->n += (size_t) len;
}

/* @value as 16 hex digits, as "%016" PRIx64 prints it, then @tail. */
static void oprint_hex(uint64_t value, const char *tail)
{
	static const char digits[] = "0123456789abcdef";
	char text[24];
	size_t len = 16;
	int i;

	for (i = 15; i >= 0; --i, value >>= 4)
		text[i] = digits[value & 0xf];
	while (*tail && len < sizeof(text))
		text[len++] = *tail++;
	oputs(text, len);
}

/* The version of this tool, printed by --version. */
#define PTXED_VERSION_MAJOR 2
#define PTXED_VERSION_MINOR 3
#define PTXED_VERSION_PATCH 0

/* ---- code memory of our own ----
 *
 * Used for --ipt:callback (and IPT_NO_STDIO builds): the file contents,
 * mapped or read (examples/file.h), are kept here and handed to the
 * decoder through the image's read-memory callback.  A later segment
 * hides an earlier one where they overlap, as a later section hides an
 * earlier one in an image. */

struct ptxed_segment {
	struct ex_file file;
	uint64_t vaddr;
};

struct ptxed_memory {
	struct ptxed_segment *segments;
	size_t nsegments;
};

static const struct ptxed_segment *
ptxed_mem_find(const struct ptxed_memory *mem, uint64_t ip)
{
	size_t idx;

	if (!mem)
		return NULL;

	for (idx = mem->nsegments; idx > 0; --idx) {
		const struct ptxed_segment *seg = &mem->segments[idx - 1];

		if (seg->vaddr <= ip && ip - seg->vaddr < seg->file.size)
			return seg;
	}

	return NULL;
}

/* Read up to @size bytes at @ip.  Returns the number of bytes read, or
 * -pte_nomap if nothing is mapped at @ip. */
static int ptxed_mem_read(const struct ptxed_memory *mem, uint8_t *buffer,
			  size_t size, uint64_t ip)
{
	const struct ptxed_segment *seg;
	uint64_t left;

	seg = ptxed_mem_find(mem, ip);
	if (!seg)
		return -pte_nomap;

	left = seg->file.size - (ip - seg->vaddr);
	if (left < size)
		size = (size_t) left;
	if (size > (size_t) INT32_MAX)
		size = (size_t) INT32_MAX;

	memcpy(buffer, seg->file.bytes + (ip - seg->vaddr), size);
	return (int) size;
}

static int ptxed_read_memory(uint8_t *buffer, size_t size,
			     const struct pt_asid *asid, uint64_t ip,
			     void *context)
{
	(void) asid;

	return ptxed_mem_read((const struct ptxed_memory *) context, buffer,
			      size, ip);
}

/* Make @image read @mem through ptxed_read_memory.  The code is in
 * memory already, so the image keeps no page cache, which would only copy
 * it again (and take the pages for the copy from the kernel). */
static int ptxed_image_use(struct pt_image *image,
			   const struct ptxed_memory *mem)
{
	int errcode;

	errcode = pt_image_set_callback(image, ptxed_read_memory,
					(void *) mem);
	if (errcode < 0)
		return errcode;
	return ipt_image_set_cache_limit(image, 0);
}

/* Take ownership of @file. */
static int ptxed_mem_add(struct ptxed_memory *mem, struct ex_file *file,
			 uint64_t vaddr)
{
	struct ptxed_segment *segments;

	segments = (struct ptxed_segment *)
		realloc(mem->segments,
			(mem->nsegments + 1) * sizeof(*segments));
	if (!segments) {
		ex_file_release(file);
		return -pte_nomem;
	}

	segments[mem->nsegments].file = *file;
	segments[mem->nsegments].vaddr = vaddr;
	mem->segments = segments;
	mem->nsegments += 1;

	return 0;
}

static void ptxed_mem_fini(struct ptxed_memory *mem)
{
	size_t idx;

	for (idx = 0; idx < mem->nsegments; ++idx)
		ex_file_release(&mem->segments[idx].file);

	free(mem->segments);
	mem->segments = NULL;
	mem->nsegments = 0;
}

/* ---- the decoder and the options ---- */

enum ptxed_decoder_type {
	pdt_insn_decoder,
	pdt_block_decoder
};

struct ptxed_decoder {
	enum ptxed_decoder_type type;

	union {
		struct pt_insn_decoder *insn;
		struct pt_block_decoder *block;
	} variant;

	/* The flags each decoder type gets when it is allocated. */
	struct pt_conf_flags block_flags;
	struct pt_conf_flags insn_flags;

#ifndef IPT_NO_STDIO
	/* The cache that holds the --raw and --elf file sections. */
	struct pt_image_section_cache *iscache;
	/* The sideband session; it gives the image to decode in when a
	 * process switch is due. */
	struct pt_sb_session *session;
#endif

	/* Code served through the image's read-memory callback. */
	struct ptxed_memory memory;
	uint32_t use_callback:1;
	uint32_t callback_set:1;

	/* Take VM entries as the hardware writes them (--ipt:vm-tolerant). */
	uint32_t vm_tolerant:1;

	/* Decode only this address space (--ipt:cr3), or pt_asid_no_cr3. */
	uint64_t cr3_filter;

	/* Zydis, one decoder per execution mode, and the formatter. */
	ZydisDecoder zydis16, zydis32, zydis64;
	ZydisFormatter formatter;
};

struct ptxed_options {
	/* Do not disassemble instructions; print their addresses only. */
	uint32_t dont_print_insn:1;
	/* Print nothing but errors. */
	uint32_t quiet:1;
	/* Print statistics, even when quiet. */
	uint32_t print_stats:1;
	/* Print what is loaded (--verbose). */
	uint32_t track_image:1;
	/* Print a [block] line before each block (block decoder only). */
	uint32_t track_blocks:1;
	/* Disassemble in AT&T syntax. */
	uint32_t att_format:1;
	/* Print the trace offset with instructions and events. */
	uint32_t print_offset:1;
	/* Print the time stamp with instructions. */
	uint32_t print_time:1;
	/* Print the instruction bytes. */
	uint32_t print_raw_insn:1;
	/* Check the decoder's results against a second decode. */
	uint32_t check:1;
	/* Print the time stamp of events. */
	uint32_t print_event_time:1;
	/* Print the IP of events. */
	uint32_t print_event_ip:1;
	/* Resync after decode errors instead of searching the next PSB. */
	uint32_t resync_on_error:1;
	/* Tell on stderr how --threads joined the pieces. */
	uint32_t report_stitch:1;
#ifndef IPT_NO_STDIO
	/* --sb:* and --pevent:*. */
	struct sb_options sb;
#endif
};

enum ptxed_stats_flag {
	ptxed_stat_insn = (1 << 0),
	ptxed_stat_blocks = (1 << 1)
};

struct ptxed_stats {
	uint64_t insn;
	uint64_t blocks;
	uint32_t flags;
};

static int ptxed_have_decoder(const struct ptxed_decoder *decoder)
{
	return decoder && decoder->variant.insn;
}

static int ptxed_init_decoder(struct ptxed_decoder *decoder)
{
	ZyanStatus zs;

	memset(decoder, 0, sizeof(*decoder));
	decoder->type = pdt_block_decoder;
	decoder->cr3_filter = pt_asid_no_cr3;

	zs = ZydisDecoderInit(&decoder->zydis16, ZYDIS_MACHINE_MODE_LEGACY_16,
			      ZYDIS_STACK_WIDTH_16);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisDecoderInit(&decoder->zydis32,
				      ZYDIS_MACHINE_MODE_LEGACY_32,
				      ZYDIS_STACK_WIDTH_32);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisDecoderInit(&decoder->zydis64,
				      ZYDIS_MACHINE_MODE_LONG_64,
				      ZYDIS_STACK_WIDTH_64);
	if (!ZYAN_SUCCESS(zs))
		return -pte_internal;

#ifndef IPT_NO_STDIO
	decoder->iscache = pt_iscache_alloc(NULL);
	if (!decoder->iscache)
		return -pte_nomem;
	decoder->session = pt_sb_alloc(decoder->iscache);
	if (!decoder->session)
		return -pte_nomem;
#else
	decoder->use_callback = 1;
#endif

	return 0;
}

static void ptxed_free_decoder(struct ptxed_decoder *decoder)
{
	switch (decoder->type) {
	case pdt_insn_decoder:
		pt_insn_free_decoder(decoder->variant.insn);
		break;

	case pdt_block_decoder:
		pt_blk_free_decoder(decoder->variant.block);
		break;
	}

#ifndef IPT_NO_STDIO
	/* The session's images hold sections of the cache. */
	pt_sb_free(decoder->session);
	pt_iscache_free(decoder->iscache);
#endif
	ptxed_mem_fini(&decoder->memory);
}

/* Set up the formatter so its output reads like XED's: lower-case hex,
 * no zero padding, explicit operand sizes and index scales, RIP-relative
 * operands as [rip+disp]. */
static int ptxed_init_formatter(struct ptxed_decoder *decoder, int att)
{
	ZydisFormatter *fmt = &decoder->formatter;
	ZyanStatus zs;

	zs = ZydisFormatterInit(fmt, att ? ZYDIS_FORMATTER_STYLE_ATT :
				ZYDIS_FORMATTER_STYLE_INTEL);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(fmt,
					       ZYDIS_FORMATTER_PROP_HEX_UPPERCASE,
					       ZYAN_FALSE);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(
			fmt, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE,
			ZYDIS_PADDING_DISABLED);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(
			fmt, ZYDIS_FORMATTER_PROP_ADDR_PADDING_RELATIVE,
			ZYDIS_PADDING_DISABLED);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(fmt,
					       ZYDIS_FORMATTER_PROP_DISP_PADDING,
					       ZYDIS_PADDING_DISABLED);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(fmt,
					       ZYDIS_FORMATTER_PROP_IMM_PADDING,
					       ZYDIS_PADDING_DISABLED);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(
			fmt, ZYDIS_FORMATTER_PROP_FORCE_RELATIVE_RIPREL,
			ZYAN_TRUE);
	if (ZYAN_SUCCESS(zs))
		zs = ZydisFormatterSetProperty(
			fmt, ZYDIS_FORMATTER_PROP_FORCE_SCALE_ONE, ZYAN_TRUE);
	if (ZYAN_SUCCESS(zs) && !att)
		zs = ZydisFormatterSetProperty(fmt,
					       ZYDIS_FORMATTER_PROP_FORCE_SIZE,
					       ZYAN_TRUE);

	return ZYAN_SUCCESS(zs) ? 0 : -pte_internal;
}

/* ---- help and argument parsing ---- */

static void help(const char *name)
{
	oprint("usage: %s [<options>]\n\n", name);
	oprint("options:\n");
	oprint("  --help|-h                            this text.\n");
	oprint("  --version                            display version information and exit.\n");
	oprint("  --att                                print instructions in att format.\n");
	oprint("  --no-inst                            do not print instructions (only addresses).\n");
	oprint("  --quiet|-q                           do not print anything (except errors).\n");
	oprint("  --offset                             print the offset into the trace file.\n");
	oprint("  --time                               print the current timestamp.\n");
	oprint("  --raw-insn                           print the raw bytes of each instruction.\n");
	oprint("  --check                              perform checks (expensive).\n");
	oprint("  --resync-on-error                    resync on decode errors more aggressively.\n");
	oprint("  --iscache-limit <size>               set the image section cache limit to <size> bytes.\n");
	oprint("  --event:time                         print the tsc for events if available.\n");
	oprint("  --event:ip                           print the ip of events if available.\n");
	oprint("  --event:tick                         request tick events.\n");
	oprint("  --event:iflags                       request iflags events.\n");
	oprint("  --filter:addr<n>_cfg <cfg>           set IA32_RTIT_CTL.ADDRn_CFG to <cfg>.\n");
	oprint("  --filter:addr<n>_a <base>            set IA32_RTIT_ADDRn_A to <base>.\n");
	oprint("  --filter:addr<n>_b <limit>           set IA32_RTIT_ADDRn_B to <limit>.\n");
	oprint("  --stat                               print statistics (even when quiet).\n");
	oprint("  --threads <n>                        decode with <n> threads (default 1); the output stays the same.\n");
	oprint("                                       collects all statistics unless one or more are selected.\n");
	oprint("  --stat:insn                          collect number of instructions.\n");
	oprint("  --stat:blocks                        collect number of blocks.\n");
#ifndef IPT_NO_STDIO
	oprint("  --sb:compact | --sb                  show sideband records in compact format.\n");
	oprint("  --sb:verbose                         show sideband records in verbose format.\n");
	oprint("  --sb:filename                        show the filename on sideband records.\n");
	oprint("  --sb:offset                          show the offset on sideband records.\n");
	oprint("  --sb:time                            show the time on sideband records.\n");
	oprint("  --sb:switch                          print the new image name on context switches.\n");
	oprint("  --sb:warn                            show sideband warnings.\n");
	oprint("  --pevent:primary/secondary <file>[:<from>[-<to>]]\n");
	oprint("                              load a perf_event sideband stream from <file>.\n");
	oprint("                              an optional offset or range can be given.\n");
	oprint("  --pevent:sample-type <val>  set perf_event_attr.sample_type to <val> (default: 0).\n");
	oprint("  --pevent:sample-config <id>:<val>\n");
	oprint("                              set perf_event_attr.sample_type to <val> for event <id>.\n");
	oprint("  --pevent:time-zero <val>    set perf_event_mmap_page.time_zero to <val> (default: 0).\n");
	oprint("  --pevent:time-shift <val>   set perf_event_mmap_page.time_shift to <val> (default: 0).\n");
	oprint("  --pevent:time-mult <val>    set perf_event_mmap_page.time_mult to <val> (default: 1).\n");
	oprint("  --pevent:tsc-offset <val>   show perf events <val> ticks earlier.\n");
	oprint("  --pevent:kernel-start <val> the start address of the kernel.\n");
	oprint("  --pevent:sysroot <path>     prepend <path> to sideband filenames.\n");
	oprint("  --pevent:kcore <file>       load the kernel from a core dump.\n");
	oprint("  --pevent:vdso-x64 <file>    use <file> as 64-bit vdso.\n");
	oprint("  --pevent:vdso-x32 <file>    use <file> as x32 vdso.\n");
	oprint("  --pevent:vdso-ia32 <file>   use <file> as 32-bit vdso.\n");
#endif
	oprint("  --verbose|-v                         print various information (even when quiet).\n");
	oprint("  --pt <file>[:<from>[-<to>]]          load the processor trace data from <file>.\n");
	oprint("                                       an optional offset or range can be given.\n");
	oprint("  --elf <<file>[:<base>]               load an ELF from <file> at address <base>.\n");
	oprint("                                       use the default load address if <base> is omitted.\n");
	oprint("  --raw <file>[:<from>[-<to>]]:<base>  load a raw binary from <file> at address <base>.\n");
	oprint("                                       an optional offset or range can be given.\n");
	oprint("  --cpu none|f/m[/s]                   set cpu to the given value and decode according to:\n");
	oprint("                                         none     spec (default)\n");
	oprint("                                         f/m[/s]  family/model[/stepping]\n");
	oprint("  --mtc-freq <n>                       set the MTC frequency (IA32_RTIT_CTL[17:14]) to <n>.\n");
	oprint("  --nom-freq <n>                       set the nominal frequency (MSR_PLATFORM_INFO[15:8]) to <n>.\n");
	oprint("  --cpuid-0x15.eax                     set the value of cpuid[0x15].eax.\n");
	oprint("  --cpuid-0x15.ebx                     set the value of cpuid[0x15].ebx.\n");
	oprint("  --insn-decoder                       use the instruction flow decoder.\n");
	oprint("  --insn:keep-tcal-on-ovf              preserve timing calibration on overflow.\n");
	oprint("  --block-decoder                      use the block decoder (default).\n");
	oprint("  --block:show-blocks                  show blocks in the output.\n");
	oprint("  --block:end-on-call                  set the end-on-call block decoder flag.\n");
	oprint("  --block:end-on-jump                  set the end-on-jump block decoder flag.\n");
	oprint("  --block:keep-tcal-on-ovf             preserve timing calibration on overflow.\n");
	oputs("\n", 1);
	oprint("ipt.h extensions:\n");
	oprint("  --ipt:callback                       serve the --raw and --elf files that follow through\n");
	oprint("                                       the image's read-memory callback instead of file\n");
	oprint("                                       sections in the image section cache.\n");
	oprint("  --ipt:vm-tolerant                    take VM entries as the hardware writes them: a PSB+\n");
	oprint("                                       that says tracing is on while it is off, and TIP.PGE\n");
	oprint("                                       to where tracing already is (ipt_*_set_vm_tolerant).\n");
	oprint("  --ipt:cr3 <cr3>                      decode only the address space PIP names <cr3>, skip\n");
	oprint("                                       the trace of others (ipt_*_set_cr3_filter).\n");
	oprint("  --ipt:stitch                         with --threads, tell on stderr how the pieces joined.\n");
	oprint("  --image-name <name>                  name the image (shown by --verbose).\n");
#ifdef IPT_NO_STDIO
	oprint("                                       (this build has no file sections: the callback\n");
	oprint("                                       serves all code.)\n");
#endif
	oputs("\n", 1);
	oprint("This ptxed is built on ipt.h and disassembles with Zydis.\n");
	oputs("\n", 1);
	oprint("You must specify at least one binary or ELF file (--raw|--elf).\n");
	oprint("You must specify exactly one processor trace file (--pt).\n");
}

static void print_version_number(struct pt_version version)
{
	oprint("%" PRIu8 ".%" PRIu8 ".%" PRIu16, version.major, version.minor,
	       version.patch);
	if (version.build)
		oprint("-%" PRIu32, version.build);
	if (version.ext && version.ext[0])
		oprint("-%s", version.ext);
}

static void version(const char *name)
{
	struct pt_version tool;

	memset(&tool, 0, sizeof(tool));
	tool.major = PTXED_VERSION_MAJOR;
	tool.minor = PTXED_VERSION_MINOR;
	tool.patch = PTXED_VERSION_PATCH;
	tool.ext = "ipt.h";

	oprint("%s-", name ? name : "<unknown>");
	print_version_number(tool);
	oprint(" / libipt-");
	print_version_number(pt_library_version());
	oputs("\n", 1);
}

/* Split a trailing ":<base>" off @arg.  Returns 1 and truncates @arg if
 * there is one, 0 otherwise. */
static int extract_base(char *arg, uint64_t *base)
{
	char *sep, *rest;
	uint64_t num;

	sep = strrchr(arg, ':');
	if (!sep || !sep[1])
		return 0;

	errno = 0;
	num = strtoull(sep + 1, &rest, 0);
	if (errno || *rest)
		return 0;

	*base = num;
	*sep = 0;
	return 1;
}

/* Parse "<begin>[-<end>]".  Returns the number of numbers parsed, 0 for an
 * empty string and -1 if it is not a range. */
static int parse_range(const char *arg, uint64_t *begin, uint64_t *end)
{
	char *rest;

	if (!arg || !*arg)
		return 0;

	errno = 0;
	*begin = strtoull(arg, &rest, 0);
	if (errno)
		return -1;

	if (!*rest)
		return 1;

	if (*rest != '-')
		return -1;

	*end = strtoull(rest + 1, &rest, 0);
	if (errno || *rest)
		return -1;

	return 2;
}

/* Split an optional ":<from>[-<to>]" off @filename.  A suffix that does
 * not parse as a range is left as part of the file name (it may be a drive
 * letter).  @size is zero when no end was given. */
static int preprocess_filename(char *filename, uint64_t *offset,
			       uint64_t *size)
{
	uint64_t begin, end;
	char *range;
	int parts;

	*offset = 0ull;
	*size = 0ull;

	range = strrchr(filename, ':');
	if (!range)
		return 0;

	begin = end = 0ull;
	parts = parse_range(range + 1, &begin, &end);
	if (parts <= 0)
		return 0;

	if (parts == 2) {
		if (end <= begin)
			return -pte_invalid;

		*size = end - begin;
	}

	*offset = begin;
	*range = 0;
	return 0;
}

static int load_pt(struct pt_config *config, struct ex_file *trace,
		   char *arg, const char *prog)
{
	uint64_t foffset, fsize;
	int errcode;

	errcode = preprocess_filename(arg, &foffset, &fsize);
	if (errcode < 0) {
		fprintf(stderr, "%s: bad file %s: %s.\n", prog, arg,
			pt_errstr(pt_errcode(errcode)));
		return -1;
	}

	ex_file_release(trace);
	errcode = ex_file_load(trace, arg, foffset, fsize, 0, prog);
	if (errcode < 0)
		return errcode;

	config->begin = trace->bytes;
	config->end = trace->bytes + trace->size;
	return 0;
}

/* Install the read-memory callback on first use. */
static int ptxed_use_callback(struct ptxed_decoder *decoder,
			      struct pt_image *image)
{
	int errcode;

	if (decoder->callback_set)
		return 0;

	errcode = ptxed_image_use(image, &decoder->memory);
	if (errcode < 0)
		return errcode;

	decoder->callback_set = 1;
	return 0;
}

/* Make [@offset; @offset + @size) of @filename code at @vaddr: a file
 * section in the image section cache, or, in callback mode, bytes in our
 * own memory.  A zero @size means "up to the end of the file". */
static int ptxed_add_code(struct ptxed_decoder *decoder,
			  struct pt_image *image, const char *filename,
			  uint64_t offset, uint64_t size, uint64_t vaddr,
			  const char *prog)
{
	if (decoder->use_callback) {
		struct ex_file file;
		int errcode;

		errcode = ex_file_load(&file, filename, offset, size, 1, prog);
		if (errcode < 0)
			return errcode;

		errcode = ptxed_mem_add(&decoder->memory, &file, vaddr);
		if (errcode < 0)
			return errcode;

		return ptxed_use_callback(decoder, image);
	}

#ifndef IPT_NO_STDIO
	{
		int isid;

		if (!size)
			size = UINT64_MAX;

		isid = pt_iscache_add_file(decoder->iscache, filename, offset,
					   size, vaddr);
		if (isid < 0)
			return isid;

		return pt_image_add_cached(image, decoder->iscache, isid,
					   NULL);
	}
#else
	return -pte_internal;
#endif
}

static int load_raw(struct ptxed_decoder *decoder, struct pt_image *image,
		    char *arg, const char *prog)
{
	uint64_t base, foffset, fsize;
	int errcode;

	base = 0ull;
	if (extract_base(arg, &base) <= 0) {
		fprintf(stderr, "%s: failed to parse base address"
			"from '%s'.\n", prog, arg);
		return -1;
	}

	errcode = preprocess_filename(arg, &foffset, &fsize);
	if (errcode < 0) {
		fprintf(stderr, "%s: bad file %s: %s.\n", prog, arg,
			pt_errstr(pt_errcode(errcode)));
		return -1;
	}

	errcode = ptxed_add_code(decoder, image, arg, foffset, fsize, base,
				 prog);
	if (errcode < 0) {
		fprintf(stderr, "%s: failed to add %s at 0x%" PRIx64 ": %s.\n",
			prog, arg, base, pt_errstr(pt_errcode(errcode)));
		return -1;
	}

	return 0;
}

/* ---- ELF program headers ----
 *
 * --elf adds the file contents of an ELF's PT_LOAD segments.  Only the
 * ELF header and the program header table are read; both classes and both
 * byte orders are understood.  With a base address, the image is moved so
 * that its lowest loadable segment starts there. */

enum {
	ptxed_elf_ident = 16,
	ptxed_elf_class32 = 1,
	ptxed_elf_class64 = 2,
	ptxed_elf_data_msb = 2,
	ptxed_elf_pt_load = 1
};

struct ptxed_phdr {
	uint32_t type;
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
};

static uint64_t ptxed_elf_get(const uint8_t *bytes, int size, int msb)
{
	uint64_t value = 0ull;
	int idx;

	for (idx = 0; idx < size; ++idx) {
		int pos = msb ? idx : (size - 1 - idx);

		value = (value << 8) | bytes[pos];
	}

	return value;
}

static int ptxed_elf_read(FILE *file, uint64_t offset, uint8_t *buffer,
			  size_t size)
{
	if ((uint64_t) (long) offset != offset || (long) offset < 0)
		return -1;
	if (fseek(file, (long) offset, SEEK_SET))
		return -1;
	if (fread(buffer, size, 1u, file) != 1)
		return -1;
	return 0;
}

static int ptxed_elf_phdr(FILE *file, int is64, int msb, uint64_t phoff,
			  uint64_t phentsize, unsigned int idx,
			  struct ptxed_phdr *phdr)
{
	uint8_t raw[56];
	size_t need = is64 ? 56u : 32u;

	if (phentsize < need)
		return -1;
	if (ptxed_elf_read(file, phoff + (uint64_t) idx * phentsize, raw,
			   need) < 0)
		return -1;

	phdr->type = (uint32_t) ptxed_elf_get(raw, 4, msb);
	if (is64) {
		phdr->offset = ptxed_elf_get(raw + 8, 8, msb);
		phdr->vaddr = ptxed_elf_get(raw + 16, 8, msb);
		phdr->filesz = ptxed_elf_get(raw + 32, 8, msb);
	} else {
		phdr->offset = ptxed_elf_get(raw + 4, 4, msb);
		phdr->vaddr = ptxed_elf_get(raw + 8, 4, msb);
		phdr->filesz = ptxed_elf_get(raw + 16, 4, msb);
	}

	return 0;
}

static int load_elf(struct ptxed_decoder *decoder, struct pt_image *image,
		    const char *name, uint64_t base, const char *prog,
		    int verbose)
{
	uint8_t ehdr[64];
	uint64_t phoff, phentsize, offset;
	unsigned int phnum, idx;
	int is64, msb, sections, errcode;
	FILE *file;

	file = fopen(name, "rb");
	if (!file) {
		fprintf(stderr, "%s: warning: failed to open %s: %s.\n", prog,
			name, strerror(errno));
		return -pte_bad_config;
	}

	errcode = -pte_bad_config;
	if (ptxed_elf_read(file, 0ull, ehdr, ptxed_elf_ident) < 0) {
		fprintf(stderr,
			"%s: warning: %s failed to read file header: %s.\n",
			prog, name, strerror(errno));
		goto out;
	}

	if (ehdr[0] != 0x7f || ehdr[1] != 'E' || ehdr[2] != 'L' ||
	    ehdr[3] != 'F') {
		fprintf(stderr, "%s: warning: ignoring %s: not an ELF file.\n",
			prog, name);
		goto out;
	}

	switch (ehdr[4]) {
	case ptxed_elf_class32:
		is64 = 0;
		break;

	case ptxed_elf_class64:
		is64 = 1;
		break;

	default:
		fprintf(stderr, "%s: unsupported ELF class: %d\n", prog,
			ehdr[4]);
		goto out;
	}

	msb = (ehdr[5] == ptxed_elf_data_msb);

	if (ptxed_elf_read(file, 0ull, ehdr, is64 ? 64u : 52u) < 0) {
		fprintf(stderr,
			"%s: warning: %s error reading ELF header: %s.\n",
			prog, name, strerror(errno));
		goto out;
	}

	if (is64) {
		phoff = ptxed_elf_get(ehdr + 32, 8, msb);
		phentsize = ptxed_elf_get(ehdr + 54, 2, msb);
		phnum = (unsigned int) ptxed_elf_get(ehdr + 56, 2, msb);
	} else {
		phoff = ptxed_elf_get(ehdr + 28, 4, msb);
		phentsize = ptxed_elf_get(ehdr + 42, 2, msb);
		phnum = (unsigned int) ptxed_elf_get(ehdr + 44, 2, msb);
	}

	/* Determine the load offset. */
	offset = 0ull;
	if (base) {
		uint64_t minaddr = UINT64_MAX;

		for (idx = 0; idx < phnum; ++idx) {
			struct ptxed_phdr phdr;

			if (ptxed_elf_phdr(file, is64, msb, phoff, phentsize,
					   idx, &phdr) < 0) {
				fprintf(stderr, "%s: warning: %s error "
					"reading phdr %u: %s.\n", prog, name,
					idx, strerror(errno));
				goto out;
			}

			if (phdr.type == ptxed_elf_pt_load &&
			    phdr.vaddr < minaddr)
				minaddr = phdr.vaddr;
		}

		offset = base - minaddr;
	}

	for (sections = 0, idx = 0; idx < phnum; ++idx) {
		struct ptxed_phdr phdr;
		int status;

		if (ptxed_elf_phdr(file, is64, msb, phoff, phentsize, idx,
				   &phdr) < 0) {
			fprintf(stderr,
				"%s: warning: %s error reading phdr %u: %s.\n",
				prog, name, idx, strerror(errno));
			goto out;
		}

		if (phdr.type != ptxed_elf_pt_load || !phdr.filesz)
			continue;

		status = ptxed_add_code(decoder, image, name, phdr.offset,
					phdr.filesz, phdr.vaddr + offset,
					prog);
		if (status < 0) {
			fprintf(stderr, "%s: warning: %s: failed to create "
				"section for phdr %u: %s.\n", prog, name, idx,
				pt_errstr(pt_errcode(status)));
			continue;
		}

		sections += 1;

		if (verbose)
			oprint("%s: offset=0x%" PRIx64 " size=0x%" PRIx64
			       " vaddr=0x%" PRIx64 ".\n", name, phdr.offset,
			       phdr.filesz, phdr.vaddr);
	}

	if (!sections)
		fprintf(stderr,
			"%s: warning: %s: did not find any load sections.\n",
			prog, name);

	errcode = 0;

out:
	fclose(file);
	return errcode;
}

/* ---- disassembly ----
 *
 * What ptxed needs from a disassembler: decode one instruction in a given
 * mode, its length and (relative branches) its target, its class, and its
 * text. */

/* Instructions newer than Zydis 4.0 that Intel PT tracing cares about:
 * ptxed recognizes them by hand. */
enum ptxed_newer {
	pxn_none,
	/* APX JMPABS: an absolute near jump. */
	pxn_jmpabs,
	/* FRED ERETS and ERETU: returns from an event. */
	pxn_erets,
	pxn_eretu
};

struct ptxed_dis {
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];

	/* Not from Zydis: only insn.length, insn.mnemonic and
	 * insn.meta.branch_type are set, and target holds the JMPABS
	 * destination. */
	enum ptxed_newer newer;
	uint64_t target;
};

/* Skip the legacy prefixes other than operand and address size, which
 * none of the newer instructions allows, and REX.  Returns their
 * number. */
static uint8_t ptxed_skip_prefixes(const uint8_t *raw, uint8_t size,
				   int keep_rep)
{
	uint8_t pos;

	for (pos = 0; pos < size; ++pos) {
		switch (raw[pos]) {
		case 0xf2:
		case 0xf3:
			if (keep_rep)
				return pos;
			continue;

		case 0xf0:
		case 0x2e:
		case 0x36:
		case 0x3e:
		case 0x26:
		case 0x64:
		case 0x65:
			continue;
		}
		/* REX (these are 64-bit instructions). */
		if ((raw[pos] & 0xf0) == 0x40)
			continue;
		break;
	}

	return pos;
}

/* In 64-bit mode:
 *   JMPABS  REX2 (d5) with map 0 and W clear, opcode a1, imm64 target
 *   ERETS   f2 0f 01 ca
 *   ERETU   f3 0f 01 ca */
static ZyanStatus ptxed_decode_newer(struct ptxed_dis *dis,
				     const uint8_t *raw, uint8_t size)
{
	uint8_t pos, idx;

	memset(&dis->insn, 0, sizeof(dis->insn));
	dis->target = 0ull;

	/* REX right before REX2 is #UD. */
	pos = ptxed_skip_prefixes(raw, size, 0);
	if (pos + 11 <= size && raw[pos] == 0xd5 && !(raw[pos + 1] & 0x88) &&
	    raw[pos + 2] == 0xa1 && !(pos && (raw[pos - 1] & 0xf0) == 0x40)) {
		dis->newer = pxn_jmpabs;
		dis->insn.length = (uint8_t) (pos + 11);
		dis->insn.mnemonic = ZYDIS_MNEMONIC_JMP;
		dis->insn.meta.branch_type = ZYDIS_BRANCH_TYPE_NEAR;
		for (idx = 0; idx < 8; ++idx)
			dis->target |= (uint64_t) raw[pos + 3 + idx]
				<< (8 * idx);
		return ZYAN_STATUS_SUCCESS;
	}

	pos = ptxed_skip_prefixes(raw, size, 1);
	if (pos + 4 <= size && (raw[pos] == 0xf2 || raw[pos] == 0xf3) &&
	    raw[pos + 1] == 0x0f && raw[pos + 2] == 0x01 &&
	    raw[pos + 3] == 0xca) {
		dis->newer = (raw[pos] == 0xf2) ? pxn_erets : pxn_eretu;
		dis->insn.length = (uint8_t) (pos + 4);
		dis->insn.mnemonic = ZYDIS_MNEMONIC_INVALID;
		dis->insn.meta.branch_type = ZYDIS_BRANCH_TYPE_FAR;
		return ZYAN_STATUS_SUCCESS;
	}

	dis->newer = pxn_none;
	return ZYDIS_STATUS_DECODING_ERROR;
}

/* Decode @size bytes at @raw in @mode.  Returns a Zydis status. */
static ZyanStatus ptxed_decode(const struct ptxed_decoder *decoder,
			       struct ptxed_dis *dis, enum pt_exec_mode mode,
			       const uint8_t *raw, uint8_t size)
{
	const ZydisDecoder *zydis;
	ZyanStatus status;

	/* Code in an unknown mode is decoded as 16-bit code, as libipt's
	 * ptxed does: it hands XED an invalid machine mode, which XED takes
	 * for 16-bit. */
	switch (mode) {
	case ptem_32bit:
		zydis = &decoder->zydis32;
		break;

	case ptem_64bit:
		zydis = &decoder->zydis64;
		break;

	default:
		zydis = &decoder->zydis16;
		break;
	}

	dis->newer = pxn_none;
	status = ZydisDecoderDecodeFull(zydis, raw, size, &dis->insn,
					dis->operands);
	if (!ZYAN_SUCCESS(status) && mode == ptem_64bit &&
	    ZYAN_SUCCESS(ptxed_decode_newer(dis, raw, size)))
		return ZYAN_STATUS_SUCCESS;

	return status;
}

/* XED's error for what Zydis says, as libipt's ptxed prints it: XED's
 * number and name (xed_error_enum_t).  Zydis' reasons that XED does not
 * tell apart are XED's GENERAL_ERROR. */
struct ptxed_xed_error {
	ZyanStatus status;
	unsigned int num;
	const char *name;
};

static const struct ptxed_xed_error ptxed_xed_errors[] = {
	{ ZYDIS_STATUS_NO_MORE_DATA, 1, "BUFFER_TOO_SHORT" },
	{ ZYDIS_STATUS_BAD_REGISTER, 4, "BAD_REGISTER" },
	{ ZYDIS_STATUS_ILLEGAL_LOCK, 5, "BAD_LOCK_PREFIX" },
	{ ZYDIS_STATUS_ILLEGAL_LEGACY_PFX, 6, "BAD_LEGACY_PREFIX" },
	{ ZYDIS_STATUS_ILLEGAL_REX, 7, "BAD_REX_PREFIX" },
	{ ZYDIS_STATUS_INVALID_MAP, 8, "BAD_MAP" },
	{ ZYDIS_STATUS_INSTRUCTION_TOO_LONG, 16, "INSTR_TOO_LONG" },
	{ ZYAN_STATUS_INVALID_ARGUMENT, 17, "INVALID_MODE" }
};

static struct ptxed_xed_error ptxed_zydis_error(ZyanStatus status)
{
	struct ptxed_xed_error err = { 0, 2, "GENERAL_ERROR" };
	size_t i;

	for (i = 0; i < sizeof(ptxed_xed_errors) / sizeof(*ptxed_xed_errors);
	     ++i)
		if (ptxed_xed_errors[i].status == status)
			err = ptxed_xed_errors[i];
	return err;
}

/* The IP of the instruction after @dis at @ip: the branch target for a
 * relative branch (taken or not: a conditional branch ends a block, so the
 * guess is never used) and for JMPABS, else the next instruction. */
static int ptxed_next_ip(uint64_t *pip, const struct ptxed_dis *dis,
			 uint64_t ip, enum pt_exec_mode mode)
{
	uint8_t length;

	length = dis->insn.length;
	if (!length) {
		oprint("[xed error: failed to determine instruction "
		       "length]\n");
		return -pte_bad_insn;
	}

	ip += length;

	/* JMPABS goes to its absolute target.  (libipt's ptxed, going by
	 * XED, adds the target to the next IP as if it were a displacement;
	 * we print where the jump goes.)  The other newer instructions, the
	 * far returns, are followed by the next as far as we can tell. */
	switch (dis->newer) {
	case pxn_jmpabs:
		ip = dis->target;
		break;

	case pxn_none:
		if (dis->insn.raw.imm[0].is_relative)
			ip += (uint64_t) dis->insn.raw.imm[0].value.s;
		else if (dis->insn.raw.imm[1].is_relative)
			ip += (uint64_t) dis->insn.raw.imm[1].value.s;
		break;

	default:
		break;
	}

	/* Outside 64-bit mode the IP wraps at 4 GiB, as the decoders have
	 * it, so that an error's address reads the same whether a block
	 * ends before it or holds the instruction that leads there. */
	if (mode == ptem_16bit || mode == ptem_32bit)
		ip &= 0xffffffffull;
	*pip = ip;
	return 0;
}

/* The branch classes that matter to Intel PT, with the names XED gives
 * them, so that iclass errors read as they do with libipt's ptxed. */
enum ptxed_xclass {
	pxc_other,
	pxc_call_near,
	pxc_ret_near,
	pxc_jmp,
	pxc_jcc,
	pxc_far_call,
	pxc_far_ret,
	pxc_jmp_far,
	pxc_ptwrite
};

static enum ptxed_xclass ptxed_classify(const struct ptxed_dis *dis,
					const char **name)
{
	int far = (dis->insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR);

	*name = NULL;
	switch (dis->newer) {
	case pxn_erets:
		*name = "ERETS";
		return pxc_far_ret;

	case pxn_eretu:
		*name = "ERETU";
		return pxc_far_ret;

	default:
		break;
	}

	switch (dis->insn.mnemonic) {
	case ZYDIS_MNEMONIC_CALL:
		*name = far ? "CALL_FAR" : "CALL_NEAR";
		return far ? pxc_far_call : pxc_call_near;

	case ZYDIS_MNEMONIC_RET:
		*name = far ? "RET_FAR" : "RET_NEAR";
		return far ? pxc_far_ret : pxc_ret_near;

	case ZYDIS_MNEMONIC_JMP:
		*name = far ? "JMP_FAR" :
			(dis->newer == pxn_jmpabs ? "JMPABS" : "JMP");
		return far ? pxc_jmp_far : pxc_jmp;

	case ZYDIS_MNEMONIC_JB:
	case ZYDIS_MNEMONIC_JBE:
	case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
	case ZYDIS_MNEMONIC_JL:
	case ZYDIS_MNEMONIC_JLE:
	case ZYDIS_MNEMONIC_JNB:
	case ZYDIS_MNEMONIC_JNBE:
	case ZYDIS_MNEMONIC_JNL:
	case ZYDIS_MNEMONIC_JNLE:
	case ZYDIS_MNEMONIC_JNO:
	case ZYDIS_MNEMONIC_JNP:
	case ZYDIS_MNEMONIC_JNS:
	case ZYDIS_MNEMONIC_JNZ:
	case ZYDIS_MNEMONIC_JO:
	case ZYDIS_MNEMONIC_JP:
	case ZYDIS_MNEMONIC_JRCXZ:
	case ZYDIS_MNEMONIC_JS:
	case ZYDIS_MNEMONIC_JZ:
	case ZYDIS_MNEMONIC_LOOP:
	case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
		return pxc_jcc;

	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_VMCALL:
		return pxc_far_call;

	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_SYSEXIT:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_UIRET:
	case ZYDIS_MNEMONIC_VMLAUNCH:
	case ZYDIS_MNEMONIC_VMRESUME:
		return pxc_far_ret;

	case ZYDIS_MNEMONIC_PTWRITE:
		return pxc_ptwrite;

	default:
		return pxc_other;
	}
}

/* Print the XED-style name of @dis's instruction class: upper case
 * mnemonic unless ptxed_classify() named it. */
static void ptxed_print_xclass(const struct ptxed_dis *dis)
{
	const char *name, *mnemonic;

	(void) ptxed_classify(dis, &name);
	if (name) {
		oprint("%s", name);
		return;
	}

	mnemonic = ZydisMnemonicGetString(dis->insn.mnemonic);
	if (!mnemonic) {
		oprint("INVALID");
		return;
	}

	for (; *mnemonic; ++mnemonic) {
		char c = *mnemonic;

		if ('a' <= c && c <= 'z')
			c = (char) (c - 'a' + 'A');
		oprint("%c", c);
	}
}

static const char *visualize_iclass(enum pt_insn_class iclass)
{
	switch (iclass) {
	case ptic_unknown:
		return "unknown";

	case ptic_other:
		return "other";

	case ptic_call:
		return "near call";

	case ptic_return:
		return "near return";

	case ptic_jump:
		return "near jump";

	case ptic_cond_jump:
		return "cond jump";

	case ptic_far_call:
		return "far call";

	case ptic_far_return:
		return "far return";

	case ptic_far_jump:
		return "far jump";

	case ptic_ptwrite:
		return "ptwrite";

	case ptic_indirect:
		return "indirect";
	}

	return "undefined";
}

/* Does the decoder's class of an instruction agree with the
 * disassembler's?  Any branch may also be reported as ptic_indirect. */
static void check_insn_iclass(const struct ptxed_dis *dis,
			      const struct pt_insn *insn, uint64_t offset)
{
	const char *name;

	switch (ptxed_classify(dis, &name)) {
	case pxc_other:
		if (insn->iclass == ptic_other)
			return;
		break;

	case pxc_call_near:
		if (insn->iclass == ptic_call || insn->iclass == ptic_indirect)
			return;
		break;

	case pxc_ret_near:
		if (insn->iclass == ptic_return ||
		    insn->iclass == ptic_indirect)
			return;
		break;

	case pxc_jmp:
		if (insn->iclass == ptic_jump || insn->iclass == ptic_indirect)
			return;
		break;

	case pxc_jcc:
		if (insn->iclass == ptic_cond_jump)
			return;
		break;

	case pxc_far_call:
		if (insn->iclass == ptic_far_call ||
		    insn->iclass == ptic_indirect)
			return;
		break;

	case pxc_far_ret:
		if (insn->iclass == ptic_far_return ||
		    insn->iclass == ptic_indirect)
			return;
		break;

	case pxc_jmp_far:
		if (insn->iclass == ptic_far_jump ||
		    insn->iclass == ptic_indirect)
			return;
		break;

	case pxc_ptwrite:
		if (insn->iclass == ptic_ptwrite)
			return;
		break;
	}

	oprint("[%" PRIx64 ", %" PRIx64 ": iclass error: iclass: %s, "
	       "xed iclass: ", offset, insn->ip,
	       visualize_iclass(insn->iclass));
	ptxed_print_xclass(dis);
	oprint("]\n");
}

static void check_insn(const struct ptxed_decoder *decoder,
		       const struct pt_insn *insn, uint64_t offset)
{
	struct ptxed_dis dis;
	ZyanStatus zs;

	if (insn->isid <= 0 && !decoder->use_callback)
		oprint("[%" PRIx64 ", %" PRIx64 ": check error: "
		       "bad isid]\n", offset, insn->ip);

	zs = ptxed_decode(decoder, &dis, insn->mode, insn->raw, insn->size);
	if (!ZYAN_SUCCESS(zs)) {
		oprint("[%" PRIx64 ", %" PRIx64 ": xed error: (%u) %s]\n",
		       offset, insn->ip, ptxed_zydis_error(zs).num,
		       ptxed_zydis_error(zs).name);
		return;
	}

	/* The decoder's size must be the instruction's length. */
	if (dis.insn.length != insn->size) {
		oprint("[%" PRIx64 ", %" PRIx64 ": check error: size: %u, "
		       "xed size: %u]\n", offset, insn->ip, insn->size,
		       dis.insn.length);
		return;
	}

	check_insn_iclass(&dis, insn, offset);
}

static void print_raw_insn(const struct pt_insn *insn)
{
	uint8_t length, idx;

	length = insn->size;
	if (sizeof(insn->raw) < length)
		length = sizeof(insn->raw);

	for (idx = 0; idx < length; ++idx)
		oprint(" %02x", insn->raw[idx]);

	for (; idx < pt_max_insn_size; ++idx)
		oprint("   ");
}

static void dis_print_insn(const struct ptxed_decoder *decoder,
			   const struct ptxed_dis *dis,
			   const struct pt_insn *insn,
			   const struct ptxed_options *options)
{
	char buffer[256];
	ZyanStatus zs;

	if (options->print_raw_insn) {
		unsigned int length, i;

		length = dis->insn.length;
		if (insn->size < length) {
			oprint(" [xed error: decoded inst exceeds bounds]");
			length = insn->size;
		}
		for (i = 0; i < length; ++i)
			oprint(" %02x", insn->raw[i]);

		for (; i < pt_max_insn_size; ++i)
			oprint("   ");
	}

	switch (dis->newer) {
	case pxn_none:
		break;

	case pxn_jmpabs:
		oprint("  jmpabs %s0x%" PRIx64, options->att_format ? "$" : "",
		       dis->target);
		return;

	case pxn_erets:
		oprint("  erets");
		return;

	case pxn_eretu:
		oprint("  eretu");
		return;
	}

	zs = ZydisFormatterFormatInstruction(&decoder->formatter, &dis->insn,
					     dis->operands,
					     dis->insn.operand_count_visible,
					     buffer, sizeof(buffer), insn->ip,
					     NULL);
	if (!ZYAN_SUCCESS(zs)) {
		oprint(" [xed print error]");
		return;
	}

	oprint("  %s", buffer);
}

static void print_insn(const struct ptxed_decoder *decoder,
		       const struct pt_insn *insn,
		       const struct ptxed_options *options, uint64_t offset,
		       uint64_t time)
{
	if (options->print_offset)
		oprint_hex(offset, "  ");

	if (options->print_time)
		oprint_hex(time, "  ");

	if (insn->speculative)
		oputs("? ", 2);

	oprint_hex(insn->ip, "");

	if (!options->dont_print_insn) {
		struct ptxed_dis dis;
		ZyanStatus zs;

		zs = ptxed_decode(decoder, &dis, insn->mode, insn->raw,
				  insn->size);
		if (ZYAN_SUCCESS(zs))
			dis_print_insn(decoder, &dis, insn, options);
		else {
			print_raw_insn(insn);
			oprint(" [xed decode error: (%u) %s]",
			       ptxed_zydis_error(zs).num,
			       ptxed_zydis_error(zs).name);
		}
	}

	oputs("\n", 1);
}

/* ---- events ---- */

static const char *print_exec_mode(enum pt_exec_mode mode)
{
	switch (mode) {
	case ptem_unknown:
		return "<unknown>";

	case ptem_16bit:
		return "16-bit";

	case ptem_32bit:
		return "32-bit";

	case ptem_64bit:
		return "64-bit";
	}

	return "<invalid>";
}

/* Print ", ip: <ip>" if asked to and the IP is valid. */
static void print_event_ip(const struct pt_event *event,
			   const struct ptxed_options *options, uint64_t ip)
{
	if (options->print_event_ip && !event->ip_suppressed)
		oprint(", ip: %016" PRIx64, ip);
}

static void print_event(const struct pt_event *event,
			const struct ptxed_options *options, uint64_t offset)
{
	oprint("[");

	if (options->print_offset)
		oprint("%016" PRIx64 "  ", offset);

	if (options->print_event_time && event->has_tsc)
		oprint("%016" PRIx64 "  ", event->tsc);

	switch (event->type) {
	case ptev_enabled:
		oprint("%s", event->variant.enabled.resumed ? "resumed" :
		       "enabled");

		/* The enabled IP is always valid. */
		if (options->print_event_ip)
			oprint(", ip: %016" PRIx64, event->variant.enabled.ip);
		break;

	case ptev_disabled:
		oprint("disabled");
		print_event_ip(event, options, event->variant.disabled.ip);
		break;

	case ptev_async_disabled:
		oprint("disabled");

		if (options->print_event_ip) {
			oprint(", at: %016" PRIx64,
			       event->variant.async_disabled.at);

			if (!event->ip_suppressed)
				oprint(", ip: %016" PRIx64,
				       event->variant.async_disabled.ip);
		}
		break;

	case ptev_async_branch:
		oprint("interrupt");

		if (options->print_event_ip) {
			oprint(", from: %016" PRIx64,
			       event->variant.async_branch.from);

			if (!event->ip_suppressed)
				oprint(", to: %016" PRIx64,
				       event->variant.async_branch.to);
		}
		break;

	case ptev_paging:
		oprint("paging, cr3: %016" PRIx64 "%s",
		       event->variant.paging.cr3,
		       event->variant.paging.non_root ? ", nr" : "");
		break;

	case ptev_async_paging:
		oprint("paging, cr3: %016" PRIx64 "%s",
		       event->variant.async_paging.cr3,
		       event->variant.async_paging.non_root ? ", nr" : "");

		if (options->print_event_ip)
			oprint(", ip: %016" PRIx64,
			       event->variant.async_paging.ip);
		break;

	case ptev_overflow:
		oprint("overflow");
		print_event_ip(event, options, event->variant.overflow.ip);
		break;

	case ptev_exec_mode:
		oprint("exec mode: %s",
		       print_exec_mode(event->variant.exec_mode.mode));
		print_event_ip(event, options, event->variant.exec_mode.ip);
		break;

	case ptev_tsx:
		if (event->variant.tsx.aborted)
			oprint("aborted");
		else if (event->variant.tsx.speculative)
			oprint("begin transaction");
		else
			oprint("committed");

		print_event_ip(event, options, event->variant.tsx.ip);
		break;

	case ptev_stop:
		oprint("stopped");
		break;

	case ptev_vmcs:
		oprint("vmcs, base: %016" PRIx64, event->variant.vmcs.base);
		break;

	case ptev_async_vmcs:
		oprint("vmcs, base: %016" PRIx64,
		       event->variant.async_vmcs.base);

		if (options->print_event_ip)
			oprint(", ip: %016" PRIx64,
			       event->variant.async_vmcs.ip);
		break;

	case ptev_exstop:
		oprint("exstop");
		print_event_ip(event, options, event->variant.exstop.ip);
		break;

	case ptev_mwait:
		oprint("mwait %" PRIx32 " %" PRIx32,
		       event->variant.mwait.hints, event->variant.mwait.ext);
		print_event_ip(event, options, event->variant.mwait.ip);
		break;

	case ptev_pwre:
		oprint("pwre c%u.%u", (event->variant.pwre.state + 1) & 0xf,
		       (event->variant.pwre.sub_state + 1) & 0xf);

		if (event->variant.pwre.hw)
			oprint(" hw");
		break;

	case ptev_pwrx:
		oprint("pwrx ");

		if (event->variant.pwrx.interrupt)
			oprint("int: ");

		if (event->variant.pwrx.store)
			oprint("st: ");

		if (event->variant.pwrx.autonomous)
			oprint("hw: ");

		oprint("c%u (c%u)", (event->variant.pwrx.last + 1) & 0xf,
		       (event->variant.pwrx.deepest + 1) & 0xf);
		break;

	case ptev_ptwrite:
		oprint("ptwrite: %" PRIx64, event->variant.ptwrite.payload);
		print_event_ip(event, options, event->variant.ptwrite.ip);
		break;

	case ptev_tick:
		oprint("tick");
		print_event_ip(event, options, event->variant.tick.ip);
		break;

	case ptev_cbr:
		oprint("cbr: %x", event->variant.cbr.ratio);
		break;

	case ptev_mnt:
		oprint("mnt: %" PRIx64, event->variant.mnt.payload);
		break;

	case ptev_tip:
		oprint("tip: %" PRIx64, event->variant.tip.ip);
		break;

	case ptev_tnt: {
		uint64_t index;

		/* The oldest bit is the highest of @size bits. */
		oprint("tnt: ");
		for (index = event->variant.tnt.size; index; index >>= 1)
			oprint("%s",
			       (event->variant.tnt.bits & index) ? "!" : ".");
	}
		break;

	case ptev_iflags:
		oprint("interrupts %s",
		       event->variant.iflags.iflag ? "enabled" : "disabled");
		print_event_ip(event, options, event->variant.iflags.ip);
		break;

	case ptev_interrupt:
		oprint("interrupt %u", event->variant.interrupt.vector);

		if (event->variant.interrupt.has_cr2)
			oprint(", cr2: %016" PRIx64,
			       event->variant.interrupt.cr2);

		print_event_ip(event, options, event->variant.interrupt.ip);
		break;

	case ptev_iret:
		oprint("iret");
		print_event_ip(event, options, event->variant.iret.ip);
		break;

	case ptev_smi:
		oprint("smi");
		print_event_ip(event, options, event->variant.smi.ip);
		break;

	case ptev_rsm:
		oprint("rsm");
		print_event_ip(event, options, event->variant.rsm.ip);
		break;

	case ptev_sipi:
		oprint("sipi: %x", event->variant.sipi.vector);
		break;

	case ptev_init:
		oprint("init");
		print_event_ip(event, options, event->variant.init.ip);
		break;

	case ptev_vmentry:
		oprint("vmentry");
		print_event_ip(event, options, event->variant.vmentry.ip);
		break;

	case ptev_vmexit:
		oprint("vmexit");

		if (event->variant.vmexit.has_vector)
			oprint(", intr: %u", event->variant.vmexit.vector);

		if (event->variant.vmexit.has_vmxr)
			oprint(", vmxr: %016" PRIx64,
			       event->variant.vmexit.vmxr);

		if (event->variant.vmexit.has_vmxq)
			oprint(", vmxq: %016" PRIx64,
			       event->variant.vmexit.vmxq);

		print_event_ip(event, options, event->variant.vmexit.ip);
		break;

	case ptev_shutdown:
		oprint("shutdown");
		print_event_ip(event, options, event->variant.shutdown.ip);
		break;

	case ptev_uintr:
		oprint("uintr %u", event->variant.uintr.vector);
		print_event_ip(event, options, event->variant.uintr.ip);
		break;

	case ptev_uiret:
		oprint("uiret");
		print_event_ip(event, options, event->variant.uiret.ip);
		break;

	case ptev_trig:
		oprint("trig %02x", event->variant.trig.trbv);

		if (event->variant.trig.mult)
			oprint(", mult");

		print_event_ip(event, options, event->variant.trig.ip);

		if (event->variant.trig.icnt)
			oprint(", icnt: %u", event->variant.trig.icnt);
		break;

	case ptev_swintr:
		oprint("swintr %u", event->variant.swintr.vector);
		print_event_ip(event, options, event->variant.swintr.ip);
		break;

	case ptev_syscall:
		oprint("syscall");
		print_event_ip(event, options, event->variant.syscall.ip);
		break;
	}

	oprint("]\n");
}

/* ---- errors ---- */

static int ptxed_get_offset(const struct ptxed_decoder *decoder,
			    uint64_t *offset)
{
	switch (decoder->type) {
	case pdt_insn_decoder:
		return pt_insn_get_offset(decoder->variant.insn, offset);

	case pdt_block_decoder:
		return pt_blk_get_offset(decoder->variant.block, offset);
	}

	return -pte_internal;
}

/* Report an error at @ip with the decoder's current trace offset. */
static void diagnose(const struct ptxed_decoder *decoder, uint64_t ip,
		     const char *errtype, int errcode)
{
	uint64_t pos;
	int err;

	pos = 0ull;
	err = ptxed_get_offset(decoder, &pos);
	if (err < 0) {
		oprint("could not determine offset: %s\n",
		       pt_errstr(pt_errcode(err)));
		oprint("[?, %" PRIx64 ": %s: %s]\n", ip, errtype,
		       pt_errstr(pt_errcode(errcode)));
	} else
		oprint("[%" PRIx64 ", %" PRIx64 ": %s: %s]\n", pos, ip,
		       errtype, pt_errstr(pt_errcode(errcode)));
}

/* An error from pt_insn_next() concerns either @insn or the instruction
 * after it.  If @insn decodes and we can tell where it goes, report the
 * error there; -pte_bad_query always concerns @insn itself. */
static void diagnose_insn(const struct ptxed_decoder *decoder,
			  const char *errtype, int errcode,
			  const struct pt_insn *insn)
{
	uint64_t ip;

	ip = insn->ip;
	if (errcode != -pte_bad_query && insn->iclass != ptic_unknown) {
		struct ptxed_dis dis;
		ZyanStatus zs;

		zs = ptxed_decode(decoder, &dis, insn->mode, insn->raw,
				  insn->size);
		if (ZYAN_SUCCESS(zs))
			(void) ptxed_next_ip(&ip, &dis, ip, insn->mode);
	}

	diagnose(decoder, ip, errtype, errcode);
}

/* --resync-on-error can get stuck: on some broken traces the decoder
 * resyncs to where it was and fails there again, for ever.  An error that
 * repeats the one before it (same trace offset, IP and error) right after
 * a resync means no progress: it is reported a second time, as the sync
 * loop does, and the decoder then searches the next PSB as it does without
 * --resync-on-error. */
struct ptxed_last_error {
	uint64_t offset;
	uint64_t ip;
	int status;
	int valid;
};

/* Remember this error; returns non-zero if it repeats the last one. */
static int ptxed_repeated_error(const struct ptxed_decoder *decoder,
				struct ptxed_last_error *last, uint64_t ip,
				int status)
{
	uint64_t offset;
	int repeated;

	offset = 0ull;
	if (ptxed_get_offset(decoder, &offset) < 0)
		return 1;

	repeated = last->valid && last->offset == offset && last->ip == ip &&
		last->status == status;

	last->offset = offset;
	last->ip = ip;
	last->status = status;
	last->valid = 1;

	return repeated;
}

/* ---- the instruction flow decoder ---- */

/* Both decoders report events and resynchronize alike; these dispatch on
 * the decoder type. */
static int ptxed_event(struct ptxed_decoder *decoder, struct pt_event *event)
{
	switch (decoder->type) {
	case pdt_insn_decoder:
		return pt_insn_event(decoder->variant.insn, event,
				     sizeof(*event));

	case pdt_block_decoder:
		return pt_blk_event(decoder->variant.block, event,
				    sizeof(*event));
	}

	return -pte_internal;
}

static int ptxed_resync(struct ptxed_decoder *decoder)
{
	switch (decoder->type) {
	case pdt_insn_decoder:
		return pt_insn_resync(decoder->variant.insn);

	case pdt_block_decoder:
		return pt_blk_resync(decoder->variant.block);
	}

	return -pte_internal;
}

#ifndef IPT_NO_STDIO
/* Show the sideband session the event; switch to the image it gives. */
static int ptxed_sb_event(struct ptxed_decoder *decoder,
			  const struct pt_event *event,
			  const struct ptxed_options *options)
{
	struct pt_image *image = NULL;
	int errcode;

	errcode = pt_sb_event(decoder->session, &image, event, sizeof(*event),
			      stdout, options->sb.flags);
	if (errcode < 0 || !image)
		return errcode;

	switch (decoder->type) {
	case pdt_insn_decoder:
		return pt_insn_set_image(decoder->variant.insn, image);

	case pdt_block_decoder:
		return pt_blk_set_image(decoder->variant.block, image);
	}

	return -pte_internal;
}
#endif

static int handle_one_event(struct ptxed_decoder *decoder,
			    const struct ptxed_options *options,
			    uint64_t *time)
{
	struct pt_event event;
	uint64_t offset;
	int status, errcode;

	offset = 0ull;
	if (options->print_offset) {
		errcode = ptxed_get_offset(decoder, &offset);
		if (errcode < 0)
			return errcode;
	}

	status = ptxed_event(decoder, &event);
	if (status < 0)
		return status;

	*time = event.tsc;

	if (!options->quiet && !event.status_update)
		print_event(&event, options, offset);

#ifndef IPT_NO_STDIO
	errcode = ptxed_sb_event(decoder, &event, options);
	if (errcode < 0)
		return errcode;
#endif

	return status;
}

/* Resync after an error; events the decoder skips on the way are still
 * reported. */
static int resync(struct ptxed_decoder *decoder,
		  const struct ptxed_options *options, uint64_t *time)
{
	int status;

	for (;;) {
		status = ptxed_resync(decoder);
		if (status >= 0)
			break;

		if (status != -pte_event_ignored)
			return status;

		status = handle_one_event(decoder, options, time);
		if (status < 0)
			return status;
	}

	if ((status & pts_ip_suppressed) && !options->quiet)
		oprint("[disabled]\n");

	return status;
}

static int decode_one_insn(struct ptxed_decoder *decoder,
			   const struct ptxed_options *options,
			   struct ptxed_stats *stats, struct pt_insn *insn,
			   uint64_t time)
{
	struct pt_insn_decoder *ptdec;
	uint64_t offset;
	int status;

	ptdec = decoder->variant.insn;
	offset = 0ull;

	if (options->print_offset || options->check) {
		status = pt_insn_get_offset(ptdec, &offset);
		if (status < 0)
			return status;
	}

	status = pt_insn_next(ptdec, insn, sizeof(*insn));
	if (status < 0) {
		/* An event that was not announced: the block decoder would
		 * return an empty block; fetch the event instead. */
		if (status == -pte_event_ignored)
			return pts_event_pending;

		/* The instruction may have been decoded even so. */
		if (insn->iclass == ptic_unknown)
			return status;
	}

	if (!options->quiet)
		print_insn(decoder, insn, options, offset, time);

	if (stats)
		stats->insn += 1;

	if (options->check)
		check_insn(decoder, insn, offset);

	return status;
}

/* ---- the block decoder ---- */

/* Fetch the instruction at @ip in @block: the block's own copy if it is
 * the truncated last one, else from memory. */
static int block_fetch_insn(const struct ptxed_decoder *decoder,
			    struct pt_insn *insn,
			    const struct pt_block *block, uint64_t ip)
{
	int size;

	if (!block->ninsn)
		return -pte_invalid;

	memset(insn, 0, sizeof(*insn));
	insn->mode = block->mode;
	insn->isid = block->isid;
	insn->ip = ip;

	if ((ip == block->end_ip) && block->truncated) {
		if (!block->size || (sizeof(insn->raw) < (size_t) block->size))
			return -pte_bad_insn;

		insn->size = block->size;
		memcpy(insn->raw, block->raw, insn->size);
		return 0;
	}

#ifndef IPT_NO_STDIO
	if (insn->isid > 0 || !decoder->use_callback)
		size = pt_iscache_read(decoder->iscache, insn->raw,
				       sizeof(insn->raw), insn->isid, ip);
	else
#endif
		size = ptxed_mem_read(&decoder->memory, insn->raw,
				      sizeof(insn->raw), ip);
	if (size < 0)
		return size;

	insn->size = (uint8_t) size;
	return 0;
}

/* An error from pt_blk_next() usually concerns the instruction after the
 * block: report it at the IP the last instruction leads to, if we can tell
 * (-pte_bad_query concerns the last instruction itself). */
static void diagnose_block(const struct ptxed_decoder *decoder,
			   const char *errtype, int errcode,
			   const struct pt_block *block)
{
	uint64_t ip;

	if (!block->ninsn)
		ip = block->ip;
	else {
		ip = block->end_ip;

		if (errcode != -pte_bad_query) {
			struct pt_insn insn;
			struct ptxed_dis dis;
			ZyanStatus zs;

			if (block_fetch_insn(decoder, &insn, block, ip) >= 0) {
				zs = ptxed_decode(decoder, &dis, block->mode,
						  insn.raw, insn.size);
				if (ZYAN_SUCCESS(zs))
					(void) ptxed_next_ip(&ip, &dis,
							     insn.ip,
							     block->mode);
			}
		}
	}

	diagnose(decoder, ip, errtype, errcode);
}

/* Walk the block's instructions from its first IP, printing each. */
static void print_block(const struct ptxed_decoder *decoder,
			const struct pt_block *block,
			const struct ptxed_options *options,
			const struct ptxed_stats *stats, uint64_t offset,
			uint64_t time)
{
	uint64_t ip;
	uint16_t ninsn;

	if (options->track_blocks) {
		oprint("[block");
		if (stats)
			oprint(" %" PRIx64, stats->blocks);
		oprint("]\n");
	}

	ninsn = block->ninsn;
	if (!ninsn)
		return;

	ip = block->ip;
	for (;;) {
		struct pt_insn insn;
		struct ptxed_dis dis;
		ZyanStatus zs;
		int errcode;

		if (options->print_offset)
			oprint_hex(offset, "  ");

		if (options->print_time)
			oprint_hex(time, "  ");

		if (block->speculative)
			oputs("? ", 2);

		oprint_hex(ip, "");

		errcode = block_fetch_insn(decoder, &insn, block, ip);
		if (errcode < 0) {
			oprint(" [fetch error: %s]\n",
			       pt_errstr(pt_errcode(errcode)));
			break;
		}

		zs = ptxed_decode(decoder, &dis, block->mode, insn.raw,
				  insn.size);
		if (!ZYAN_SUCCESS(zs)) {
			print_raw_insn(&insn);
			oprint(" [xed decode error: (%u) %s]\n",
			       ptxed_zydis_error(zs).num,
			       ptxed_zydis_error(zs).name);
			break;
		}

		if (!options->dont_print_insn)
			dis_print_insn(decoder, &dis, &insn, options);

		oputs("\n", 1);

		ninsn -= 1;
		if (!ninsn)
			break;

		errcode = ptxed_next_ip(&ip, &dis, ip, block->mode);
		if (errcode < 0) {
			diagnose(decoder, ip, "reconstruct error", errcode);
			break;
		}
	}

	if (ip != block->end_ip)
		diagnose(decoder, ip, "reconstruct error", -pte_nosync);
}

/* Walk the block again: every instruction must decode, the walk must end
 * at end_ip, and the last instruction's class must match. */
static void check_block(const struct ptxed_decoder *decoder,
			const struct pt_block *block, uint64_t offset)
{
	struct pt_insn insn;
	struct ptxed_dis dis;
	uint64_t ip;
	uint16_t ninsn;
	int errcode;

	ninsn = block->ninsn;
	if (!ninsn)
		return;

	if (block->isid <= 0 && !decoder->use_callback)
		oprint("[%" PRIx64 ", %" PRIx64 ": check error: "
		       "bad isid]\n", offset, block->ip);

	ip = block->ip;
	do {
		ZyanStatus zs;

		errcode = block_fetch_insn(decoder, &insn, block, ip);
		if (errcode < 0) {
			oprint("[%" PRIx64 ", %" PRIx64 ": fetch error: %s]\n",
			       offset, ip, pt_errstr(pt_errcode(errcode)));
			return;
		}

		zs = ptxed_decode(decoder, &dis, block->mode, insn.raw,
				  insn.size);
		if (!ZYAN_SUCCESS(zs)) {
			oprint("[%" PRIx64 ", %" PRIx64
			       ": xed error: (%u) %s]\n", offset, insn.ip,
			       ptxed_zydis_error(zs).num,
			       ptxed_zydis_error(zs).name);
			return;
		}

		errcode = ptxed_next_ip(&ip, &dis, ip, block->mode);
		if (errcode < 0) {
			oprint("[%" PRIx64 ", %" PRIx64 ": error: %s]\n",
			       offset, ip, pt_errstr(pt_errcode(errcode)));
			return;
		}
	} while (--ninsn);

	/* @insn and @dis are the block's last instruction. */
	if (insn.ip != block->end_ip)
		oprint("[%" PRIx64 ", %" PRIx64 ": error: did not reach end: %"
		       PRIx64 "]\n", offset, insn.ip, block->end_ip);

	insn.iclass = block->iclass;
	if (insn.iclass)
		check_insn_iclass(&dis, &insn, offset);
}

static int decode_one_block(struct ptxed_decoder *decoder,
			    const struct ptxed_options *options,
			    struct ptxed_stats *stats, struct pt_block *block,
			    uint64_t time)
{
	struct pt_block_decoder *ptdec;
	uint64_t offset;
	int status;

	ptdec = decoder->variant.block;
	offset = 0ull;

	if (options->print_offset || options->check) {
		status = pt_blk_get_offset(ptdec, &offset);
		if (status < 0)
			return status;
	}

	status = pt_blk_next(ptdec, block, sizeof(*block));

	/* Even after an error, the block may hold instructions. */
	if (stats) {
		stats->insn += block->ninsn;
		stats->blocks += 1;
	}

	if (!options->quiet)
		print_block(decoder, block, options, stats, offset, time);

	if (options->check)
		check_block(decoder, block, offset);

	return status;
}

/* ---- the decode loop ----
 * Both decoders go through one loop: synchronize, drain pending events,
 * decode, report an error with the position it happened at, and resync
 * (or search the next PSB).  It is taken one step at a time, each step
 * one call into the decoder, so that --threads can stop it between two
 * calls, compare its state with another decoder's, and go on later. */

enum ptxed_phase {
	ptxed_phase_sync,
	ptxed_phase_run,
	ptxed_phase_done
};

struct ptxed_run {
	enum ptxed_phase phase;
	/* The decoder's last status, in ptxed_phase_run. */
	int status;
	/* The offset of the last failed sync, to see progress. */
	uint64_t sync;
	/* The time of the last event, printed with instructions. */
	uint64_t time;
	struct ptxed_last_error last;
	/* The last instruction or block, for error reports. */
	struct pt_insn insn;
	struct pt_block block;
};

static void ptxed_run_init(struct ptxed_run *run)
{
	memset(run, 0, sizeof(*run));
	run->phase = ptxed_phase_sync;
}

static int ptxed_sync_forward(struct ptxed_decoder *decoder)
{
	switch (decoder->type) {
	case pdt_insn_decoder:
		return pt_insn_sync_forward(decoder->variant.insn);

	case pdt_block_decoder:
		return pt_blk_sync_forward(decoder->variant.block);
	}

	return -pte_internal;
}

static void ptxed_diagnose_run(const struct ptxed_decoder *decoder,
			       const struct ptxed_run *run,
			       const char *errtype, int errcode)
{
	if (decoder->type == pdt_insn_decoder)
		diagnose_insn(decoder, errtype, errcode, &run->insn);
	else
		diagnose_block(decoder, errtype, errcode, &run->block);
}

static void ptxed_step_sync(struct ptxed_decoder *decoder,
			    struct ptxed_run *run)
{
	uint64_t new_sync;
	int status, errcode;

	/* The instruction or block is used for error reports. */
	memset(&run->insn, 0, sizeof(run->insn));
	memset(&run->block, 0, sizeof(run->block));
	memset(&run->last, 0, sizeof(run->last));

	status = ptxed_sync_forward(decoder);
	if (status >= 0) {
		run->status = status;
		run->phase = ptxed_phase_run;
		return;
	}

	if (status == -pte_eos) {
		run->phase = ptxed_phase_done;
		return;
	}

	ptxed_diagnose_run(decoder, run, "sync error", status);

	/* Give up if we are not making progress. */
	errcode = ptxed_get_offset(decoder, &new_sync);
	if (errcode < 0 || new_sync <= run->sync) {
		run->phase = ptxed_phase_done;
		return;
	}
	run->sync = new_sync;
}

/* Handle the error in run->status.  Returns it, as reported. */
static int ptxed_step_error(struct ptxed_decoder *decoder,
			    const struct ptxed_options *options,
			    struct ptxed_run *run)
{
	uint64_t ip;
	int status;

	status = run->status;
	if (status == -pte_eos) {
		run->phase = ptxed_phase_done;
		return 0;
	}

	ptxed_diagnose_run(decoder, run, "error", status);

	ip = decoder->type == pdt_insn_decoder ? run->insn.ip : run->block.ip;
	if (!options->resync_on_error ||
	    ptxed_repeated_error(decoder, &run->last, ip, status)) {
		run->phase = ptxed_phase_sync;
		return status;
	}

	run->status = resync(decoder, options, &run->time);
	if (run->status < 0) {
		ptxed_diagnose_run(decoder, run, "resync error", run->status);
		run->phase = ptxed_phase_sync;
		return run->status;
	}
	return status;
}

/* Where the output of this thread stands: the bytes in its piece's
 * buffer (--threads); zero when it prints to stdout. */
static size_t ptxed_mark(void)
{
	return ptxed_out ? ptxed_out->n : 0;
}

/* Up to @n steps of the loop (n > 0): one, or, while nothing but
 * decoding is to be done, up to @n calls of the decoder in a loop of
 * their own, as tight as the decoder's loop in libipt's ptxed.
 * *before: the output mark before the last step.  Returns the steps
 * taken. */
static unsigned int ptxed_step(struct ptxed_decoder *decoder,
			       const struct ptxed_options *options,
			       struct ptxed_stats *stats, struct ptxed_run *run,
			       unsigned int n, size_t *before)
{
	unsigned int taken = 0;
	int status;

	*before = ptxed_mark();
	switch (run->phase) {
	case ptxed_phase_done:
		return 1;

	case ptxed_phase_sync:
		ptxed_step_sync(decoder, run);
		return 1;

	case ptxed_phase_run:
		break;
	}

	status = run->status;
	if (status < 0) {
		(void) ptxed_step_error(decoder, options, run);
		return 1;
	}

	if (status & pts_event_pending) {
		run->status = handle_one_event(decoder, options, &run->time);
		return 1;
	}

	if (status & pts_eos) {
		if (!(status & pts_ip_suppressed) && !options->quiet)
			oprint("[end of trace]\n");
		run->phase = ptxed_phase_done;
		return 1;
	}

	/* A status without an event, an error or the end: the next step
	 * is one more call of the decoder, and so on. */
	if (decoder->type == pdt_insn_decoder) {
		do {
			*before = ptxed_mark();
			status = decode_one_insn(decoder, options, stats,
						 &run->insn, run->time);
		} while (++taken < n && status >= 0 &&
			 !(status & (pts_event_pending | pts_eos)));
	} else {
		do {
			*before = ptxed_mark();
			status = decode_one_block(decoder, options, stats,
						  &run->block, run->time);
		} while (++taken < n && status >= 0 &&
			 !(status & (pts_event_pending | pts_eos)));
	}
	run->status = status;
	return taken;
}

static void decode(struct ptxed_decoder *decoder,
		   const struct ptxed_options *options,
		   struct ptxed_stats *stats)
{
	struct ptxed_run run;
	size_t before;

	ptxed_run_init(&run);
	while (run.phase != ptxed_phase_done)
		(void) ptxed_step(decoder, options, stats, &run, UINT_MAX,
				  &before);
}

static int alloc_decoder(struct ptxed_decoder *decoder,
			 const struct pt_config *conf, struct pt_image *image,
			 const char *prog)
{
	struct pt_config config;
	int errcode;

	config = *conf;

	switch (decoder->type) {
	case pdt_insn_decoder:
		config.flags = decoder->insn_flags;

		decoder->variant.insn = pt_insn_alloc_decoder(&config);
		if (!decoder->variant.insn) {
			fprintf(stderr, "%s: failed to create decoder.\n",
				prog);
			return -pte_nomem;
		}

		errcode = pt_insn_set_image(decoder->variant.insn, image);
		if (errcode < 0) {
			fprintf(stderr, "%s: failed to set image.\n", prog);
			return errcode;
		}
		(void) ipt_insn_set_vm_tolerant(decoder->variant.insn,
						decoder->vm_tolerant);
		(void) ipt_insn_set_cr3_filter(decoder->variant.insn,
					       decoder->cr3_filter);
		break;

	case pdt_block_decoder:
		config.flags = decoder->block_flags;

		decoder->variant.block = pt_blk_alloc_decoder(&config);
		if (!decoder->variant.block) {
			fprintf(stderr, "%s: failed to create  decoder.\n",
				prog);
			return -pte_nomem;
		}

		errcode = pt_blk_set_image(decoder->variant.block, image);
		if (errcode < 0) {
			fprintf(stderr, "%s: failed to set image.\n", prog);
			return errcode;
		}
		(void) ipt_blk_set_vm_tolerant(decoder->variant.block,
					       decoder->vm_tolerant);
		(void) ipt_blk_set_cr3_filter(decoder->variant.block,
					      decoder->cr3_filter);
		break;
	}

	return 0;
}

/* ---- --threads: one trace, decoded in pieces at once ----
 *
 * ipt.h's ipt_seg_split cuts the trace at PSBs into pieces, many per
 * thread, which the threads take in order; the decode loop above runs
 * each piece (struct ptxed_loop: it is ipt.h's struct ipt_seg_loop),
 * printing into the piece's buffer, until the piece joins a later one
 * where the two loops agree (ipt_seg_decode: the stitching rule of
 * ipt.h's >>api-seg).  Each thread has an image of its own (it reads
 * the code ptxed holds in memory, which no thread writes), a decoder,
 * which keeps its caches from piece to piece, and a probe decoder that
 * ipt_seg_decode starts at the next piece's PSB.
 *
 * This thread prints the pieces as ipt_seg_stitch_next says, as they
 * are done, while the others decode the pieces after them, and hands
 * their buffers on to the pieces to come; where the stitch says so, it
 * decodes a piece once more to the end of the trace (ipt_seg_rerun),
 * printing as it goes.  The output is what one decoder prints,
 * whatever the number of threads.
 *
 * Each thread's image reads ptxed's memory without a page cache
 * (ptxed_image_use).  One image for all threads (see ipt.h's
 * >>api-img-ext) measured as fast; the image per thread is kept because
 * it works with any read callback. */

/* Pieces per thread: enough that the threads end about together and that
 * the pieces printed late stay small. */
enum { ptxed_pieces_per_thread = 16 };

struct ptxed_pool;

/* The decode loop of a piece, a probe or a second decode: where it
 * prints, what it counts. */
struct ptxed_loop {
	const struct ptxed_pool *pool;
	struct pt_image *image;
	struct ptxed_decoder decoder;
	struct ptxed_run run;
	struct ptxed_buf *out;
	struct ptxed_stats stats;
	/* The statistics of the loop it joined, where it joined. */
	struct ptxed_stats join_stats;
	/* A second decode prints as it goes, after its first @skip
	 * bytes. */
	int stream;
	uint64_t skip;
};

/* What a saved state holds besides the decoder's. */
struct ptxed_state {
	struct ptxed_run run;
	struct ptxed_stats stats;
};

/* The decoder's state follows, aligned as malloc's are. */
#define PTXED_STATE_HEAD ((sizeof(struct ptxed_state) + 15) & ~(size_t) 15)

struct ptxed_piece {
	/* Its output and statistics, up to where it stopped, and the
	 * statistics of the piece it joined where it joined. */
	struct ptxed_buf out;
	struct ptxed_stats stats;
	struct ptxed_stats join_stats;

	/* Decoded (under the pool's lock); its buffer went back to the
	 * pool. */
	int done;
	int returned;

	/* The total before its output was printed, and the statistics it
	 * had where that output begins: for a second decode. */
	struct ptxed_stats total_before;
	struct ptxed_stats from;
};

struct ptxed_pool {
	const struct ptxed_decoder *main;
	const struct ptxed_options *options;
	const struct pt_config *config;
	const char *prog;
	uint32_t stat_flags;

	struct ipt_seg_split *split;
	struct ptxed_piece *pieces;
	size_t npieces;

	/* The next piece to take; pieces done; buffers of pieces printed,
	 * for the pieces to come. */
	pthread_mutex_t lock;
	pthread_cond_t done;
	size_t next;
	struct ptxed_buf *spare;
	size_t nspare;
};

/* What a thread of the pool owns: a loop for its pieces and one for
 * probes, on one image, and what ipt_seg_decode keeps of probes. */
struct ptxed_worker {
	struct ptxed_pool *pool;
	struct pt_image *image;
	struct ptxed_loop loop;
	struct ptxed_loop probe;
	struct ptxed_buf probe_out;
	struct ipt_seg_worker *seg;
	pthread_t thread;
	int started;
};

static int ptxed_save(const struct ptxed_decoder *decoder, void *state,
		      size_t size)
{
	if (decoder->type == pdt_insn_decoder)
		return ipt_insn_save(decoder->variant.insn, state, size);
	return ipt_blk_save(decoder->variant.block, state, size);
}

static int ptxed_converged(const struct ptxed_decoder *decoder,
			   const void *state)
{
	if (decoder->type == pdt_insn_decoder)
		return ipt_insn_converged(decoder->variant.insn, state);
	return ipt_blk_converged(decoder->variant.block, state);
}

static int ptxed_sync_set(struct ptxed_decoder *decoder, uint64_t offset)
{
	if (decoder->type == pdt_insn_decoder)
		return pt_insn_sync_set(decoder->variant.insn, offset);
	return pt_blk_sync_set(decoder->variant.block, offset);
}

/* The loop's own state decides what it prints next, too. */
static int ptxed_same_run(const struct ptxed_run *a, const struct ptxed_run *b)
{
	return a->phase == b->phase && a->status == b->status &&
	       a->sync == b->sync && a->time == b->time &&
	       !memcmp(&a->last, &b->last, sizeof(a->last)) &&
	       !memcmp(&a->insn, &b->insn, sizeof(a->insn)) &&
	       !memcmp(&a->block, &b->block, sizeof(a->block));
}

static void ptxed_stats_add(struct ptxed_stats *sum,
			    const struct ptxed_stats *to,
			    const struct ptxed_stats *from)
{
	sum->insn += to->insn - from->insn;
	sum->blocks += to->blocks - from->blocks;
}

static void ptxed_free_variant(struct ptxed_decoder *decoder)
{
	if (!ptxed_have_decoder(decoder))
		return;
	if (decoder->type == pdt_insn_decoder)
		pt_insn_free_decoder(decoder->variant.insn);
	else
		pt_blk_free_decoder(decoder->variant.block);
	decoder->variant.insn = NULL;
}

/* Print what @buf holds after the first *@skip bytes. */
static void ptxed_emit(struct ptxed_buf *buf, uint64_t *skip)
{
	size_t from = *skip < buf->n ? (size_t) *skip : buf->n;

	fwrite(buf->p + from, 1, buf->n - from, stdout);
	*skip -= from;
	buf->n = 0;
}

/* ---- the loop, as ipt_seg_decode drives it (struct ipt_seg_loop) ---- */

static int ptxed_loop_start(void *arg, uint64_t offset, int first)
{
	struct ptxed_loop *l = (struct ptxed_loop *) arg;
	const struct ptxed_pool *pool = l->pool;

	l->out->n = 0;
	l->out->failed = 0;
	memset(&l->stats, 0, sizeof(l->stats));
	l->stats.flags = pool->stat_flags;
	l->join_stats = l->stats;

	/* The first piece starts from a decoder that has seen nothing. */
	if (first)
		ptxed_free_variant(&l->decoder);
	if (!ptxed_have_decoder(&l->decoder)) {
		l->decoder = *pool->main;
		if (alloc_decoder(&l->decoder, pool->config, l->image,
				  pool->prog) < 0) {
			l->decoder.variant.insn = NULL;
			return -pte_nomem;
		}
	}

	ptxed_run_init(&l->run);
	if (first)
		return 0;
	l->run.status = ptxed_sync_set(&l->decoder, offset);
	l->run.phase = l->run.status < 0 ? ptxed_phase_done : ptxed_phase_run;
	return l->run.status < 0 ? l->run.status : 0;
}

static int ptxed_loop_step(void *arg, unsigned int n, uint64_t *mark)
{
	struct ptxed_loop *l = (struct ptxed_loop *) arg;
	const struct ptxed_options *options = l->pool->options;
	struct ptxed_stats *stats = options->print_stats ? &l->stats : NULL;

	ptxed_out = l->out;
	while (n) {
		int status = l->run.status;
		size_t out;

		/* A second decode prints between steps. */
		n -= ptxed_step(&l->decoder, options, stats, &l->run,
				l->stream ? 1 : n, &out);
		if (l->stream) {
			if (l->out->failed)
				return ipt_seg_done;
			if (l->out->n >= 1 << 20)
				ptxed_emit(l->out, &l->skip);
		}
		if (l->run.phase == ptxed_phase_done)
			return ipt_seg_done;
		if (l->run.status == -pte_retstack_empty &&
		    status != -pte_retstack_empty) {
			*mark = out;
			return ipt_seg_retstack;
		}
	}
	return ipt_seg_go;
}

static int ptxed_loop_at(void *arg, uint64_t *offset, uint64_t *mark)
{
	struct ptxed_loop *l = (struct ptxed_loop *) arg;

	*mark = l->out->n;
	return l->run.phase == ptxed_phase_run && l->run.status >= 0 &&
	       ptxed_get_offset(&l->decoder, offset) >= 0;
}

static size_t ptxed_state_size(void)
{
	size_t size = ipt_insn_state_size();

	if (size < ipt_blk_state_size())
		size = ipt_blk_state_size();
	return PTXED_STATE_HEAD + size;
}

static int ptxed_loop_save(const void *arg, void *state)
{
	const struct ptxed_loop *l = (const struct ptxed_loop *) arg;
	struct ptxed_state *head = (struct ptxed_state *) state;

	head->run = l->run;
	head->stats = l->stats;
	return ptxed_save(&l->decoder, (char *) state + PTXED_STATE_HEAD,
			  ptxed_state_size() - PTXED_STATE_HEAD);
}

static int ptxed_loop_same(void *arg, const void *state)
{
	struct ptxed_loop *l = (struct ptxed_loop *) arg;
	const struct ptxed_state *head = (const struct ptxed_state *) state;
	int kind;

	if (!ptxed_same_run(&l->run, &head->run))
		return 0;
	kind = ptxed_converged(&l->decoder,
			       (const char *) state + PTXED_STATE_HEAD);
	if (kind > 0)
		l->join_stats = head->stats;
	return kind;
}

static const struct ipt_seg_loop ptxed_loop_ops = {
	ptxed_loop_start, ptxed_loop_step, ptxed_loop_at, ptxed_loop_save,
	ptxed_loop_same
};

/* ---- the pool ---- */

/* Decode piece @idx until it joins a later one or the trace ends. */
static void ptxed_decode_piece(struct ptxed_worker *w, size_t idx)
{
	struct ptxed_piece *piece = &w->pool->pieces[idx];

	w->loop.out = &piece->out;
	if (ipt_seg_decode(w->seg, idx, &w->loop, &w->probe) < 0)
		piece->out.failed = 1;
	piece->stats = w->loop.stats;
	piece->join_stats = w->loop.join_stats;
	ptxed_out = NULL;
}

/* A buffer for a piece's output: one a piece printed before, or none. */
static void ptxed_take_buf(struct ptxed_pool *pool, struct ptxed_piece *piece)
{
	if (pool->nspare)
		piece->out = pool->spare[--pool->nspare];
	piece->out.n = 0;
	piece->out.failed = 0;
}

/* Hand the buffers of the pieces before @end that are done on. */
static void ptxed_return_bufs(struct ptxed_pool *pool, size_t end)
{
	size_t idx;

	pthread_mutex_lock(&pool->lock);
	for (idx = 0; idx < end; ++idx) {
		struct ptxed_piece *piece = &pool->pieces[idx];

		if (!piece->done || piece->returned)
			continue;
		pool->spare[pool->nspare++] = piece->out;
		memset(&piece->out, 0, sizeof(piece->out));
		piece->returned = 1;
	}
	pthread_mutex_unlock(&pool->lock);
}

static void *ptxed_worker_main(void *arg)
{
	struct ptxed_worker *w = (struct ptxed_worker *) arg;
	struct ptxed_pool *pool = w->pool;

	for (;;) {
		size_t idx;

		pthread_mutex_lock(&pool->lock);
		idx = pool->next++;
		if (idx < pool->npieces)
			ptxed_take_buf(pool, &pool->pieces[idx]);
		pthread_mutex_unlock(&pool->lock);
		if (idx >= pool->npieces)
			break;

		ptxed_decode_piece(w, idx);

		pthread_mutex_lock(&pool->lock);
		pool->pieces[idx].done = 1;
		pthread_cond_broadcast(&pool->done);
		pthread_mutex_unlock(&pool->lock);
	}
	return NULL;
}

static void ptxed_wait(struct ptxed_pool *pool, size_t idx)
{
	pthread_mutex_lock(&pool->lock);
	while (!pool->pieces[idx].done)
		pthread_cond_wait(&pool->done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

/* Decode piece @idx once more, on a decoder of its own, and on to the end
 * of the trace; print what comes after its first @skip bytes of output.
 * The decoder the piece had has gone on to other pieces. */
static int ptxed_rerun(struct ptxed_pool *pool, size_t idx, uint64_t skip,
		       struct ptxed_stats *stats)
{
	struct ptxed_loop loop;
	struct ptxed_buf buf;
	int errcode;

	memset(&buf, 0, sizeof(buf));
	memset(&loop, 0, sizeof(loop));
	loop.pool = pool;
	loop.out = &buf;
	loop.stream = 1;
	loop.skip = skip;
	loop.image = pt_image_alloc(NULL);
	errcode = -pte_nomem;
	if (loop.image &&
	    (!pool->main->callback_set ||
	     ptxed_image_use(loop.image, &pool->main->memory) >= 0))
		errcode = ipt_seg_rerun(pool->split, idx, &loop);
	ptxed_out = NULL;
	if (!errcode && buf.failed)
		errcode = -pte_nomem;
	if (!errcode)
		ptxed_emit(&buf, &loop.skip);
	*stats = loop.stats;

	ptxed_free_variant(&loop.decoder);
	pt_image_free(loop.image);
	free(buf.p);
	return errcode;
}

/* Print the pieces as the stitch says, as they are done; add up the
 * statistics: each piece's from where its output begins. */
static int ptxed_stitch(struct ptxed_pool *pool, struct ptxed_stats *total)
{
	struct ptxed_stats from, again;
	struct ipt_seg_stitch stitch;
	struct ipt_seg_range range;
	int k;

	memset(&from, 0, sizeof(from));
	ipt_seg_stitch_init(&stitch);
	for (;;) {
		const struct ipt_seg_piece *seg;
		struct ptxed_piece *piece;

		ptxed_wait(pool, stitch.wait);
		k = ipt_seg_stitch_next(pool->split, &stitch, &range);
		if (k != 1)
			break;

		piece = &pool->pieces[range.idx];
		seg = ipt_seg_split_piece(pool->split, range.idx);
		if (piece->out.failed)
			return -pte_nomem;
		fwrite(piece->out.p + range.from, 1,
		       (size_t) (range.to - range.from), stdout);
		if (pool->options->report_stitch)
			fprintf(stderr, "piece %zu at 0x%" PRIx64 ": bytes %"
				PRIu64 " to %" PRIu64 " of %zu, join %d to "
				"piece %zu\n", range.idx, seg->begin,
				range.from, range.to, piece->out.n, seg->join,
				seg->join_to);

		piece->total_before = *total;
		piece->from = from;
		ptxed_stats_add(total, &piece->stats, &from);
		from = piece->join_stats;
		ptxed_return_bufs(pool, range.idx + 1);
	}
	if (k != 2)
		return 0;

	if (pool->options->report_stitch)
		fprintf(stderr, "piece %zu again, from byte %" PRIu64 "\n",
			range.idx, range.from);
	*total = pool->pieces[range.idx].total_before;
	if (ptxed_rerun(pool, range.idx, range.from, &again) < 0) {
		fprintf(stderr, "%s: --threads: cannot decode on.\n",
			pool->prog);
		return 0;
	}
	ptxed_stats_add(total, &again, &pool->pieces[range.idx].from);
	return 0;
}

/* Decode with @threads threads.  Returns zero, or a negative pte_* code if
 * it could not start. */
static int decode_threads(const struct ptxed_decoder *decoder,
			  const struct ptxed_options *options,
			  struct ptxed_stats *stats,
			  const struct pt_config *config, uint32_t threads,
			  const char *prog)
{
	struct ptxed_worker *workers;
	struct ptxed_pool pool;
	size_t idx;
	uint32_t t;
	int errcode;

	memset(&pool, 0, sizeof(pool));
	pool.main = decoder;
	pool.options = options;
	pool.config = config;
	pool.prog = prog;
	pool.stat_flags = stats->flags;
	pool.split = ipt_seg_split_alloc(config,
					 (size_t) threads *
						 ptxed_pieces_per_thread,
					 &ptxed_loop_ops, ptxed_state_size(),
					 NULL);
	if (!pool.split)
		return -pte_nomem;
	pool.npieces = ipt_seg_split_count(pool.split);
	pool.pieces = (struct ptxed_piece *) calloc(pool.npieces,
						    sizeof(*pool.pieces));
	pool.spare = (struct ptxed_buf *) calloc(pool.npieces,
						 sizeof(*pool.spare));
	if (!pool.pieces || !pool.spare) {
		free(pool.pieces);
		free(pool.spare);
		ipt_seg_split_free(pool.split);
		return -pte_nomem;
	}
	if (threads > pool.npieces)
		threads = (uint32_t) pool.npieces;
	pthread_mutex_init(&pool.lock, NULL);
	pthread_cond_init(&pool.done, NULL);

	errcode = 0;
	workers = (struct ptxed_worker *) calloc(threads, sizeof(*workers));
	if (!workers)
		errcode = -pte_nomem;
	for (t = 0; !errcode && t < threads; ++t) {
		struct ptxed_worker *w = &workers[t];

		w->pool = &pool;
		w->image = pt_image_alloc(NULL);
		w->seg = ipt_seg_worker_alloc(pool.split);
		if (!w->image || !w->seg) {
			errcode = -pte_nomem;
			break;
		}
		if (decoder->callback_set)
			errcode = ptxed_image_use(w->image,
						  &decoder->memory);
		w->loop.pool = w->probe.pool = &pool;
		w->loop.image = w->probe.image = w->image;
		w->probe.out = &w->probe_out;
	}

	for (t = 0; !errcode && t < threads; ++t) {
		if (pthread_create(&workers[t].thread, NULL,
				   ptxed_worker_main, &workers[t]))
			break;
		workers[t].started = 1;
	}
	/* Threads that did not start leave their pieces to the others; with
	 * none at all, this thread decodes them. */
	if (!errcode && !workers[0].started)
		ptxed_worker_main(&workers[0]);
	if (!errcode)
		errcode = ptxed_stitch(&pool, stats);
	for (t = 0; workers && t < threads; ++t)
		if (workers[t].started)
			pthread_join(workers[t].thread, NULL);

	for (idx = 0; idx < pool.npieces; ++idx)
		free(pool.pieces[idx].out.p);
	for (idx = 0; idx < pool.nspare; ++idx)
		free(pool.spare[idx].p);
	for (t = 0; workers && t < threads; ++t) {
		struct ptxed_worker *w = &workers[t];

		ptxed_free_variant(&w->loop.decoder);
		ptxed_free_variant(&w->probe.decoder);
		free(w->probe_out.p);
		ipt_seg_worker_free(w->seg);
		pt_image_free(w->image);
	}
	free(workers);
	free(pool.pieces);
	free(pool.spare);
	ipt_seg_split_free(pool.split);
	pthread_cond_destroy(&pool.done);
	pthread_mutex_destroy(&pool.lock);
	return errcode;
}

static void print_stats(const struct ptxed_stats *stats)
{
	if (stats->flags & ptxed_stat_insn)
		oprint("insn: %" PRIu64 ".\n", stats->insn);

	if (stats->flags & ptxed_stat_blocks)
		oprint("blocks:\t%" PRIu64 ".\n", stats->blocks);
}

/* ---- numeric option arguments ---- */

static int get_arg_uint64(uint64_t *value, const char *option,
			  const char *arg, const char *prog)
{
	char *rest;

	if (!arg || arg[0] == 0 || (arg[0] == '-' && arg[1] == '-')) {
		fprintf(stderr, "%s: %s: missing argument.\n", prog, option);
		return 0;
	}

	errno = 0;
	*value = strtoull(arg, &rest, 0);
	if (errno || *rest) {
		fprintf(stderr, "%s: %s: bad argument: %s.\n", prog, option,
			arg);
		return 0;
	}

	return 1;
}

static int get_arg_max(uint64_t *value, uint64_t max, const char *option,
		       const char *arg, const char *prog)
{
	if (!get_arg_uint64(value, option, arg, prog))
		return 0;

	if (*value > max) {
		fprintf(stderr, "%s: %s: value too big: %s.\n", prog, option,
			arg);
		return 0;
	}

	return 1;
}

static int get_arg_uint32(uint32_t *value, const char *option,
			  const char *arg, const char *prog)
{
	uint64_t val;

	if (!get_arg_max(&val, UINT32_MAX, option, arg, prog))
		return 0;

	*value = (uint32_t) val;
	return 1;
}

static int get_arg_uint8(uint8_t *value, const char *option, const char *arg,
			 const char *prog)
{
	uint64_t val;

	if (!get_arg_max(&val, UINT8_MAX, option, arg, prog))
		return 0;

	*value = (uint8_t) val;
	return 1;
}

/* --filter:addr<n>_cfg, _a, _b for n in 0..3.  Returns 1 if @arg is one
 * of them and it was handled, -1 on error, 0 if @arg is something else. */
static int ptxed_filter_option(struct pt_config *config,
			       const struct ptxed_decoder *decoder,
			       const char *arg, const char *value,
			       const char *prog)
{
	static const char prefix[] = "--filter:addr";
	struct pt_conf_addr_filter *filter;
	const char *suffix;
	uint64_t *addr_a, *addr_b;
	unsigned int n;

	if (strncmp(arg, prefix, sizeof(prefix) - 1) != 0)
		return 0;

	suffix = arg + sizeof(prefix) - 1;
	if (suffix[0] < '0' || '3' < suffix[0] || suffix[1] != '_')
		return 0;

	n = (unsigned int) (suffix[0] - '0');
	suffix += 2;
	if (strcmp(suffix, "cfg") != 0 && strcmp(suffix, "a") != 0 &&
	    strcmp(suffix, "b") != 0)
		return 0;

	/* The filter is part of the configuration the decoder copies. */
	if (ptxed_have_decoder(decoder)) {
		fprintf(stderr, "%s: please specify %s before --pt.\n", prog,
			arg);
		return -1;
	}

	filter = &config->addr_filter;
	if (strcmp(suffix, "cfg") == 0) {
		uint64_t addr_cfg;

		if (!get_arg_max(&addr_cfg, 15, arg, value, prog))
			return -1;

		filter->config.addr_cfg |= addr_cfg << (n * 4);
		return 1;
	}

	switch (n) {
	case 0:
		addr_a = &filter->addr0_a;
		addr_b = &filter->addr0_b;
		break;
	case 1:
		addr_a = &filter->addr1_a;
		addr_b = &filter->addr1_b;
		break;
	case 2:
		addr_a = &filter->addr2_a;
		addr_b = &filter->addr2_b;
		break;
	default:
		addr_a = &filter->addr3_a;
		addr_b = &filter->addr3_b;
		break;
	}

	return get_arg_uint64(strcmp(suffix, "a") == 0 ? addr_a : addr_b, arg,
			      value, prog) ? 1 : -1;
}

/* ---- main ---- */

/* Whether the command line shows where blocks of code in file sections
 * end: the block decoder (the default, or the last of --insn-decoder and
 * --block-decoder) with --block:show-blocks or counting blocks (--stat
 * alone, or --stat:blocks), or either decoder with --offset (the offset
 * moves on block by block), and no --ipt:callback.  There a block ends
 * where libipt's block cache would end it, and that cache holds what
 * the decoder met before (see README.md, "Differences from libipt"): a
 * decoder that starts at a PSB in the middle of the trace may end its
 * blocks elsewhere, so --threads decodes such output on one thread,
 * with file sections as one thread has them. */
static int ptxed_file_blocks(int argc, char **argv)
{
	int i, block = 1, shown = 0, stat = 0, sel = 0, blocks = 0;
	int offset = 0;

	for (i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--ipt:callback"))
			return 0;
		if (!strcmp(argv[i], "--insn-decoder"))
			block = 0;
		else if (!strcmp(argv[i], "--block-decoder"))
			block = 1;
		else if (!strcmp(argv[i], "--block:show-blocks"))
			shown = 1;
		else if (!strcmp(argv[i], "--stat"))
			stat = 1;
		else if (!strcmp(argv[i], "--stat:insn"))
			sel = 1;
		else if (!strcmp(argv[i], "--stat:blocks"))
			sel = blocks = 1;
		else if (!strcmp(argv[i], "--offset"))
			offset = 1;
	}
	return offset || (block && (shown || blocks || (stat && !sel)));
}

int main(int argc, char *argv[])
{
	struct ptxed_decoder decoder;
	struct ptxed_options options;
	struct ptxed_stats stats;
	struct ex_file trace;
	struct pt_config config;
	struct pt_image *image;
	const char *prog, *image_name;
	uint32_t threads;
	int errcode, i, status, sideband;

	if (!argc) {
		help("");
		return 1;
	}

	prog = argv[0];
	image = NULL;
	image_name = NULL;
	threads = 1;
	sideband = 0;
	status = 1;

	memset(&options, 0, sizeof(options));
	memset(&stats, 0, sizeof(stats));
	memset(&trace, 0, sizeof(trace));
	pt_config_init(&config);

	errcode = ptxed_init_decoder(&decoder);
	if (errcode < 0) {
		fprintf(stderr, "%s: error initializing decoder: %s.\n", prog,
			pt_errstr(pt_errcode(errcode)));
		ptxed_free_decoder(&decoder);
		return 1;
	}

	/* The image takes its name at allocation: look for one first.  With
	 * more than one thread, each has an image of its own that reads the
	 * code from our memory: load it there. */
	for (i = 1; i + 1 < argc; ++i) {
		if (strcmp(argv[i], "--image-name") == 0)
			image_name = argv[i + 1];
		if (strcmp(argv[i], "--threads") == 0 &&
		    strtoul(argv[i + 1], NULL, 0) > 1)
			decoder.use_callback = 1;
	}
	/* Sideband keeps one thread (below) and its own images; so do
	 * blocks shown from file sections (ptxed_file_blocks). */
	for (i = 1; i < argc; ++i)
		if (!strncmp(argv[i], "--pevent", 8) ||
		    !strncmp(argv[i], "--sb", 4))
			decoder.use_callback = 0;
	if (ptxed_file_blocks(argc, argv))
		decoder.use_callback = 0;
#ifdef IPT_NO_STDIO
	decoder.use_callback = 1;
#endif

	image = pt_image_alloc(image_name);
	if (!image) {
		fprintf(stderr, "%s: failed to allocate image.\n", prog);
		goto out;
	}

#ifndef IPT_NO_STDIO
	sb_options_init(&options.sb, 1, get_arg_max, preprocess_filename);
	pt_sb_notify_error(decoder.session, sb_print_error, &options.sb);
#endif

	for (i = 1; i < argc;) {
		char *arg;

#ifndef IPT_NO_STDIO
		errcode = sb_option(&options.sb, decoder.session, argc, argv,
				    &i, prog);
		if (errcode < 0)
			goto out;
		if (errcode > 0) {
			/* The session switches images: one thread. */
			sideband = 1;
			continue;
		}
#endif
		arg = argv[i++];

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			help(prog);
			status = 0;
			goto out;
		}
		if (strcmp(arg, "--version") == 0) {
			version(prog);
			status = 0;
			goto out;
		}
		if (strcmp(arg, "--pt") == 0) {
			if (argc <= i) {
				fprintf(stderr,
					"%s: --pt: missing argument.\n", prog);
				status = 0;
				goto out;
			}
			arg = argv[i++];

			if (ptxed_have_decoder(&decoder)) {
				fprintf(stderr,
					"%s: duplicate pt sources: %s.\n",
					prog, arg);
				goto out;
			}

			if (config.cpu.vendor) {
				errcode = pt_cpu_errata(&config.errata,
							&config.cpu);
				if (errcode < 0)
					oprint("[0, 0: config error: %s]\n",
					       pt_errstr(pt_errcode(errcode)));
			}

			if (load_pt(&config, &trace, arg, prog) < 0)
				goto out;

			if (alloc_decoder(&decoder, &config, image, prog) < 0)
				goto out;

			continue;
		}
		if (strcmp(arg, "--raw") == 0) {
			if (argc <= i) {
				fprintf(stderr,
					"%s: --raw: missing argument.\n", prog);
				status = 0;
				goto out;
			}
			arg = argv[i++];

			if (load_raw(&decoder, image, arg, prog) < 0) {
				fprintf(stderr, "%s: --raw: failed to load "
					"'%s'.\n", prog, arg);
				goto out;
			}

			continue;
		}
		if (strcmp(arg, "--elf") == 0) {
			uint64_t base;

			if (argc <= i) {
				fprintf(stderr,
					"%s: --elf: missing argument.\n", prog);
				status = 0;
				goto out;
			}
			arg = argv[i++];

			base = 0ull;
			(void) extract_base(arg, &base);

			if (load_elf(&decoder, image, arg, base, prog,
				     options.track_image) < 0)
				goto out;

			continue;
		}
		if (strcmp(arg, "--ipt:callback") == 0) {
			decoder.use_callback = 1;
			continue;
		}
		if (strcmp(arg, "--ipt:vm-tolerant") == 0) {
			decoder.vm_tolerant = 1;
			continue;
		}
		if (strcmp(arg, "--ipt:cr3") == 0) {
			if (!get_arg_uint64(&decoder.cr3_filter, arg,
					    i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;
			continue;
		}
		if (strcmp(arg, "--ipt:stitch") == 0) {
			options.report_stitch = 1;
			continue;
		}
		if (strcmp(arg, "--image-name") == 0) {
			/* Taken above; skip the name. */
			if (argc <= i) {
				fprintf(stderr, "%s: --image-name: missing "
					"argument.\n", prog);
				goto out;
			}
			i += 1;
			continue;
		}
		if (strcmp(arg, "--att") == 0) {
			options.att_format = 1;
			continue;
		}
		if (strcmp(arg, "--no-inst") == 0) {
			options.dont_print_insn = 1;
			continue;
		}
		if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
			options.quiet = 1;
			continue;
		}
		if (strcmp(arg, "--offset") == 0) {
			options.print_offset = 1;
			continue;
		}
		if (strcmp(arg, "--time") == 0) {
			options.print_time = 1;
			continue;
		}
		if (strcmp(arg, "--raw-insn") == 0) {
			options.print_raw_insn = 1;
			continue;
		}
		if (strcmp(arg, "--event:time") == 0) {
			options.print_event_time = 1;
			continue;
		}
		if (strcmp(arg, "--event:ip") == 0) {
			options.print_event_ip = 1;
			continue;
		}
		if (strcmp(arg, "--event:tick") == 0) {
			decoder.block_flags.variant.block.enable_tick_events = 1;
			decoder.insn_flags.variant.insn.enable_tick_events = 1;
			continue;
		}
		if (strcmp(arg, "--event:iflags") == 0) {
			decoder.block_flags.variant.block.enable_iflags_events =
				1;
			decoder.insn_flags.variant.insn.enable_iflags_events =
				1;
			continue;
		}
		errcode = ptxed_filter_option(&config, &decoder, arg,
					      i < argc ? argv[i] : NULL, prog);
		if (errcode < 0)
			goto out;
		if (errcode > 0) {
			i += 1;
			continue;
		}
		if (strcmp(arg, "--check") == 0) {
			options.check = 1;
			continue;
		}
		if (strcmp(arg, "--resync-on-error") == 0) {
			options.resync_on_error = 1;
			continue;
		}
		if (strcmp(arg, "--iscache-limit") == 0) {
			uint64_t limit;

			if (!get_arg_uint64(&limit, arg,
					    i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;

#ifndef IPT_NO_STDIO
			errcode = pt_iscache_set_limit(decoder.iscache, limit);
#else
			errcode = -pte_not_supported;
#endif
			if (errcode < 0) {
				fprintf(stderr, "%s: error setting iscache "
					"limit: %s.\n", prog,
					pt_errstr(pt_errcode(errcode)));
				goto out;
			}

			continue;
		}
		if (strcmp(arg, "--threads") == 0) {
			if (!get_arg_uint32(&threads, arg,
					    i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;
			continue;
		}
		if (strcmp(arg, "--stat") == 0) {
			options.print_stats = 1;
			continue;
		}
		if (strcmp(arg, "--stat:insn") == 0) {
			options.print_stats = 1;
			stats.flags |= ptxed_stat_insn;
			continue;
		}
		if (strcmp(arg, "--stat:blocks") == 0) {
			options.print_stats = 1;
			stats.flags |= ptxed_stat_blocks;
			continue;
		}
		if (strcmp(arg, "--cpu") == 0) {
			/* The errata are looked up when the decoder is
			 * allocated. */
			if (ptxed_have_decoder(&decoder)) {
				fprintf(stderr, "%s: please specify cpu before "
					"the pt source file.\n", prog);
				goto out;
			}
			if (argc <= i) {
				fprintf(stderr,
					"%s: --cpu: missing argument.\n", prog);
				status = 0;
				goto out;
			}
			arg = argv[i++];

			if (strcmp(arg, "none") == 0) {
				memset(&config.cpu, 0, sizeof(config.cpu));
				continue;
			}

			errcode = ipt_cpu_parse(&config.cpu, arg);
			if (errcode < 0) {
				fprintf(stderr, "%s: cpu must be specified as "
					"f/m[/s]\n", prog);
				goto out;
			}
			continue;
		}
		if (strcmp(arg, "--mtc-freq") == 0) {
			if (!get_arg_uint8(&config.mtc_freq, "--mtc-freq",
					   i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;
			continue;
		}
		if (strcmp(arg, "--nom-freq") == 0) {
			if (!get_arg_uint8(&config.nom_freq, "--nom-freq",
					   i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;
			continue;
		}
		if (strcmp(arg, "--cpuid-0x15.eax") == 0) {
			if (!get_arg_uint32(&config.cpuid_0x15_eax,
					    "--cpuid-0x15.eax",
					    i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;
			continue;
		}
		if (strcmp(arg, "--cpuid-0x15.ebx") == 0) {
			if (!get_arg_uint32(&config.cpuid_0x15_ebx,
					    "--cpuid-0x15.ebx",
					    i < argc ? argv[i] : NULL, prog))
				goto out;
			i += 1;
			continue;
		}
		if (strcmp(arg, "--verbose") == 0 || strcmp(arg, "-v") == 0) {
			options.track_image = 1;
			continue;
		}
		if (strcmp(arg, "--insn-decoder") == 0) {
			if (ptxed_have_decoder(&decoder)) {
				fprintf(stderr, "%s: please specify %s before "
					"the pt source file.\n", prog, arg);
				goto out;
			}

			decoder.type = pdt_insn_decoder;
			continue;
		}
		if (strcmp(arg, "--insn:keep-tcal-on-ovf") == 0) {
			decoder.insn_flags.variant.insn.keep_tcal_on_ovf = 1;
			continue;
		}
		if (strcmp(arg, "--block-decoder") == 0) {
			if (ptxed_have_decoder(&decoder)) {
				fprintf(stderr, "%s: please specify %s before "
					"the pt source file.\n", prog, arg);
				goto out;
			}

			decoder.type = pdt_block_decoder;
			continue;
		}
		if (strcmp(arg, "--block:show-blocks") == 0) {
			options.track_blocks = 1;
			continue;
		}
		if (strcmp(arg, "--block:end-on-call") == 0) {
			decoder.block_flags.variant.block.end_on_call = 1;
			continue;
		}
		if (strcmp(arg, "--block:end-on-jump") == 0) {
			decoder.block_flags.variant.block.end_on_jump = 1;
			continue;
		}
		if (strcmp(arg, "--block:keep-tcal-on-ovf") == 0) {
			decoder.block_flags.variant.block.keep_tcal_on_ovf = 1;
			continue;
		}

		fprintf(stderr, "%s: unknown option: %s.\n", prog, arg);
		goto out;
	}

	if (!ptxed_have_decoder(&decoder)) {
		fprintf(stderr, "%s: no pt file.\n", prog);
		goto out;
	}

#ifndef IPT_NO_STDIO
	if (options.sb.kcore) {
		char *kcore = (char *) options.sb.kcore;
		uint64_t base = 0ull;

		(void) extract_base(kcore, &base);
		if (load_elf(&decoder, pt_sb_kernel_image(decoder.session),
			     kcore, base, prog, options.track_image) < 0)
			goto out;
	}

	errcode = pt_sb_init_decoders(decoder.session);
	if (errcode < 0) {
		fprintf(stderr, "%s: error initializing sideband decoders: "
			"%s.\n", prog, pt_errstr(pt_errcode(errcode)));
		goto out;
	}
#endif

	if (options.track_image && image_name)
		oprint("[image: %s]\n", pt_image_name(image));

	if (ptxed_init_formatter(&decoder, options.att_format) < 0) {
		fprintf(stderr, "%s: failed to set up the disassembler.\n",
			prog);
		goto out;
	}

	/* Without a selection, collect what the decoder type can. */
	if (options.print_stats && !stats.flags) {
		stats.flags |= ptxed_stat_insn;

		if (decoder.type == pdt_block_decoder)
			stats.flags |= ptxed_stat_blocks;
	}

	/* Block numbers count from the start of the trace, sideband
	 * switches the images, and blocks in file sections end where the
	 * decoder's past says: one thread for them.  (Threads read code
	 * through the callback.) */
	if ((options.track_blocks && options.print_stats) || sideband ||
	    !decoder.use_callback)
		threads = 1;

	if (threads > 1) {
		errcode = decode_threads(&decoder, &options, &stats, &config,
					 threads, prog);
		if (errcode < 0) {
			fprintf(stderr, "%s: --threads: %s.\n", prog,
				pt_errstr(pt_errcode(errcode)));
			goto out;
		}
	} else
		decode(&decoder, &options, options.print_stats ? &stats : NULL);

	if (options.print_stats)
		print_stats(&stats);

	status = 0;

out:
	/* The decoders use the image: free them first. */
	ptxed_free_decoder(&decoder);
#ifndef IPT_NO_STDIO
	sb_options_fini(&options.sb);
#endif
	pt_image_free(image);
	ex_file_release(&trace);
	return status;
}

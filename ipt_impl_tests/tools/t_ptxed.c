/* t_ptxed.c - examples/ptxed end to end.
 *
 * Encodes a small trace with ipt.h's encoder, writes the code it runs over
 * as a raw file, as an ELF64 and as an ELF32, and runs examples/ptxed on
 * them in each way it can get at code: file sections in the image section
 * cache (--raw, --elf), the read-memory callback (--ipt:callback), both
 * decoders, file ranges, ELF load bases.  Each run must print the same
 * instruction flow; option errors must be reported as libipt's ptxed
 * reports them.  Run from the top of the tree, after `make`; set $PTXED
 * to test another build of examples/ptxed.c.
 */
#include "ipt.h"
#include "check.h"
#include "files.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIR "build/tools/t_ptxed.d"
/* The ptxed to run: examples/ptxed, or $PTXED (another build of it).
 * Messages name the program; outputs are compared as if it were PTXED. */
#define PTXED "examples/ptxed"
static const char *ptxed = PTXED;

/* 0x1000: nop; jmp 0x1004; hlt; 0x1004: nop; 0x1005: hlt */
static const uint8_t code[] = { 0x90, 0xeb, 0x01, 0xf4, 0x90, 0xf4 };

static const char flow[] =
	"0000000000001000\n"
	"0000000000001001\n"
	"0000000000001004\n"
	"[disabled]\n";

static void put(uint8_t *p, uint64_t value, int size)
{
	int i;

	for (i = 0; i < size; ++i)
		p[i] = (uint8_t) (value >> (8 * i));
}

/* An ELF with the code in its first PT_LOAD at @vaddr, an empty PT_LOAD
 * and a PT_NOTE, neither of which may be loaded. */
static size_t make_elf(uint8_t *elf, int is64, uint64_t vaddr)
{
	size_t ehsize = is64 ? 64 : 52, phsize = is64 ? 56 : 32;
	size_t codeoff = ehsize + 3 * phsize, i;

	memset(elf, 0, codeoff + sizeof(code));
	memcpy(elf, "\177ELF", 4);
	elf[4] = is64 ? 2 : 1;
	elf[5] = 1;
	elf[6] = 1;
	put(elf + 16, 2, 2);
	put(elf + 18, is64 ? 62 : 3, 2);
	put(elf + 20, 1, 4);
	if (is64) {
		put(elf + 32, ehsize, 8);
		put(elf + 52, ehsize, 2);
		put(elf + 54, phsize, 2);
		put(elf + 56, 3, 2);
	} else {
		put(elf + 28, ehsize, 4);
		put(elf + 40, ehsize, 2);
		put(elf + 42, phsize, 2);
		put(elf + 44, 3, 2);
	}

	for (i = 0; i < 3; ++i) {
		uint8_t *ph = elf + ehsize + i * phsize;
		uint32_t type = (i == 2) ? 4 : 1;
		uint64_t filesz = (i == 0) ? sizeof(code) : 0;
		uint64_t addr = vaddr + i * 0x1000;

		put(ph, type, 4);
		if (is64) {
			put(ph + 8, codeoff, 8);
			put(ph + 16, addr, 8);
			put(ph + 32, filesz, 8);
			put(ph + 40, filesz, 8);
		} else {
			put(ph + 4, codeoff, 4);
			put(ph + 8, addr, 4);
			put(ph + 16, filesz, 4);
			put(ph + 20, filesz, 4);
		}
	}

	memcpy(elf + codeoff, code, sizeof(code));
	return codeoff + sizeof(code);
}

/* PSB+ with the IP at 0x1000, then tracing stops at 0x1005. */
static int make_trace(const char *name)
{
	uint8_t buffer[256];
	struct pt_config config;
	struct pt_encoder *encoder;
	struct pt_packet packet[7];
	uint64_t offset;
	int i, ok = 1;

	pt_config_init(&config);
	config.begin = buffer;
	config.end = buffer + sizeof(buffer);

	memset(packet, 0, sizeof(packet));
	packet[0].type = ppt_psb;
	packet[1].type = ppt_mode;
	packet[1].payload.mode.leaf = pt_mol_exec;
	packet[1].payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	packet[2].type = ppt_fup;
	packet[2].payload.ip.ipc = pt_ipc_sext_48;
	packet[2].payload.ip.ip = 0x1000;
	packet[3].type = ppt_pip;
	packet[3].payload.pip.cr3 = 0x5000;
	packet[4].type = ppt_psbend;
	packet[5].type = ppt_fup;
	packet[5].payload.ip.ipc = pt_ipc_update_16;
	packet[5].payload.ip.ip = 0x1005;
	packet[6].type = ppt_tip_pgd;
	packet[6].payload.ip.ipc = pt_ipc_suppressed;

	encoder = pt_alloc_encoder(&config);
	if (!encoder)
		return 0;
	for (i = 0; i < 7; ++i)
		if (pt_enc_next(encoder, &packet[i]) < 0)
			ok = 0;
	if (pt_enc_get_offset(encoder, &offset) < 0)
		ok = 0;
	pt_free_encoder(encoder);

	return ok && write_file(name, buffer, (size_t) offset);
}

/* The code is not mapped at the PSB+ IP and PTWs with IPs keep the
 * decoder there: --resync-on-error resyncs to the same place and fails the
 * same way again and again. */
static int make_stuck_trace(const char *name)
{
	uint8_t buffer[256];
	struct pt_config config;
	struct pt_encoder *encoder;
	struct pt_packet packet[9];
	uint64_t offset;
	int i, ok = 1;

	pt_config_init(&config);
	config.begin = buffer;
	config.end = buffer + sizeof(buffer);

	memset(packet, 0, sizeof(packet));
	packet[0].type = ppt_psb;
	packet[1].type = ppt_fup;
	packet[1].payload.ip.ipc = pt_ipc_sext_48;
	packet[1].payload.ip.ip = 0x35100000;
	packet[2].type = ppt_mode;
	packet[2].payload.mode.leaf = pt_mol_exec;
	packet[2].payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	packet[3].type = ppt_psbend;
	packet[4].type = ppt_ptw;
	packet[4].payload.ptw.plc = 0;
	packet[4].payload.ptw.ip = 1;
	packet[4].payload.ptw.payload = 0xabcd;
	packet[5].type = ppt_fup;
	packet[5].payload.ip.ipc = pt_ipc_update_16;
	packet[5].payload.ip.ip = 0x0001;
	packet[6].type = ppt_fup;
	packet[6].payload.ip.ipc = pt_ipc_update_16;
	packet[6].payload.ip.ip = 0x0005;
	packet[7].type = ppt_tip_pgd;
	packet[7].payload.ip.ipc = pt_ipc_suppressed;
	packet[8].type = ppt_pad;

	encoder = pt_alloc_encoder(&config);
	if (!encoder)
		return 0;
	for (i = 0; i < 9; ++i)
		if (pt_enc_next(encoder, &packet[i]) < 0)
			ok = 0;
	if (pt_enc_get_offset(encoder, &offset) < 0)
		ok = 0;
	pt_free_encoder(encoder);

	return ok && write_file(name, buffer, (size_t) offset);
}

/* Replace the name ptxed was run by with PTXED in @out. */
static void rename_program(char *out, size_t size)
{
	size_t have = strlen(ptxed), want = strlen(PTXED);
	char *pos;

	if (strcmp(ptxed, PTXED) == 0)
		return;

	while ((pos = strstr(out, ptxed)) != NULL) {
		size_t rest = strlen(pos + have) + 1;

		if ((size_t) (pos - out) + want + rest > size)
			return;
		memmove(pos + want, pos + have, rest);
		memcpy(pos, PTXED, want);
	}
}

/* Run ptxed with @args; its stdout and stderr go to @out. */
static int run(char *out, size_t size, const char *args)
{
	char command[1024];
	FILE *pipe;
	size_t len;

	/* A hang fails the check instead of the whole test run. */
	snprintf(command, sizeof(command), "timeout 20 %s %s 2>&1", ptxed,
		 args);
	pipe = popen(command, "r");
	if (!pipe)
		return -1;
	len = fread(out, 1, size - 1, pipe);
	out[len] = 0;
	rename_program(out, size);
	return pclose(pipe);
}

static void expect(const char *args, const char *want, int want_fail)
{
	char out[4096];
	int status;

	status = run(out, sizeof(out), args);
	if (!CHECK(strcmp(out, want) == 0) || !CHECK((status != 0) ==
						     want_fail))
		printf("     ptxed %s\n---- got (status %d):\n%s---- want:\n%s",
		       args, status, out, want);
}

int main(void)
{
	uint8_t elf[512];
	size_t size;

	if (getenv("PTXED"))
		ptxed = getenv("PTXED");

	mkdir("build", 0777);
	mkdir("build/tools", 0777);
	mkdir(DIR, 0777);

	CHECK(make_trace(DIR "/trace.pt"));
	CHECK(make_stuck_trace(DIR "/stuck.pt"));
	CHECK(write_file(DIR "/image.bin", code, sizeof(code)));
	size = make_elf(elf, 1, 0x1000);
	CHECK(write_file(DIR "/elf64", elf, size));
	size = make_elf(elf, 0, 0x1000);
	CHECK(write_file(DIR "/elf32", elf, size));
	size = make_elf(elf, 1, 0x401000);
	CHECK(write_file(DIR "/elf64-high", elf, size));

	/* Every way of getting at the code gives the same flow. */
	expect("--raw " DIR "/image.bin:0x1000 --no-inst --check --pt "
	       DIR "/trace.pt", flow, 0);
	expect("--insn-decoder --raw " DIR "/image.bin:0x1000 --no-inst "
	       "--check --pt " DIR "/trace.pt", flow, 0);
	expect("--ipt:callback --raw " DIR "/image.bin:0x1000 --no-inst "
	       "--check --pt " DIR "/trace.pt", flow, 0);
	expect("--ipt:callback --insn-decoder --raw " DIR "/image.bin:0x1000 "
	       "--no-inst --check --pt " DIR "/trace.pt", flow, 0);
	expect("--elf " DIR "/elf64 --no-inst --check --pt " DIR "/trace.pt",
	       flow, 0);
	expect("--elf " DIR "/elf32 --no-inst --check --pt " DIR "/trace.pt",
	       flow, 0);
	expect("--ipt:callback --elf " DIR "/elf64 --no-inst --check --pt "
	       DIR "/trace.pt", flow, 0);
	expect("--elf " DIR "/elf64-high:0x1000 --no-inst --check --pt "
	       DIR "/trace.pt", flow, 0);

	/* Filtered to the trace's CR3, the same flow; to another, tracing
	 * is off from the PSB+ on. */
	expect("--ipt:cr3 0x5000 --raw " DIR "/image.bin:0x1000 --no-inst "
	       "--check --pt " DIR "/trace.pt", flow, 0);
	expect("--ipt:cr3 0x6000 --raw " DIR "/image.bin:0x1000 --no-inst "
	       "--check --pt " DIR "/trace.pt", "[disabled]\n", 0);

	/* A file range, and an instruction that spans two sections. */
	expect("--raw " DIR "/image.bin:0x0-0x4:0x1000 --raw " DIR
	       "/image.bin:0x4:0x1004 --no-inst --check --pt "
	       DIR "/trace.pt", flow, 0);
	expect("--raw " DIR "/image.bin:0x1000 --raw " DIR
	       "/image.bin:0x2:0x1002 --no-inst --check --pt "
	       DIR "/trace.pt", flow, 0);

	/* Disassembly. */
	expect("--raw " DIR "/image.bin:0x1000 --pt " DIR "/trace.pt",
	       "0000000000001000  nop\n"
	       "0000000000001001  jmp 0x1004\n"
	       "0000000000001004  nop\n"
	       "[disabled]\n", 0);
	{
		/* Each byte as " %02x", padded to 15 bytes. */
		char want[1024];

		snprintf(want, sizeof(want),
			 "0000000000001000 90%*s  nop\n"
			 "0000000000001001 eb 01%*s  jmp 0x1004\n"
			 "0000000000001004 90%*s  nop\n"
			 "[disabled]\n", 14 * 3, "", 13 * 3, "", 14 * 3, "");
		expect("--raw " DIR "/image.bin:0x1000 --raw-insn --pt "
		       DIR "/trace.pt", want, 0);
	}

	/* Statistics and quiet. */
	expect("--raw " DIR "/image.bin:0x1000 --quiet --stat:insn --pt "
	       DIR "/trace.pt", "insn: 3.\n", 0);
	expect("--insn-decoder --raw " DIR "/image.bin:0x1000 --quiet --stat "
	       "--pt " DIR "/trace.pt", "insn: 3.\n", 0);

	/* Nothing mapped: the error names the trace offset and the IP. */
	expect("--raw " DIR "/image.bin:0x2000 --no-inst --pt "
	       DIR "/trace.pt",
	       "[26, 1000: error: no memory mapped at this address]\n", 0);

	/* A resync that makes no progress ends after the repeated error. */
	expect("--resync-on-error --raw " DIR "/image.bin:0x1000 --pt "
	       DIR "/stuck.pt",
	       "[21, 35100000: error: no memory mapped at this address]\n"
	       "[21, 35100001: error: no memory mapped at this address]\n"
	       "[21, 35100001: error: no memory mapped at this address]\n", 0);
	expect("--resync-on-error --insn-decoder --raw " DIR
	       "/image.bin:0x1000 --pt " DIR "/stuck.pt",
	       "[21, 35100000: error: no memory mapped at this address]\n"
	       "[21, 35100001: error: no memory mapped at this address]\n"
	       "[21, 35100001: error: no memory mapped at this address]\n", 0);

	/* Option errors. */
	expect("--raw " DIR "/image.bin --pt " DIR "/trace.pt",
	       PTXED ": failed to parse base addressfrom '" DIR
	       "/image.bin'.\n"
	       PTXED ": --raw: failed to load '" DIR "/image.bin'.\n", 1);
	expect("--cpu nonsense --pt " DIR "/trace.pt",
	       PTXED ": cpu must be specified as f/m[/s]\n", 1);
	expect("--mtc-freq 256", PTXED ": --mtc-freq: value too big: 256.\n",
	       1);
	expect("--filter:addr0_cfg", PTXED ": --filter:addr0_cfg: missing "
	       "argument.\n", 1);
	expect("--pt " DIR "/trace.pt --filter:addr1_a 0x1000",
	       PTXED ": please specify --filter:addr1_a before --pt.\n", 1);
	expect("--frobnicate", PTXED ": unknown option: --frobnicate.\n", 1);
	expect("--no-inst", PTXED ": no pt file.\n", 1);

	return check_done();
}

/* ptsynth - Intel PT traces of real programs, with exact ground truth.
 *
 * Machines without Intel PT can still produce realistic traces: ptsynth runs
 * a real x86-64 Linux program under ptrace, follows every user-space
 * instruction of one thread, and writes the packets a processor tracing
 * that program with IA32_RTIT_CTL.User=1, OS=0 (CPL 3 only) would have
 * written, using ipt.h's own packet encoder.  Next to the trace it writes
 * the code the program executed (its executable mappings, dumped from its
 * memory) and the ground truth: the address of every executed instruction,
 * with the event markers ptxed --no-inst prints, so a decoder's output can
 * be compared line by line.
 *
 *     ptsynth [options] -o DIR -- PROGRAM [ARGS...]   record and synthesize
 *     ptsynth [options] -o DIR --replay               synthesize again
 *
 * DIR/exec.log    the recorded execution (see "The execution log" below)
 * DIR/image.txt   "start end file name" per executable mapping; the bytes
 *                 are in DIR/image/<start>.bin
 * DIR/NAME.pt     the trace (NAME is "trace" unless --name says otherwise)
 * DIR/NAME.truth  the ground truth, in ptxed --no-inst format
 * DIR/NAME.cfg    decoder configuration the trace needs (mtc_freq, ...)
 * --trim-image D2 also writes D2/image.txt and D2/image/ with only the
 *                 executed code pages: a small image for a sample trace
 *
 * Recording and synthesis are separate passes, so one (slow) recording
 * yields any number of traces with different options (--replay).
 *
 * PACKET RULES (Intel SDM Vol. 3C, chapter 33 "Intel Processor Trace".
 * Packets are cited by their definition in 33.4.2 "Packet Definitions";
 * "the enable table" is the table "Packet Generation under Different
 * Enable Conditions" and its case numbers; "the compound table" is
 * "Compound Packet Event Summary" at the start of 33.4.2.)
 *
 *  - Conditional branches (Jcc, JrCXZ, LOOPcc) add one bit to the TNT
 *    buffer, 1 when taken (33.4.2.1, TNT packet).  The buffer is written
 *    when it is full or when another packet must follow it, so packets
 *    stay in execution order: as a short TNT (1 to 6 bits) or, with more
 *    bits and --tnt-max above 6, as a long TNT (up to 47 bits).
 *  - Direct unconditional jumps and calls need no packet (enable table,
 *    case 6d and its call counterpart).  A near call pushes its next IP
 *    onto the return stack used for return compression, except a direct
 *    call with displacement zero: a way to read the IP that never
 *    returns, which decoders do not push either.
 *  - Indirect jumps and calls, uncompressed RETs and far branches write a
 *    TIP with the branch target (33.4.2.2, TIP packet: "Generation
 *    Scenario"; enable table cases 9d and 10e).
 *  - A near RET whose target equals the top of the return stack is
 *    compressed into one taken TNT bit and pops the stack; any other RET
 *    writes a TIP with its target ("Indirect Transfer Compression for
 *    Returns (RET)", in the TNT and TIP descriptions).  --no-retcomp turns
 *    compression off (IA32_RTIT_CTL.DisRETC).  The stack holds 64 entries
 *    and drops the oldest when full, as the decoder's does; it is emptied
 *    at every PSB+, overflow and uncompressed RET, which only ever makes
 *    it a top part of the decoder's stack, so a compressed RET is always
 *    one the decoder can expand.  --retcomp-psb keeps it across PSB+,
 *    as the SDM says a processor does not (33.2.1.2): a decoder running
 *    from an earlier PSB still expands such a RET, one starting at the
 *    PSB in between cannot.
 *  - IP compression (33.4.2.2, "IP Compression"): each IP packet carries
 *    the fewest bytes that, with the last IP, give the full address:
 *    2 bytes (update_16), 4 (update_32), 6 (sext_48, or update_48 for a
 *    non-canonical address) or 8 (full).  The last IP is updated by every
 *    packet with an IP payload and is zero after PSB; the FUPs in PSB+
 *    and after OVF never depend on it.
 *  - The start of tracing is a PSB+ without FUP (PacketEn=0 at the PSB),
 *    then TIP.PGE with the first instruction's IP (33.4.2.4, TIP.PGE
 *    packet; enable table cases 2*).
 *  - SYSCALL goes to ring 0, which clears ContextEn: TIP.PGD with the IP
 *    suppressed (33.4.2.5, TIP.PGD packet: no IP payload when ContextEn
 *    is cleared; enable table, far branch cases).  SYSENTER and INTn are
 *    treated the same; the enable table has FUP(CLIP) + TIP.PGD() for a
 *    software interrupt (case 12c), a gap that 64-bit Linux programs do
 *    not reach.
 *    When the kernel returns to user space, TIP.PGE with the IP it
 *    returns to.  MODE.Exec before TIP.PGE is needed only when no
 *    MODE.Exec was sent since the last PSB (33.4.2.8, MODE packets);
 *    every PSB+ here carries one, so none is needed.
 *  - A signal delivered to the thread is an asynchronous transfer through
 *    the kernel: FUP with the interrupted IP and TIP.PGD without IP
 *    (enable table cases 11c and 13c), then TIP.PGE at the handler.
 *  - The end of tracing after an exit or execve system call is the
 *    SYSCALL's TIP.PGD; a recording stopped by --max-insn or a fatal
 *    signal ends with FUP + TIP.PGD() at the next IP, as clearing TraceEn
 *    does (enable table case 3b).
 *  - PSB+ (33.4.2.17, PSB packet, and the PSBEND packet): after every
 *    --psb-period bytes, at the next instruction boundary with tracing
 *    enabled: PSB, TSC, TMA (with MTC, right after TSC), CBR, MODE.Exec,
 *    FUP with the IP of the next instruction, PSBEND.  Pending TNT bits
 *    are written first.
 *  - Timing (the TSC, MTC, TMA and CYC packets of 33.4.2): a model clock
 *    runs one cycle per instruction and 2000 per system call; TSC counts
 *    cycles, the crystal clock runs at TSC/100 (CPUID.15H EBX/EAX =
 *    100/1).  --mtc F writes an MTC whenever crystal clock bit F toggles;
 *    --cyc writes before each packet a CYC with the cycles since the last
 *    CYC.
 *  - Overflow (the OVF packet; compound table, "Overflow": OVF, then FUP
 *    when the overflow resolves with ContextEn=1): --ovf N:K drops the
 *    packets of K instructions after roughly every N, then writes OVF and
 *    a FUP with the IP where packet generation resumes.  The drop starts
 *    right after a branch that wrote a packet: a decoder cannot see the
 *    instructions between the last packet and the OVF, so neither does
 *    the truth.  Pending TNT bits are written first, the return stack is
 *    emptied, and a drop ends early before any instruction that disables
 *    tracing.
 *  - PAD (the PAD packet): --pad N writes a PAD after every N-th packet.
 *
 * THE GROUND TRUTH has one line per executed instruction ("%016llx") and
 * the markers ptxed prints for the events of these traces: [enabled] and
 * [resumed] (TIP.PGE; resumed when it goes on where the decoder stopped:
 * the next IP after a SYSCALL, the interrupted IP after a signal),
 * [disabled] (TIP.PGD), [overflow] (OVF).  A REP-prefixed string
 * instruction is one instruction however many iterations it makes.
 *
 * RECORDING follows one thread (others run untraced) and stops at a
 * successful execve: trace the real binary, not a wrapper script or env.
 * Address space randomization is off for the program, so recordings
 * repeat.  Most code runs natively between stops: from a stop, the path
 * ahead is known without executing it as long as it consists of
 * straight-line instructions, REP string instructions and direct jumps
 * and calls; a hardware breakpoint (DR0, set with PTRACE_POKEUSER into
 * u_debugreg) at the first instruction after it stops the run.  A stop at
 * a RET resolves it from the return address on the stack; a stop at a
 * conditional branch puts one breakpoint at the end of each of its two
 * paths (DR0, DR1) and the one that hits tells the direction.  Indirect
 * jumps and calls, system calls and anything unusual are single-stepped.
 * --single-step steps every instruction; it records the same execution,
 * 3-4 times slower.  Code bytes are read with process_vm_readv through a
 * page cache that is dropped after every mmap, munmap, mprotect and
 * mremap.  The executable mappings are dumped before every exit, execve
 * and signal the program does not handle, and when --max-insn is reached.
 *
 * THE EXECUTION LOG is a sequence of little-endian 64-bit words: the IP of
 * each executed instruction, in order, and two markers whose values are
 * kernel addresses (never user IPs):
 *     LOG_ASYNC Y   the kernel took control at Y (a signal), the next IP
 *                   is where it returned to user space
 *     LOG_END Y     the recording ends; Y is the next IP, if any
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <Zydis/Zydis.h>

#ifdef PTSYNTH_LIBIPT
#include <intel-pt.h>
#else
#include "ipt.h"
#endif

#define LOG_ASYNC 0xffff000000000001ull
#define LOG_END 0xffff000000000002ull

/* ---- instruction classes ---- */

enum kind {
	K_OTHER,	/* falls through to the next instruction */
	K_JCC,		/* conditional branch: a TNT bit */
	K_JMP,		/* direct near jump: nothing */
	K_CALL,		/* direct near call: nothing, pushes */
	K_JMP_IND,	/* indirect near jump: TIP */
	K_CALL_IND,	/* indirect near call: TIP, pushes */
	K_RET,		/* near return: TNT bit or TIP */
	K_FAR,		/* far transfer staying in user space: TIP */
	K_SYS,		/* enters the kernel: TIP.PGD() */
	K_BAD		/* cannot decode */
};

struct insn_info {
	uint64_t ip;
	uint64_t target;	/* direct branches */
	uint8_t len;
	uint8_t kind;
	uint8_t rep;		/* REP string instruction */
	uint8_t zero_disp;	/* direct call to the next instruction */
	uint8_t used;		/* a filled decode-cache slot */
};

static ZydisDecoder zdec;

static void classify(struct insn_info *info, uint64_t ip, const uint8_t *buf,
		     size_t size)
{
	ZydisDecodedInstruction zi;

	memset(info, 0, sizeof(*info));
	info->ip = ip;
	info->kind = K_BAD;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zdec, NULL, buf, size,
							 &zi)))
		return;

	info->len = zi.length;
	info->kind = K_OTHER;
	if (zi.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
			     ZYDIS_ATTRIB_HAS_REPNE))
		info->rep = (zi.meta.category == ZYDIS_CATEGORY_STRINGOP);

	switch (zi.mnemonic) {
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
		info->kind = K_SYS;
		return;
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
		info->kind = K_FAR;
		return;
	default:
		break;
	}

	switch (zi.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		info->kind = K_JCC;
		break;
	case ZYDIS_CATEGORY_UNCOND_BR:
		info->kind = K_JMP_IND;
		if (zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
			info->kind = K_FAR;
		else if (zi.raw.imm[0].is_relative)
			info->kind = K_JMP;
		break;
	case ZYDIS_CATEGORY_CALL:
		info->kind = K_CALL_IND;
		if (zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR)
			info->kind = K_FAR;
		else if (zi.raw.imm[0].is_relative)
			info->kind = K_CALL;
		break;
	case ZYDIS_CATEGORY_RET:
		info->kind = (zi.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR) ?
			K_FAR : K_RET;
		break;
	default:
		break;
	}

	if ((info->kind == K_JCC || info->kind == K_JMP ||
	     info->kind == K_CALL) && zi.raw.imm[0].is_relative) {
		info->target = ip + zi.length +
			(uint64_t) zi.raw.imm[0].value.s;
		info->zero_disp = (zi.raw.imm[0].value.s == 0);
	}
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "ptsynth: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(2);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* ==== recording ========================================================== */

#define PAGE 4096ull
#define CACHE_PAGES 512

struct page_cache {
	uint64_t addr[CACHE_PAGES];	/* page address + 1; 0 is empty */
	int len[CACHE_PAGES];		/* bytes readable, 0 or PAGE */
	uint8_t data[CACHE_PAGES][PAGE];
};

struct recorder {
	pid_t pid;
	const char *dir;
	FILE *log;
	uint64_t ninsn;
	uint64_t max_insn;
	uint64_t steps, runs;
	int single_step;
	struct page_cache *cache;
};

static int read_page(struct recorder *r, uint64_t page, uint8_t *out)
{
	struct iovec local, remote;
	ssize_t n;

	local.iov_base = out;
	local.iov_len = PAGE;
	remote.iov_base = (void *) (uintptr_t) page;
	remote.iov_len = PAGE;
	n = process_vm_readv(r->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t) PAGE)
		return (int) PAGE;

	/* The vdso and other special mappings: through /proc/pid/mem. */
	{
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", (int) r->pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return 0;
		n = pread(fd, out, PAGE, (off_t) page);
		close(fd);
	}
	return n == (ssize_t) PAGE ? (int) PAGE : 0;
}

/* Copy up to 15 code bytes at ip; returns how many are readable. */
static size_t read_code(struct recorder *r, uint64_t ip, uint8_t *buf)
{
	size_t got = 0;

	while (got < 15) {
		uint64_t addr = ip + got, page = addr & ~(PAGE - 1);
		unsigned slot = (unsigned) ((page / PAGE) % CACHE_PAGES);
		size_t n;

		if (r->cache->addr[slot] != page + 1) {
			r->cache->len[slot] =
				read_page(r, page, r->cache->data[slot]);
			r->cache->addr[slot] = page + 1;
		}
		if (!r->cache->len[slot])
			break;
		n = PAGE - (addr - page);
		if (n > 15 - got)
			n = 15 - got;
		memcpy(buf + got, r->cache->data[slot] + (addr - page), n);
		got += n;
	}
	return got;
}

static void decode_at(struct recorder *r, uint64_t ip, struct insn_info *info)
{
	uint8_t buf[15];
	size_t n = read_code(r, ip, buf);

	classify(info, ip, buf, n);
}

static void log_word(struct recorder *r, uint64_t word)
{
	fwrite(&word, sizeof(word), 1, r->log);
}

/* Write the executable mappings and their bytes to DIR/image.txt and
 * DIR/image/.  Called whenever the process may be about to go away. */
static void dump_maps(struct recorder *r)
{
	char path[4096], line[4096];
	FILE *maps, *out;
	uint8_t *buf;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int) r->pid);
	maps = fopen(path, "r");
	if (!maps)
		return;
	snprintf(path, sizeof(path), "%s/image", r->dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/image.txt", r->dir);
	out = fopen(path, "w");
	if (!out)
		die("cannot write %s", path);

	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, end;
		char perms[8], name[4096];
		uint64_t at;
		FILE *bin;

		name[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]",
			   &start, &end, perms, name) < 3)
			continue;
		if (perms[2] != 'x' || start >= 0xffff800000000000ull)
			continue;
		buf = (uint8_t *) malloc(end - start);
		if (!buf)
			die("out of memory%s", "");
		for (at = start; at < end; at += PAGE) {
			if (!read_page(r, at, buf + (at - start)))
				memset(buf + (at - start), 0, PAGE);
		}
		snprintf(path, sizeof(path), "%s/image/%llx.bin", r->dir,
			 start);
		bin = fopen(path, "wb");
		if (!bin)
			die("cannot write %s", path);
		fwrite(buf, 1, end - start, bin);
		fclose(bin);
		free(buf);
		{
			const char *n = name;

			while (*n == ' ')
				n++;
			fprintf(out, "%llx %llx image/%llx.bin %s\n", start,
				end, start, *n ? n : "[anon]");
		}
	}
	fclose(out);
	fclose(maps);
}

static uint64_t get_rip(pid_t pid)
{
	errno = 0;
	return (uint64_t) ptrace(PTRACE_PEEKUSER, pid,
				 (void *) offsetof(struct user_regs_struct, rip),
				 NULL);
}

/* How the thread takes sig: 2 caught by a handler, 1 ignored, 0 default
 * action.  Only the default action can end the process (then the
 * mappings must be dumped first); only a handler changes the flow. */
static int sig_disposition(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long cgt = 0, ign = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "SigCgt: %llx", &cgt);
		sscanf(line, "SigIgn: %llx", &ign);
	}
	fclose(f);
	if (sig == SIGKILL || sig == SIGSTOP)
		return 0;
	if ((cgt >> (sig - 1)) & 1)
		return 2;
	return (int) ((ign >> (sig - 1)) & 1);
}

static int is_code_change(long nr)
{
	return nr == 9 || nr == 10 || nr == 11 || nr == 25;
}

/* Native runs.  A path is the instructions that will run from a stop up to
 * the next stop, known without executing them: straight-line code, REP
 * string instructions (one instruction, however many iterations) and
 * direct jumps and calls, which run on to their target.  The path ends
 * before the next instruction whose successor is unknown; a hardware
 * breakpoint there stops the run.  A path may also start with one branch
 * resolved at the stop: a RET (its target is on top of the stack), or a
 * conditional branch (two paths, one breakpoint at the end of each: the
 * one that hits tells the direction). */

#define PATH_MAX_INSN 256

struct path {
	uint64_t ip[PATH_MAX_INSN];
	int n;
	uint64_t stop;
};

static int in_path(const struct path *p, uint64_t ip, int from)
{
	int i;

	for (i = from; i < p->n; i++)
		if (p->ip[i] == ip)
			return i;
	return -1;
}

/* Extend p from ip; returns 0 if p ends at a usable stop. */
static int walk(struct recorder *r, struct path *p, uint64_t ip,
		uint64_t budget)
{
	struct insn_info info;

	for (;;) {
		decode_at(r, ip, &info);
		if (info.kind == K_BAD)
			return -1;
		if (info.kind != K_OTHER && info.kind != K_JMP &&
		    info.kind != K_CALL)
			break;
		/* A loop of direct jumps or a long path: stop early, on an
		 * instruction that is not in the path yet. */
		if (p->n >= PATH_MAX_INSN || (uint64_t) p->n >= budget ||
		    in_path(p, ip, 0) >= 0)
			break;
		p->ip[p->n++] = ip;
		ip = (info.kind == K_OTHER) ? ip + info.len : info.target;
	}
	if (in_path(p, ip, 0) >= 0)
		return -1;
	p->stop = ip;
	return 0;
}

static int set_drs(pid_t pid, uint64_t a0, uint64_t a1)
{
	size_t dr = offsetof(struct user, u_debugreg);
	unsigned long dr7 = 0;

	/* Disable first: DR0/DR1 may only change while unused. */
	if (ptrace(PTRACE_POKEUSER, pid, (void *) (dr + 7 * sizeof(long)),
		   (void *) 0ul))
		return -1;
	if (a0) {
		if (ptrace(PTRACE_POKEUSER, pid, (void *) dr, (void *) a0))
			return -1;
		dr7 |= 1;	/* L0, execute, length 1 */
	}
	if (a1) {
		if (ptrace(PTRACE_POKEUSER, pid, (void *) (dr + sizeof(long)),
			   (void *) a1))
			return -1;
		dr7 |= 4;	/* L1 */
	}
	if (!dr7)
		return 0;
	return (int) ptrace(PTRACE_POKEUSER, pid,
			    (void *) (dr + 7 * sizeof(long)), (void *) dr7);
}

static void log_path(struct recorder *r, const struct path *p, int upto)
{
	int i;

	for (i = 0; i < upto; i++)
		log_word(r, p->ip[i]);
	r->ninsn += (uint64_t) upto;
}

enum { RUN_OK, RUN_STEP, RUN_SIGNAL, RUN_GONE, RUN_LOST, RUN_NOHW };

static int run_native(struct recorder *r, uint64_t rip, uint64_t *new_rip,
		      int *pstatus)
{
	static struct path pa, pb;
	struct insn_info info;
	uint64_t budget = 1u << 30, at;
	long flags;
	int two = 0, status, i;

	if (r->max_insn)
		budget = r->max_insn - r->ninsn;
	pa.n = 0;
	pb.n = 0;
	decode_at(r, rip, &info);
	switch (info.kind) {
	case K_OTHER:
	case K_JMP:
	case K_CALL:
		if (walk(r, &pa, rip, budget) || pa.n < 2)
			return RUN_STEP;
		break;
	case K_RET: {
		struct iovec local, remote;
		uint64_t rsp, target = 0;

		if (budget < 2)
			return RUN_STEP;
		errno = 0;
		rsp = (uint64_t) ptrace(PTRACE_PEEKUSER, r->pid,
			(void *) offsetof(struct user_regs_struct, rsp), NULL);
		local.iov_base = &target;
		local.iov_len = 8;
		remote.iov_base = (void *) (uintptr_t) rsp;
		remote.iov_len = 8;
		if (errno || process_vm_readv(r->pid, &local, 1, &remote, 1,
					      0) != 8)
			return RUN_STEP;
		pa.ip[pa.n++] = rip;
		if (walk(r, &pa, target, budget - 1) || pa.n < 2)
			return RUN_STEP;
		break;
	}
	case K_JCC:
		if (budget < 2)
			return RUN_STEP;
		pa.ip[pa.n++] = rip;
		pb.ip[pb.n++] = rip;
		if (walk(r, &pa, info.target, budget - 1) ||
		    walk(r, &pb, rip + info.len, budget - 1) ||
		    pa.stop == pb.stop || in_path(&pa, pb.stop, 1) >= 0 ||
		    in_path(&pb, pa.stop, 1) >= 0)
			return RUN_STEP;
		two = 1;
		break;
	default:
		return RUN_STEP;
	}

	if (set_drs(r->pid, pa.stop, two ? pb.stop : 0))
		return RUN_NOHW;
	/* RF: no breakpoint on the first instruction, if it is a stop. */
	errno = 0;
	flags = ptrace(PTRACE_PEEKUSER, r->pid,
		       (void *) offsetof(struct user_regs_struct, eflags),
		       NULL);
	if (!errno)
		ptrace(PTRACE_POKEUSER, r->pid,
		       (void *) offsetof(struct user_regs_struct, eflags),
		       (void *) (flags | 0x10000l));
	ptrace(PTRACE_CONT, r->pid, NULL, NULL);
	r->runs++;
	if (waitpid(r->pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		*pstatus = status;
		return RUN_GONE;
	}
	set_drs(r->pid, 0, 0);
	*pstatus = status;
	at = get_rip(r->pid);
	*new_rip = at;

	if (WSTOPSIG(status) == SIGTRAP) {
		if (at == pa.stop) {
			log_path(r, &pa, pa.n);
			return RUN_OK;
		}
		if (two && at == pb.stop) {
			log_path(r, &pb, pb.n);
			return RUN_OK;
		}
		fprintf(stderr, "ptsynth: lost at %" PRIx64 " (from %" PRIx64
			")\n", at, rip);
		return RUN_LOST;
	}

	/* A signal interrupted the run at `at`: what ran is the path up to
	 * there. */
	if (at == rip) {
		return RUN_SIGNAL;
	}
	i = in_path(&pa, at, 1);
	if (i >= 0) {
		log_path(r, &pa, i);
		return RUN_SIGNAL;
	}
	if (at == pa.stop) {
		log_path(r, &pa, pa.n);
		return RUN_SIGNAL;
	}
	if (two) {
		i = in_path(&pb, at, 1);
		if (i >= 0) {
			log_path(r, &pb, i);
			return RUN_SIGNAL;
		}
		if (at == pb.stop) {
			log_path(r, &pb, pb.n);
			return RUN_SIGNAL;
		}
	}
	fprintf(stderr, "ptsynth: lost at %" PRIx64 " after a signal\n", at);
	return RUN_LOST;
}

/* Run the program and write DIR/exec.log and DIR/image.txt. */
static int record(struct recorder *r, char **argv)
{
	struct insn_info info;
	uint64_t rip, end_ip = 0;
	int status, sig = 0, hw_ok = 1, caught;
	char path[4096];

	snprintf(path, sizeof(path), "%s/exec.log", r->dir);
	r->log = fopen(path, "wb");
	if (!r->log)
		die("cannot write %s", path);
	setvbuf(r->log, NULL, _IOFBF, 1 << 20);
	r->cache = (struct page_cache *) calloc(1, sizeof(*r->cache));

	r->pid = fork();
	if (r->pid < 0)
		die("fork failed%s", "");
	if (!r->pid) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			fprintf(stderr, "ptsynth: ptrace(PTRACE_TRACEME) "
				"failed: %s\n", strerror(errno));
			_exit(126);
		}
		/* The same addresses every run: comparable recordings. */
		personality(ADDR_NO_RANDOMIZE);
		execvp(argv[0], argv);
		fprintf(stderr, "ptsynth: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	if (waitpid(r->pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		fprintf(stderr, "ptsynth: %s did not start under ptrace "
			"(is ptrace permitted here?)\n", argv[0]);
		return -1;
	}
	ptrace(PTRACE_SETOPTIONS, r->pid, NULL,
	       (void *) (long) (PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC));

	rip = get_rip(r->pid);
	for (;;) {
		uint64_t ip;
		int sys = 0;
		long nr = -1;

		if (r->max_insn && r->ninsn >= r->max_insn) {
			end_ip = rip;
			dump_maps(r);
			break;
		}

		/* Run natively up to the next branch we cannot resolve. */
		if (!r->single_step && hw_ok) {
			int rc = run_native(r, rip, &rip, &status);

			if (rc == RUN_GONE)
				break;
			if (rc == RUN_LOST)
				return -1;
			if (rc == RUN_NOHW)
				hw_ok = 0;
			if (rc == RUN_SIGNAL) {
				sig = WSTOPSIG(status);
				goto signal;
			}
			if (rc == RUN_OK)
				continue;
		}
		decode_at(r, rip, &info);

		if (info.kind == K_SYS) {
			struct user_regs_struct regs;

			ptrace(PTRACE_GETREGS, r->pid, NULL, &regs);
			nr = (long) regs.rax;
			sys = 1;
			if (nr == 60 || nr == 231 || nr == 59 || nr == 322)
				dump_maps(r);
		}

		log_word(r, rip);
		r->ninsn++;
		for (;;) {
			ptrace(PTRACE_SINGLESTEP, r->pid, NULL,
			       (void *) (long) sig);
			r->steps++;
			sig = 0;
			if (waitpid(r->pid, &status, 0) < 0 ||
			    !WIFSTOPPED(status))
				goto gone;
			if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
				goto exec;
			ip = get_rip(r->pid);
			if (WSTOPSIG(status) != SIGTRAP)
				break;
			/* Further iterations of a REP string instruction. */
			if (info.rep && ip == rip)
				continue;
			break;
		}
		if (sys && is_code_change(nr))
			memset(r->cache->addr, 0, sizeof(r->cache->addr));
		if (WSTOPSIG(status) == SIGTRAP) {
			rip = ip;
			continue;
		}

		/* Another signal: the stepped instruction may or may not have
		 * completed before it arrived. */
		sig = WSTOPSIG(status);
		if (ip == rip) {
			/* Not completed: it will run again. */
			fseek(r->log, -8, SEEK_CUR);
			r->ninsn--;
		}
		rip = ip;
signal:
		/* Deliver it, stepping: a handler stops us at its entry. */
		caught = sig_disposition(r->pid, sig);
		if (!caught)
			dump_maps(r);
		ptrace(PTRACE_SINGLESTEP, r->pid, NULL, (void *) (long) sig);
		r->steps++;
		sig = 0;
		if (waitpid(r->pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
			end_ip = rip;
			goto gone_async;
		}
		ip = get_rip(r->pid);
		if (WSTOPSIG(status) == SIGTRAP) {
			if (caught == 2) {
				/* At the handler's first instruction. */
				log_word(r, LOG_ASYNC);
				log_word(r, rip);
				rip = ip;
				continue;
			}
			/* The signal was ignored; the instruction ran. */
			log_word(r, rip);
			r->ninsn++;
			rip = ip;
			continue;
		}
		sig = WSTOPSIG(status);
		rip = ip;
		goto signal;
	}

	kill(r->pid, SIGKILL);
	waitpid(r->pid, &status, 0);
	log_word(r, LOG_END);
	log_word(r, end_ip);
	fclose(r->log);
	return 0;

exec:
	/* A new program: the old one's trace ends with its execve. */
	kill(r->pid, SIGKILL);
	waitpid(r->pid, &status, 0);
gone:
	log_word(r, LOG_END);
	log_word(r, 0);
	fclose(r->log);
	return 0;

gone_async:
	log_word(r, LOG_END);
	log_word(r, end_ip);
	fclose(r->log);
	return 0;
}

/* ==== synthesis ========================================================== */

struct segment {
	uint64_t start, end;
	uint8_t *data;
};

struct image {
	struct segment seg[256];
	int nseg;
};

static void load_image(struct image *img, const char *dir)
{
	char path[4096], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/image.txt", dir);
	f = fopen(path, "r");
	if (!f)
		die("cannot read %s", path);
	img->nseg = 0;
	while (fgets(line, sizeof(line), f) && img->nseg < 256) {
		unsigned long long start, end;
		char file[1024];
		struct segment *s = &img->seg[img->nseg];
		FILE *bin;

		if (sscanf(line, "%llx %llx %1023s", &start, &end, file) != 3)
			continue;
		s->start = start;
		s->end = end;
		s->data = (uint8_t *) malloc(end - start);
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		bin = fopen(path, "rb");
		if (!bin || !s->data ||
		    fread(s->data, 1, end - start, bin) != end - start)
			die("cannot read %s", path);
		fclose(bin);
		img->nseg++;
	}
	fclose(f);
}

static size_t image_read(const struct image *img, uint64_t ip, uint8_t *buf,
			 size_t size)
{
	int i;

	for (i = 0; i < img->nseg; i++) {
		const struct segment *s = &img->seg[i];

		if (ip >= s->start && ip < s->end) {
			size_t n = (size_t) (s->end - ip);

			if (n > size)
				n = size;
			memcpy(buf, s->data + (ip - s->start), n);
			if (n < size)
				n += image_read(img, ip + n, buf + n,
						size - n);
			return n;
		}
	}
	return 0;
}

#define ICACHE_BITS 20

struct options {
	const char *dir;
	const char *name;
	uint64_t max_insn;
	uint64_t psb_period;
	uint64_t ovf_every, ovf_len;
	unsigned tnt_max;
	int retcomp, retcomp_psb, tsc, cyc, mtc, mtc_freq, single_step, quiet;
	unsigned pad;
	const char *trim_dir;
};

struct synth {
	const struct options *opt;
	struct image img;
	struct insn_info *icache;	/* decoded instructions by IP */
	size_t icache_used;
	struct pt_encoder *enc;
	struct pt_config config;
	uint8_t *buf;
	size_t bufsize;
	FILE *pt, *truth;

	uint64_t bytes, packets, since_psb, ninsn, ntruth;
	uint64_t last_ip;
	uint64_t tnt_bits;
	unsigned tnt_count;
	uint64_t retstack[64];
	unsigned ret_top, ret_count;
	int enabled;
	uint64_t dec_ip;	/* where a decoder stands while disabled */

	uint64_t cycles, cyc_cycles, mtc_last;
	uint64_t since_ovf;
	int dropping;
	uint64_t drop_left;
	uint64_t errors;
	uint64_t *pages;	/* executed code pages, for --trim-image */
	size_t npages;
};

#define PAGE_SET 65536

static void mark_page(struct synth *s, uint64_t page)
{
	size_t h = (size_t) ((page >> 12) * 0x9e3779b97f4a7c15ull >> 48);

	for (;; h = (h + 1) % PAGE_SET) {
		if (s->pages[h] == page + 1)
			return;
		if (!s->pages[h]) {
			s->pages[h] = page + 1;
			s->npages++;
			return;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* --trim-image: only the pages that hold executed code, so a sample trace
 * ships with a small image.  Adjacent pages make one segment. */
static void write_trimmed(struct synth *s, const char *dir)
{
	char path[4096];
	uint64_t *list;
	size_t i, n = 0;
	FILE *txt;

	list = (uint64_t *) malloc(s->npages * sizeof(*list) + 1);
	for (i = 0; i < PAGE_SET; i++)
		if (s->pages[i])
			list[n++] = s->pages[i] - 1;
	qsort(list, n, sizeof(*list), cmp_u64);
	mkdir(dir, 0777);
	snprintf(path, sizeof(path), "%s/image", dir);
	mkdir(path, 0777);
	snprintf(path, sizeof(path), "%s/image.txt", dir);
	txt = fopen(path, "w");
	if (!txt)
		die("cannot write %s", path);
	for (i = 0; i < n;) {
		size_t j = i + 1;
		uint64_t start = list[i], end;
		uint8_t *buf;
		FILE *bin;

		while (j < n && list[j] == list[j - 1] + PAGE)
			j++;
		end = list[j - 1] + PAGE;
		buf = (uint8_t *) calloc(1, end - start);
		image_read(&s->img, start, buf, end - start);
		snprintf(path, sizeof(path), "%s/image/%" PRIx64 ".bin", dir,
			 start);
		bin = fopen(path, "wb");
		if (!bin)
			die("cannot write %s", path);
		fwrite(buf, 1, end - start, bin);
		fclose(bin);
		free(buf);
		fprintf(txt, "%" PRIx64 " %" PRIx64 " image/%" PRIx64 ".bin "
			"[trimmed]\n", start, end, start);
		i = j;
	}
	fclose(txt);
	free(list);
}

static const struct insn_info *lookup(struct synth *s, uint64_t ip)
{
	uint64_t h = (ip * 0x9e3779b97f4a7c15ull) >> (64 - ICACHE_BITS);
	struct insn_info *e;
	uint8_t code[15];
	size_t n;

	/* Nearly full (a huge program): start over rather than crawl. */
	if (s->icache_used > (3u << ICACHE_BITS) / 4) {
		memset(s->icache, 0, sizeof(*s->icache) << ICACHE_BITS);
		s->icache_used = 0;
	}
	for (;;) {
		e = &s->icache[h];
		if (!e->used)
			break;
		if (e->ip == ip)
			return e;
		h = (h + 1) & ((1u << ICACHE_BITS) - 1);
	}
	n = image_read(&s->img, ip, code, sizeof(code));
	classify(e, ip, code, n);
	e->used = 1;
	s->icache_used++;
	return e;
}

static void flush_buffer(struct synth *s)
{
	uint64_t off = 0;

	pt_enc_get_offset(s->enc, &off);
	fwrite(s->buf, 1, (size_t) off, s->pt);
	pt_enc_sync_set(s->enc, 0);
}

static void put(struct synth *s, const struct pt_packet *p)
{
	uint64_t off = 0;
	int n;

	pt_enc_get_offset(s->enc, &off);
	if (off + 64 > s->bufsize)
		flush_buffer(s);
	n = pt_enc_next(s->enc, p);
	if (n <= 0) {
		fprintf(stderr, "ptsynth: encoder error %d on packet type %d\n",
			n, (int) p->type);
		exit(2);
	}
	s->bytes += (uint64_t) n;
	s->since_psb += (uint64_t) n;
	s->packets++;
	if (s->opt->pad && !(s->packets % s->opt->pad)) {
		struct pt_packet pad;

		memset(&pad, 0, sizeof(pad));
		pad.type = ppt_pad;
		n = pt_enc_next(s->enc, &pad);
		s->bytes += (uint64_t) n;
		s->since_psb += (uint64_t) n;
	}
}

static void put_simple(struct synth *s, enum pt_packet_type type)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	put(s, &p);
}

/* CYC before a packet: the cycles since the last CYC (33.4.2.14). */
static void put_cyc(struct synth *s)
{
	struct pt_packet p;

	if (!s->opt->cyc || s->cycles == s->cyc_cycles)
		return;
	memset(&p, 0, sizeof(p));
	p.type = ppt_cyc;
	p.payload.cyc.value = s->cycles - s->cyc_cycles;
	s->cyc_cycles = s->cycles;
	put(s, &p);
}

static void flush_tnt(struct synth *s)
{
	struct pt_packet p;

	if (!s->tnt_count)
		return;
	put_cyc(s);
	memset(&p, 0, sizeof(p));
	p.type = s->tnt_count <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	p.payload.tnt.bit_size = (uint8_t) s->tnt_count;
	p.payload.tnt.payload = s->tnt_bits;
	s->tnt_count = 0;
	s->tnt_bits = 0;
	put(s, &p);
}

static void add_tnt(struct synth *s, int taken)
{
	s->tnt_bits = (s->tnt_bits << 1) | (taken ? 1u : 0u);
	s->tnt_count++;
	if (s->tnt_count >= s->opt->tnt_max)
		flush_tnt(s);
}

/* The fewest payload bytes that give ip from the last IP (33.4.2.2). */
static enum pt_ip_compression compress(uint64_t last, uint64_t ip, int fresh)
{
	uint64_t sext = (uint64_t) (((int64_t) (ip << 16)) >> 16);

	if (!fresh && (ip >> 16) == (last >> 16))
		return pt_ipc_update_16;
	if (!fresh && (ip >> 32) == (last >> 32))
		return pt_ipc_update_32;
	if (sext == ip)
		return pt_ipc_sext_48;
	if (!fresh && (ip >> 48) == (last >> 48))
		return pt_ipc_update_48;
	return pt_ipc_full;
}

/* An IP packet; fresh: do not depend on the last IP. */
static void put_ip(struct synth *s, enum pt_packet_type type, uint64_t ip,
		   int suppressed, int fresh)
{
	struct pt_packet p;

	flush_tnt(s);
	put_cyc(s);
	memset(&p, 0, sizeof(p));
	p.type = type;
	if (suppressed) {
		p.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		p.payload.ip.ipc = compress(s->last_ip, ip, fresh);
		p.payload.ip.ip = ip;
		s->last_ip = ip;
	}
	put(s, &p);
}

static uint64_t ctc_of(uint64_t tsc)
{
	return tsc / 100;
}

static uint64_t tsc_now(const struct synth *s)
{
	return 0x100000000ull + s->cycles;
}

static void put_psb(struct synth *s, uint64_t fup_ip)
{
	struct pt_packet p;

	flush_tnt(s);
	put_simple(s, ppt_psb);
	if (s->opt->tsc) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_tsc;
		p.payload.tsc.tsc = tsc_now(s);
		put(s, &p);
	}
	/* TMA belongs right after a TSC. */
	if (s->opt->mtc && s->opt->tsc) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_tma;
		p.payload.tma.ctc = (uint16_t) (ctc_of(tsc_now(s)) & 0xffff);
		p.payload.tma.fc = 0;
		put(s, &p);
	}
	memset(&p, 0, sizeof(p));
	p.type = ppt_cbr;
	p.payload.cbr.ratio = 32;
	put(s, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	put(s, &p);
	s->last_ip = 0;
	if (s->enabled) {
		memset(&p, 0, sizeof(p));
		p.type = ppt_fup;
		p.payload.ip.ipc = compress(0, fup_ip, 1);
		p.payload.ip.ip = fup_ip;
		s->last_ip = fup_ip;
		put(s, &p);
	}
	put_simple(s, ppt_psbend);
	s->since_psb = 0;
	if (!s->opt->retcomp_psb)
		s->ret_count = 0;
}

/* MTC when crystal clock bit mtc_freq toggles (33.4.2.12). */
static void tick(struct synth *s, uint64_t cycles)
{
	s->cycles += cycles;
	if (s->opt->mtc) {
		uint64_t m = ctc_of(tsc_now(s)) >> s->opt->mtc_freq;

		if (m != s->mtc_last) {
			struct pt_packet p;

			s->mtc_last = m;
			if (!s->enabled || s->dropping)
				return;
			memset(&p, 0, sizeof(p));
			p.type = ppt_mtc;
			p.payload.mtc.ctc = (uint8_t) m;
			flush_tnt(s);
			put(s, &p);
		}
	}
}

static void truth_ip(struct synth *s, uint64_t ip)
{
	fprintf(s->truth, "%016" PRIx64 "\n", ip);
	s->ntruth++;
}

static void truth_mark(struct synth *s, const char *what)
{
	fprintf(s->truth, "[%s]\n", what);
}

static void push_ret(struct synth *s, uint64_t ip)
{
	s->retstack[s->ret_top] = ip;
	s->ret_top = (s->ret_top + 1) % 64;
	if (s->ret_count < 64)
		s->ret_count++;
}

static int retire_one(struct synth *s, const struct insn_info *in,
		      uint64_t next, uint64_t nlip);

/* The packets for instruction `in`, now that its successor is known.
 * Returns 1 if it wrote a flow packet (TNT bit or TIP). */
static int retire(struct synth *s, const struct insn_info *in, uint64_t next)
{
	uint64_t nlip = in->ip + in->len;
	uint64_t errors = s->errors;
	int rc;

	if (s->dropping)
		return 0;
	rc = retire_one(s, in, next, nlip);
	if (s->errors != errors && s->errors <= 5)
		fprintf(stderr, "ptsynth: %016" PRIx64 " (class %d) went to "
			"%016" PRIx64 "\n", in->ip, in->kind, next);
	return rc;
}

static int retire_one(struct synth *s, const struct insn_info *in,
		      uint64_t next, uint64_t nlip)
{
	switch (in->kind) {
	case K_OTHER:
		if (next != nlip && !(in->rep && next == in->ip))
			s->errors++;
		return 0;
	case K_JMP:
		if (next != in->target)
			s->errors++;
		return 0;
	case K_CALL:
		if (next != in->target)
			s->errors++;
		if (!in->zero_disp)
			push_ret(s, nlip);
		return 0;
	case K_JCC:
		add_tnt(s, next != nlip);
		return 1;
	case K_CALL_IND:
		put_ip(s, ppt_tip, next, 0, 0);
		push_ret(s, nlip);
		return 1;
	case K_JMP_IND:
	case K_FAR:
		put_ip(s, ppt_tip, next, 0, 0);
		return 1;
	case K_RET:
		if (s->opt->retcomp && s->ret_count &&
		    s->retstack[(s->ret_top + 63) % 64] == next) {
			s->ret_top = (s->ret_top + 63) % 64;
			s->ret_count--;
			add_tnt(s, 1);
			return 1;
		}
		s->ret_count = 0;
		put_ip(s, ppt_tip, next, 0, 0);
		return 1;
	case K_SYS:
		put_ip(s, ppt_tip_pgd, 0, 1, 0);
		truth_mark(s, "disabled");
		s->enabled = 0;
		s->dec_ip = nlip;
		tick(s, 2000);
		return 0;
	default:
		s->errors++;
		return 0;
	}
}

/* Packet generation resumes after an overflow, before instruction ip. */
static void end_drop(struct synth *s, uint64_t ip)
{
	s->dropping = 0;
	s->since_ovf = 0;
	put_simple(s, ppt_ovf);
	put_ip(s, ppt_fup, ip, 0, 1);
	truth_mark(s, "overflow");
	s->ret_count = 0;
}

/* Asynchronous disable at ip: FUP(ip), TIP.PGD() (table 33-50, 11c). */
static void async_disable(struct synth *s, uint64_t ip)
{
	if (s->dropping)
		end_drop(s, ip);
	put_ip(s, ppt_fup, ip, 0, 0);
	put_ip(s, ppt_tip_pgd, 0, 1, 0);
	truth_mark(s, "disabled");
	s->enabled = 0;
	s->dec_ip = ip;
}

static void enable(struct synth *s, uint64_t ip)
{
	s->enabled = 1;
	put_ip(s, ppt_tip_pge, ip, 0, 0);
	truth_mark(s, ip == s->dec_ip ? "resumed" : "enabled");
}

static int synthesize(const struct options *opt)
{
	struct synth *s;
	char path[4096];
	FILE *log;
	const struct insn_info *prev = NULL;
	uint64_t word;
	double t0 = now();

	s = (struct synth *) calloc(1, sizeof(*s));
	s->opt = opt;
	load_image(&s->img, opt->dir);
	s->icache = (struct insn_info *) calloc((size_t) 1 << ICACHE_BITS,
						sizeof(*s->icache));
	s->bufsize = 1 << 20;
	s->buf = (uint8_t *) malloc(s->bufsize);
	if (!s->icache || !s->buf)
		die("out of memory%s", "");

	pt_config_init(&s->config);
	s->config.begin = s->buf;
	s->config.end = s->buf + s->bufsize;
	s->config.mtc_freq = (uint8_t) opt->mtc_freq;
	s->config.nom_freq = 32;
	s->config.cpuid_0x15_eax = 1;
	s->config.cpuid_0x15_ebx = 100;
	s->enc = pt_alloc_encoder(&s->config);
	if (!s->enc)
		die("cannot allocate the encoder%s", "");

	snprintf(path, sizeof(path), "%s/exec.log", opt->dir);
	log = fopen(path, "rb");
	if (!log)
		die("cannot read %s", path);
	setvbuf(log, NULL, _IOFBF, 1 << 20);
	snprintf(path, sizeof(path), "%s/%s.pt", opt->dir, opt->name);
	s->pt = fopen(path, "wb");
	snprintf(path, sizeof(path), "%s/%s.truth", opt->dir, opt->name);
	s->truth = fopen(path, "w");
	if (!s->pt || !s->truth)
		die("cannot write %s", path);
	setvbuf(s->truth, NULL, _IOFBF, 1 << 20);

	if (opt->trim_dir)
		s->pages = (uint64_t *) calloc(PAGE_SET, sizeof(uint64_t));
	s->dec_ip = 0;
	put_psb(s, 0);

	while (fread(&word, sizeof(word), 1, log) == 1) {
		const struct insn_info *in;

		if (word == LOG_ASYNC || word == LOG_END) {
			uint64_t y = 0;

			if (fread(&y, sizeof(y), 1, log) != 1)
				break;
			if (prev && s->enabled)
				retire(s, prev, y);
			prev = NULL;
			if (s->enabled && y)
				async_disable(s, y);
			if (word == LOG_END)
				break;
			continue;
		}

		/* Finish the previous instruction, now that we know where it
		 * went. */
		if (prev)
			retire(s, prev, word);
		prev = NULL;

		in = lookup(s, word);
		if (s->pages) {
			mark_page(s, word & ~(PAGE - 1));
			mark_page(s, (word + (in->len ? in->len - 1 : 0)) &
				  ~(PAGE - 1));
		}
		if (!s->enabled) {
			enable(s, word);
		} else if (s->dropping) {
			if (!s->drop_left || in->kind == K_SYS)
				end_drop(s, word);
			else
				s->drop_left--;
		}
		if (!s->dropping && s->since_psb >= opt->psb_period)
			put_psb(s, word);

		s->ninsn++;
		s->since_ovf++;
		tick(s, 1);
		if (!s->dropping)
			truth_ip(s, word);
		prev = in;

		/* Overflow: start dropping right after a flow packet. */
		if (opt->ovf_every && !s->dropping &&
		    s->since_ovf >= opt->ovf_every && in->kind != K_SYS &&
		    in->kind != K_OTHER && in->kind != K_JMP &&
		    in->kind != K_CALL) {
			/* Look ahead: the successor is the next log word. */
			uint64_t next;
			long pos = ftell(log);

			if (fread(&next, sizeof(next), 1, log) == 1 &&
			    next != LOG_ASYNC && next != LOG_END) {
				if (retire(s, in, next)) {
					flush_tnt(s);
					s->dropping = 1;
					s->drop_left = opt->ovf_len;
					s->ret_count = 0;
				}
				prev = NULL;
			}
			fseek(log, pos, SEEK_SET);
		}
	}
	if (prev && s->enabled && !s->dropping)
		s->errors++;

	flush_tnt(s);
	flush_buffer(s);
	fclose(log);
	fclose(s->pt);
	fclose(s->truth);

	snprintf(path, sizeof(path), "%s/%s.cfg", opt->dir, opt->name);
	{
		FILE *cfg = fopen(path, "w");

		if (cfg) {
			fprintf(cfg, "mtc_freq %d\nnom_freq 32\n"
				"cpuid_0x15_eax 1\ncpuid_0x15_ebx 100\n",
				opt->mtc ? opt->mtc_freq : 0);
			fclose(cfg);
		}
	}

	if (opt->trim_dir)
		write_trimmed(s, opt->trim_dir);
	if (!opt->quiet)
		printf("ptsynth: %s: %" PRIu64 " instructions, %" PRIu64
		       " packets, %" PRIu64 " bytes, %.2fs (%s encoder)\n",
		       opt->name, s->ninsn, s->packets, s->bytes, now() - t0,
#ifdef PTSYNTH_LIBIPT
		       "libipt"
#else
		       "ipt.h"
#endif
		       );
	if (s->errors)
		fprintf(stderr, "ptsynth: %" PRIu64 " instructions went "
			"where their class says they cannot\n", s->errors);
	pt_free_encoder(s->enc);
	return s->errors ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
"usage: ptsynth [options] -o DIR -- PROGRAM [ARGS...]\n"
"       ptsynth [options] -o DIR --replay\n"
"  --name NAME        write DIR/NAME.pt, .truth, .cfg (default: trace)\n"
"  --max-insn N       stop recording after N instructions\n"
"  --single-step      single-step everything (no hardware breakpoints)\n"
"  --no-retcomp       never compress returns\n"
"  --retcomp-psb      compress returns from calls made before a PSB too\n"
"                     (against the SDM: a decoder started at that PSB\n"
"                     finds its return stack empty)\n"
"  --psb-period N     PSB+ after every N bytes (default 4096)\n"
"  --tnt-max N        TNT bits per packet, 1..47 (default 47; 6: short only)\n"
"  --no-tsc           no TSC in PSB+\n"
"  --mtc F            MTC packets at crystal clock bit F, TMA in PSB+\n"
"  --cyc              CYC packets\n"
"  --ovf N[:K]        every N instructions lose K instructions' packets\n"
"  --pad N            a PAD after every N-th packet\n"
"  --trim-image DIR2  also write the executed code pages to DIR2/image*\n"
"  -q                 quiet\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct options opt;
	int i, replay = 0;
	char **prog = NULL;

	memset(&opt, 0, sizeof(opt));
	opt.name = "trace";
	opt.psb_period = 4096;
	opt.tnt_max = 47;
	opt.retcomp = 1;
	opt.tsc = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			prog = &argv[i + 1];
			break;
		} else if (!strcmp(a, "-o") && i + 1 < argc)
			opt.dir = argv[++i];
		else if (!strcmp(a, "--name") && i + 1 < argc)
			opt.name = argv[++i];
		else if (!strcmp(a, "--replay"))
			replay = 1;
		else if (!strcmp(a, "--max-insn") && i + 1 < argc)
			opt.max_insn = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--single-step"))
			opt.single_step = 1;
		else if (!strcmp(a, "--retcomp-psb"))
			opt.retcomp_psb = 1;
		else if (!strcmp(a, "--no-retcomp"))
			opt.retcomp = 0;
		else if (!strcmp(a, "--psb-period") && i + 1 < argc)
			opt.psb_period = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--tnt-max") && i + 1 < argc)
			opt.tnt_max = (unsigned) strtoul(argv[++i], NULL, 0);
		else if (!strcmp(a, "--no-tsc"))
			opt.tsc = 0;
		else if (!strcmp(a, "--mtc") && i + 1 < argc) {
			opt.mtc = 1;
			opt.mtc_freq = (int) strtol(argv[++i], NULL, 0);
		} else if (!strcmp(a, "--cyc"))
			opt.cyc = 1;
		else if (!strcmp(a, "--ovf") && i + 1 < argc) {
			char *end;

			opt.ovf_every = strtoull(argv[++i], &end, 0);
			opt.ovf_len = 1000;
			if (*end == ':')
				opt.ovf_len = strtoull(end + 1, NULL, 0);
		} else if (!strcmp(a, "--pad") && i + 1 < argc)
			opt.pad = (unsigned) strtoul(argv[++i], NULL, 0);
		else if (!strcmp(a, "--trim-image") && i + 1 < argc)
			opt.trim_dir = argv[++i];
		else if (!strcmp(a, "-q"))
			opt.quiet = 1;
		else
			usage();
	}
	if (!opt.dir || (!replay && (!prog || !*prog)) ||
	    opt.tnt_max < 1 || opt.tnt_max > 47 || opt.mtc_freq > 15)
		usage();

	ZydisDecoderInit(&zdec, ZYDIS_MACHINE_MODE_LONG_64,
			 ZYDIS_STACK_WIDTH_64);
	mkdir(opt.dir, 0777);

	if (!replay) {
		struct recorder r;
		double t0 = now();

		memset(&r, 0, sizeof(r));
		r.dir = opt.dir;
		r.max_insn = opt.max_insn;
		r.single_step = opt.single_step;
		if (record(&r, prog) < 0)
			return 3;
		if (!opt.quiet)
			printf("ptsynth: recorded %" PRIu64 " instructions of "
			       "%s in %.2fs (%" PRIu64 " steps, %" PRIu64
			       " native runs)\n", r.ninsn, prog[0],
			       now() - t0, r.steps, r.runs);
	}
	return synthesize(&opt);
}

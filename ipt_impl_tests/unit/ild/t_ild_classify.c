/* Instruction length and class (>>ild): a table of encodings in 16, 32 and
 * 64-bit mode with their size, pt_insn_class, detailed class and branch
 * displacement, the predicates, next IPs, and instructions read through an
 * image (truncation, the 15-byte limit, unmapped memory).
 *
 * The internal interface is static, so this test compiles its own private
 * copy of the implementation. */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define IPT_STATIC
#define IPT_IMPLEMENTATION
#include "ipt.h"
#include "check.h"

#include <string.h>

#define M16 ptem_16bit
#define M32 ptem_32bit
#define M64 ptem_64bit
#define BAD (-1)
#define NODISP 0x7fffffffffffffffll

struct ild_case {
	enum pt_exec_mode mode;
	const char *hex;
	/* The size, or BAD for -pte_bad_insn. */
	int size;
	enum pt_insn_class iclass;
	enum ipt__inst_class detail;
	/* The displacement of a direct branch, or NODISP if not direct. */
	long long disp;
};

static const struct ild_case cases[] = {
	/* near calls */
	{ M64, "e8 00 00 00 00", 5, ptic_call, IPT__INST_CALL_E8, 0 },
	{ M64, "e8 fb ff ff ff", 5, ptic_call, IPT__INST_CALL_E8, -5 },
	/* 66 does not shorten a near branch in 64-bit mode (Intel). */
	{ M64, "66 e8 10 00 00 00", 6, ptic_call, IPT__INST_CALL_E8, 0x10 },
	{ M32, "e8 00 01 00 00", 5, ptic_call, IPT__INST_CALL_E8, 0x100 },
	{ M32, "66 e8 10 80", 4, ptic_call, IPT__INST_CALL_E8, -0x7ff0 },
	{ M16, "e8 10 00", 3, ptic_call, IPT__INST_CALL_E8, 0x10 },
	{ M16, "66 e8 10 00 00 01", 6, ptic_call, IPT__INST_CALL_E8,
	  0x01000010 },
	{ M64, "ff d0", 2, ptic_call, IPT__INST_CALL_FFr2, NODISP },
	{ M64, "ff 15 00 00 00 00", 6, ptic_call, IPT__INST_CALL_FFr2,
	  NODISP },
	{ M64, "41 ff d3", 3, ptic_call, IPT__INST_CALL_FFr2, NODISP },
	{ M32, "ff d0", 2, ptic_call, IPT__INST_CALL_FFr2, NODISP },
	{ M16, "ff d0", 2, ptic_call, IPT__INST_CALL_FFr2, NODISP },
	/* far calls */
	{ M64, "ff 18", 2, ptic_far_call, IPT__INST_CALL_FFr3, NODISP },
	{ M64, "48 ff 18", 3, ptic_far_call, IPT__INST_CALL_FFr3, NODISP },
	{ M32, "ff 18", 2, ptic_far_call, IPT__INST_CALL_FFr3, NODISP },
	{ M32, "9a 00 10 00 00 08 00", 7, ptic_far_call, IPT__INST_CALL_9A,
	  NODISP },
	{ M32, "66 9a 00 10 08 00", 6, ptic_far_call, IPT__INST_CALL_9A,
	  NODISP },
	{ M16, "9a 00 10 00 08", 5, ptic_far_call, IPT__INST_CALL_9A,
	  NODISP },
	{ M16, "66 9a 00 10 00 00 08 00", 8, ptic_far_call,
	  IPT__INST_CALL_9A, NODISP },
	{ M64, "9a 00 10 00 00 08 00", BAD, ptic_error, IPT__INST_INVALID,
	  NODISP },
	/* near jumps */
	{ M64, "e9 10 00 00 00", 5, ptic_jump, IPT__INST_JMP_E9, 0x10 },
	{ M32, "e9 f0 ff ff ff", 5, ptic_jump, IPT__INST_JMP_E9, -0x10 },
	{ M16, "e9 f0 ff", 3, ptic_jump, IPT__INST_JMP_E9, -0x10 },
	{ M32, "66 e9 f0 ff", 4, ptic_jump, IPT__INST_JMP_E9, -0x10 },
	{ M64, "eb fe", 2, ptic_jump, IPT__INST_JMP_EB, -2 },
	{ M16, "eb 7f", 2, ptic_jump, IPT__INST_JMP_EB, 0x7f },
	{ M64, "ff e0", 2, ptic_jump, IPT__INST_JMP_FFr4, NODISP },
	{ M64, "ff 24 25 00 10 00 00", 7, ptic_jump, IPT__INST_JMP_FFr4,
	  NODISP },
	{ M32, "ff e0", 2, ptic_jump, IPT__INST_JMP_FFr4, NODISP },
	/* far jumps */
	{ M64, "ff 28", 2, ptic_far_jump, IPT__INST_JMP_FFr5, NODISP },
	{ M32, "ea 00 10 00 00 08 00", 7, ptic_far_jump, IPT__INST_JMP_EA,
	  NODISP },
	{ M16, "ea 00 10 00 08", 5, ptic_far_jump, IPT__INST_JMP_EA, NODISP },
	{ M64, "ea 00 10 00 00 08 00", BAD, ptic_error, IPT__INST_INVALID,
	  NODISP },
	/* conditional branches */
	{ M64, "74 05", 2, ptic_cond_jump, IPT__INST_JCC, 5 },
	{ M64, "7f 80", 2, ptic_cond_jump, IPT__INST_JCC, -128 },
	{ M64, "0f 84 00 01 00 00", 6, ptic_cond_jump, IPT__INST_JCC,
	  0x100 },
	{ M32, "0f 85 00 01 00 00", 6, ptic_cond_jump, IPT__INST_JCC,
	  0x100 },
	{ M32, "66 0f 85 00 01", 5, ptic_cond_jump, IPT__INST_JCC, 0x100 },
	{ M16, "0f 8f fe ff", 4, ptic_cond_jump, IPT__INST_JCC, -2 },
	{ M16, "2e 74 05", 3, ptic_cond_jump, IPT__INST_JCC, 5 },
	{ M64, "e3 10", 2, ptic_cond_jump, IPT__INST_JrCXZ, 0x10 },
	{ M64, "67 e3 10", 3, ptic_cond_jump, IPT__INST_JrCXZ, 0x10 },
	{ M32, "67 e3 f0", 3, ptic_cond_jump, IPT__INST_JrCXZ, -0x10 },
	{ M16, "e3 10", 2, ptic_cond_jump, IPT__INST_JrCXZ, 0x10 },
	{ M64, "e2 f0", 2, ptic_cond_jump, IPT__INST_LOOP, -0x10 },
	{ M64, "e1 f0", 2, ptic_cond_jump, IPT__INST_LOOPE, -0x10 },
	{ M64, "e0 f0", 2, ptic_cond_jump, IPT__INST_LOOPNE, -0x10 },
	{ M32, "67 e2 02", 3, ptic_cond_jump, IPT__INST_LOOP, 2 },
	/* returns */
	{ M64, "c3", 1, ptic_return, IPT__INST_RET_C3, NODISP },
	{ M64, "f3 c3", 2, ptic_return, IPT__INST_RET_C3, NODISP },
	{ M64, "c2 08 00", 3, ptic_return, IPT__INST_RET_C2, NODISP },
	{ M16, "c2 08 00", 3, ptic_return, IPT__INST_RET_C2, NODISP },
	{ M64, "cb", 1, ptic_far_return, IPT__INST_RET_CB, NODISP },
	{ M64, "48 cb", 2, ptic_far_return, IPT__INST_RET_CB, NODISP },
	{ M32, "ca 04 00", 3, ptic_far_return, IPT__INST_RET_CA, NODISP },
	/* interrupts */
	{ M64, "cc", 1, ptic_far_call, IPT__INST_INT3, NODISP },
	{ M64, "cd 80", 2, ptic_far_call, IPT__INST_INT, NODISP },
	{ M16, "cd 21", 2, ptic_far_call, IPT__INST_INT, NODISP },
	{ M64, "f1", 1, ptic_far_call, IPT__INST_INT1, NODISP },
	{ M32, "ce", 1, ptic_far_call, IPT__INST_INTO, NODISP },
	{ M64, "ce", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "cf", 1, ptic_far_return, IPT__INST_IRET, NODISP },
	{ M64, "48 cf", 2, ptic_far_return, IPT__INST_IRET, NODISP },
	{ M16, "cf", 1, ptic_far_return, IPT__INST_IRET, NODISP },
	{ M32, "66 cf", 2, ptic_far_return, IPT__INST_IRET, NODISP },
	/* system calls */
	{ M64, "0f 05", 2, ptic_far_call, IPT__INST_SYSCALL, NODISP },
	{ M64, "0f 07", 2, ptic_far_return, IPT__INST_SYSRET, NODISP },
	{ M64, "48 0f 07", 3, ptic_far_return, IPT__INST_SYSRET, NODISP },
	{ M32, "0f 34", 2, ptic_far_call, IPT__INST_SYSENTER, NODISP },
	{ M32, "0f 35", 2, ptic_far_return, IPT__INST_SYSEXIT, NODISP },
	{ M64, "48 0f 35", 3, ptic_far_return, IPT__INST_SYSEXIT, NODISP },
	/* control registers and virtualization */
	{ M64, "0f 22 d8", 3, ptic_other, IPT__INST_MOV_CR3, NODISP },
	{ M32, "0f 22 d8", 3, ptic_other, IPT__INST_MOV_CR3, NODISP },
	{ M64, "0f 22 c0", 3, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "0f 20 d8", 3, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "0f 01 c2", 3, ptic_far_return, IPT__INST_VMLAUNCH, NODISP },
	{ M64, "0f 01 c3", 3, ptic_far_return, IPT__INST_VMRESUME, NODISP },
	{ M32, "0f 01 c1", 3, ptic_far_call, IPT__INST_VMCALL, NODISP },
	{ M64, "0f c7 30", 3, ptic_other, IPT__INST_VMPTRLD, NODISP },
	{ M64, "0f c7 70 08", 4, ptic_other, IPT__INST_VMPTRLD, NODISP },
	{ M64, "0f 01 ca", 3, ptic_other, IPT__INST_INVALID, NODISP },
	/* ptwrite: F3 0F AE /4, but not with 66 */
	{ M64, "f3 0f ae e0", 4, ptic_ptwrite, IPT__INST_PTWRITE, NODISP },
	{ M64, "f3 48 0f ae 20", 5, ptic_ptwrite, IPT__INST_PTWRITE,
	  NODISP },
	{ M32, "f3 0f ae 20", 4, ptic_ptwrite, IPT__INST_PTWRITE, NODISP },
	{ M16, "f3 0f ae 20", 4, ptic_ptwrite, IPT__INST_PTWRITE, NODISP },
	{ M64, "0f ae 20", 3, ptic_other, IPT__INST_INVALID, NODISP },
	/* user interrupts and FRED */
	{ M64, "f3 0f 01 ec", 4, ptic_far_return, IPT__INST_UIRET, NODISP },
	{ M64, "f3 0f 01 ca", 4, ptic_far_return, IPT__INST_ERETU, NODISP },
	{ M64, "f2 0f 01 ca", 4, ptic_far_return, IPT__INST_ERETS, NODISP },
	{ M64, "f3 f2 0f 01 ca", 5, ptic_far_return, IPT__INST_ERETS,
	  NODISP },
	/* JMPABS: REX2 (W=0, M0=0) A1 and a 64-bit target */
	{ M64, "d5 00 a1 0d 10 00 00 00 00 00 00", 11, ptic_jump,
	  IPT__INST_JMPABS, 0x100d },
	{ M64, "d5 08 a1 0d 10 00 00 00 00 00 00", BAD, ptic_error,
	  IPT__INST_INVALID, NODISP },
	{ M32, "d5 00 a1 0d 10 00 00 00 00 00 00", 2, ptic_other,
	  IPT__INST_INVALID, NODISP },
	/* REX right before REX2 is #UD; a REX a legacy prefix follows is
	 * ignored */
	{ M64, "4c d5 00 a1 0d 10 00 00 00 00 00 00", BAD, ptic_error,
	  IPT__INST_INVALID, NODISP },
	{ M64, "4c 2e d5 00 a1 0d 10 00 00 00 00 00 00", 13, ptic_jump,
	  IPT__INST_JMPABS, 0x100d },
	{ M64, "4c d5 80 22 d8", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	/* MOV to CR3 with REX2 (M0=1); REX2.R3 makes it CR11 */
	{ M64, "d5 80 22 18", 4, ptic_other, IPT__INST_MOV_CR3, NODISP },
	{ M64, "d5 80 22 d8", 4, ptic_other, IPT__INST_MOV_CR3, NODISP },
	{ M64, "d5 84 22 d8", 4, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "d5 c0 22 d8", 4, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "d5 80 22", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "d5 80 20 d8", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	/* other instructions */
	{ M64, "90", 1, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "f4", 1, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "48 8b 03", 3, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "48 b8 01 02 03 04 05 06 07 08", 10, ptic_other,
	  IPT__INST_INVALID, NODISP },
	{ M64, "0f 0b", 2, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "c5 f8 77", 3, ptic_other, IPT__INST_INVALID, NODISP },
	{ M32, "c4 00", 2, ptic_other, IPT__INST_INVALID, NODISP },
	{ M64, "62 f1 7c 48 10 00", 6, ptic_other, IPT__INST_INVALID,
	  NODISP },
	{ M64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", 15, ptic_other,
	  IPT__INST_INVALID, NODISP },
	/* invalid bytes and the 15-byte limit */
	{ M64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 66", BAD, ptic_error,
	  IPT__INST_INVALID, NODISP },
	{ M64, "0f 04", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "d6", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "ff d8", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "e8 00 00", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "f3 0f 01", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	{ M64, "d5 00 a1 00", BAD, ptic_error, IPT__INST_INVALID, NODISP },
	/* an unknown mode decodes as 16-bit code */
	{ ptem_unknown, "90", 1, ptic_other, IPT__INST_INVALID, NODISP },
	{ ptem_unknown, "66 e8 00 00 00 00", 6, ptic_call, IPT__INST_CALL_E8,
	  0 },
	{ ptem_unknown, "e8 00 00", 3, ptic_call, IPT__INST_CALL_E8, 0 },
	/* ... but with no displacement or SIB byte after a ModRM byte, as
	 * libipt decodes it */
	{ ptem_unknown, "02 90 90 90", 2, ptic_other, IPT__INST_INVALID,
	  NODISP },
	{ ptem_unknown, "02 46 90", 2, ptic_other, IPT__INST_INVALID, NODISP },
	{ ptem_unknown, "67 8b 04 24", 3, ptic_other, IPT__INST_INVALID,
	  NODISP },
	{ ptem_unknown, "81 80 11 22 33 44", 4, ptic_other,
	  IPT__INST_INVALID, NODISP },
	{ ptem_16bit, "02 90 90 90", 4, ptic_other, IPT__INST_INVALID,
	  NODISP },
	/* a memory offset (no ModRM) keeps its 16-bit address */
	{ ptem_unknown, "a1 10 10", 3, ptic_other, IPT__INST_INVALID, NODISP },
};

static int parse_hex(const char *hex, uint8_t *out, int max)
{
	int n = 0;

	while (*hex) {
		unsigned int v;

		if (*hex == ' ') {
			++hex;
			continue;
		}
		if (n == max || sscanf(hex, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t) v;
		hex += 2;
	}
	return n;
}

static void test_table(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
		const struct ild_case *c = &cases[i];
		struct ipt__insn_ext iext;
		struct pt_insn insn;
		int n, status;

		memset(&insn, 0, sizeof(insn));
		memset(&iext, 0xcc, sizeof(iext));
		n = parse_hex(c->hex, insn.raw, (int) sizeof(insn.raw));
		if (!CHECK(n > 0))
			continue;
		insn.mode = c->mode;
		insn.size = (uint8_t) n;
		status = ipt__ild_decode(&insn, &iext);
		if (c->size == BAD) {
			if (status != -pte_bad_insn)
				printf("case %zu: %s\n", i, c->hex);
			CHECK_EQ(status, -pte_bad_insn);
			continue;
		}
		if (status != 0 || insn.size != c->size ||
		    insn.iclass != c->iclass || iext.iclass != c->detail)
			printf("case %zu: %s (mode %d)\n", i, c->hex, c->mode);
		CHECK_EQ(status, 0);
		CHECK_EQ(insn.size, c->size);
		CHECK_EQ(insn.iclass, c->iclass);
		CHECK_EQ(iext.iclass, c->detail);
		if (c->disp == NODISP) {
			CHECK_EQ(iext.variant.branch.is_direct, 0);
		} else {
			CHECK_EQ(iext.variant.branch.is_direct, 1);
			CHECK_EQ(iext.variant.branch.displacement, c->disp);
		}
	}
}

static int classify(enum pt_exec_mode mode, const char *hex,
		    struct pt_insn *insn, struct ipt__insn_ext *iext)
{
	int n;

	memset(insn, 0, sizeof(*insn));
	n = parse_hex(hex, insn->raw, (int) sizeof(insn->raw));
	insn->mode = mode;
	insn->size = (uint8_t) n;
	return ipt__ild_decode(insn, iext);
}

static void test_predicates(void)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;

	CHECK_EQ(classify(M64, "0f 22 d8", &insn, &iext), 0);
	CHECK(ipt__insn_changes_cr3(&insn, &iext));
	CHECK(ipt__insn_binds_to_pip(&insn, &iext));
	CHECK(!ipt__insn_binds_to_vmcs(&insn, &iext));
	CHECK(!ipt__insn_is_branch(&insn, &iext));
	CHECK(!ipt__insn_changes_cpl(&insn, &iext));

	CHECK_EQ(classify(M64, "0f 01 c2", &insn, &iext), 0);
	CHECK(ipt__insn_is_vmentry(&insn, &iext));
	CHECK(ipt__insn_binds_to_pip(&insn, &iext));
	CHECK(ipt__insn_binds_to_vmcs(&insn, &iext));
	CHECK(ipt__insn_is_far_branch(&insn, &iext));
	CHECK(!ipt__insn_is_iret(&insn, &iext));

	CHECK_EQ(classify(M64, "0f c7 30", &insn, &iext), 0);
	CHECK(ipt__insn_binds_to_vmcs(&insn, &iext));
	CHECK(!ipt__insn_binds_to_pip(&insn, &iext));
	CHECK(!ipt__insn_is_branch(&insn, &iext));

	CHECK_EQ(classify(M64, "0f 01 c1", &insn, &iext), 0);
	CHECK(!ipt__insn_is_vmentry(&insn, &iext));
	CHECK(ipt__insn_binds_to_pip(&insn, &iext));
	CHECK(ipt__insn_is_far_branch(&insn, &iext));

	CHECK_EQ(classify(M64, "cd 80", &insn, &iext), 0);
	CHECK(ipt__insn_is_swint(&insn, &iext));
	CHECK(ipt__insn_changes_cpl(&insn, &iext));
	CHECK(!ipt__insn_is_syscall(&insn, &iext));

	CHECK_EQ(classify(M64, "0f 05", &insn, &iext), 0);
	CHECK(ipt__insn_is_syscall(&insn, &iext));
	CHECK(ipt__insn_changes_cpl(&insn, &iext));
	CHECK(!ipt__insn_is_swint(&insn, &iext));

	CHECK_EQ(classify(M32, "0f 34", &insn, &iext), 0);
	CHECK(ipt__insn_is_syscall(&insn, &iext));

	CHECK_EQ(classify(M64, "0f 07", &insn, &iext), 0);
	CHECK(ipt__insn_is_iret(&insn, &iext));
	CHECK(ipt__insn_changes_cpl(&insn, &iext));

	CHECK_EQ(classify(M64, "cf", &insn, &iext), 0);
	CHECK(ipt__insn_is_iret(&insn, &iext));

	CHECK_EQ(classify(M64, "f3 0f 01 ca", &insn, &iext), 0);
	CHECK(ipt__insn_is_iret(&insn, &iext));
	CHECK(!ipt__insn_changes_cpl(&insn, &iext));

	CHECK_EQ(classify(M64, "f3 0f 01 ec", &insn, &iext), 0);
	CHECK(ipt__insn_is_uiret(&insn, &iext));
	CHECK(!ipt__insn_is_iret(&insn, &iext));

	CHECK_EQ(classify(M64, "f3 0f ae e0", &insn, &iext), 0);
	CHECK(ipt__insn_is_ptwrite(&insn, &iext));
	CHECK(!ipt__insn_is_branch(&insn, &iext));

	CHECK_EQ(classify(M64, "74 00", &insn, &iext), 0);
	CHECK(ipt__insn_is_branch(&insn, &iext));
	CHECK(!ipt__insn_is_far_branch(&insn, &iext));

	insn.iclass = ptic_indirect;
	CHECK(ipt__insn_is_branch(&insn, &iext));

	CHECK(!ipt__insn_is_branch(NULL, &iext));
	CHECK(!ipt__insn_changes_cpl(&insn, NULL));
	CHECK(!ipt__insn_binds_to_pip(&insn, NULL));
}

static void test_next_ip(void)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	uint64_t ip;

	CHECK_EQ(classify(M64, "e8 10 00 00 00", &insn, &iext), 0);
	insn.ip = 0x1000;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x1015);
	CHECK_EQ(ipt__insn_next_ip(NULL, &insn, &iext), 0);

	CHECK_EQ(classify(M64, "eb fe", &insn, &iext), 0);
	insn.ip = 0x1000;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x1000);

	/* 64-bit addresses don't wrap at 4 GiB. */
	CHECK_EQ(classify(M64, "e9 10 00 00 00", &insn, &iext), 0);
	insn.ip = 0xfffffff0ull;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x100000005ull);

	CHECK_EQ(classify(M64, "e9 00 00 00 80", &insn, &iext), 0);
	insn.ip = 0xffffffff81000000ull;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0xffffffff01000005ull);

	/* Outside 64-bit mode, linear addresses wrap at 4 GiB. */
	CHECK_EQ(classify(M32, "e9 20 00 00 00", &insn, &iext), 0);
	insn.ip = 0xfffffff0ull;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x15);

	CHECK_EQ(classify(M32, "90", &insn, &iext), 0);
	insn.ip = 0xffffffffull;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0);

	/* A 16-bit operand size shortens the displacement... */
	CHECK_EQ(classify(M32, "66 e9 f0 ff", &insn, &iext), 0);
	insn.ip = 0x1000;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0xff4);

	/* ...and in 16-bit mode an IP is linear (CS base + IP): it is not
	 * wrapped at 64 KiB. */
	CHECK_EQ(classify(M16, "e9 20 00", &insn, &iext), 0);
	insn.ip = 0x1fff0;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x20013);

	CHECK_EQ(classify(M16, "e8 fd ff", &insn, &iext), 0);
	insn.ip = 0x7c00;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x7c00);

	/* Trace decides for these. */
	CHECK_EQ(classify(M64, "74 05", &insn, &iext), 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_query);
	CHECK_EQ(classify(M64, "c3", &insn, &iext), 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_query);
	CHECK_EQ(classify(M64, "ff d0", &insn, &iext), 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_query);
	CHECK_EQ(classify(M64, "ff e0", &insn, &iext), 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_query);
	CHECK_EQ(classify(M64, "0f 05", &insn, &iext), 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_query);
	CHECK_EQ(classify(M64, "d5 00 a1 0d 10 00 00 00 00 00 00", &insn,
			  &iext), 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_query);

	CHECK_EQ(classify(M64, "f3 0f ae e0", &insn, &iext), 0);
	insn.ip = 0x2000;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x2004);

	insn.iclass = ptic_error;
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), -pte_bad_insn);
	CHECK_EQ(ipt__insn_next_ip(&ip, NULL, &iext), -pte_internal);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, NULL), -pte_internal);
}

/* Memory for the image tests: two mappings [0x1000, 0x1000 + len1) and
 * [0x1000 + len1, 0x1100) that the callback serves separately, as a
 * process' adjacent mappings. */
struct mem {
	uint8_t bytes[0x100];
	uint64_t split;
	int calls;
};

static int read_mem(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *context)
{
	struct mem *mem = (struct mem *) context;
	uint64_t end;

	(void) asid;
	mem->calls += 1;
	if (ip < 0x1000 || 0x1100 <= ip)
		return -pte_nomap;
	end = ip < mem->split ? mem->split : 0x1100;
	if (end - ip < size)
		size = (size_t) (end - ip);
	memcpy(buffer, &mem->bytes[ip - 0x1000], size);
	return (int) size;
}

static void test_decode_image(uint64_t cache_limit)
{
	struct ipt__insn_ext iext;
	struct pt_insn insn;
	struct pt_asid asid;
	struct pt_image *image;
	struct mem mem;
	uint64_t ip;
	int i;

	/* All of memory is written before the first read: the cache keeps
	 * what it read until told otherwise. */
	memset(&mem, 0x90, sizeof(mem));
	memcpy(&mem.bytes[0x10], "\xe8\x10\x00\x00\x00", 5);
	memset(&mem.bytes[0x40], 0x66, 20);
	memcpy(&mem.bytes[0x90], "\xeb\xee", 2);
	memcpy(&mem.bytes[0xfd], "\xe8\x10\x00", 3);
	mem.split = 0x1012;
	mem.calls = 0;
	image = pt_image_alloc(NULL);
	CHECK(image != NULL);
	CHECK_EQ(ipt_image_set_cache_limit(image, cache_limit), 0);
	CHECK_EQ(pt_image_set_callback(image, read_mem, &mem), 0);
	pt_asid_init(&asid);

	/* A call whose bytes span two mappings: the instruction is
	 * truncated, its isid is the first byte's (zero: the callback). */
	mem.split = 0x1012;
	memset(&insn, 0, sizeof(insn));
	insn.mode = ptem_64bit;
	insn.ip = 0x1010;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), 0);
	CHECK_EQ(insn.size, 5);
	CHECK_EQ(insn.truncated, 1);
	CHECK_EQ(insn.isid, 0);
	CHECK_EQ(insn.iclass, ptic_call);
	CHECK(memcmp(insn.raw, "\xe8\x10\x00\x00\x00", 5) == 0);
	CHECK_EQ(ipt__insn_next_ip(&ip, &insn, &iext), 0);
	CHECK_EQ(ip, 0x1025);

	/* Wholly within one mapping: not truncated. */
	insn.ip = 0x1020;
	insn.truncated = 1;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), 0);
	CHECK_EQ(insn.size, 1);
	CHECK_EQ(insn.truncated, 0);

	/* An instruction running off the end of mapped memory. */
	insn.ip = 0x10fd;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), -pte_bad_insn);

	/* Unmapped memory. */
	insn.ip = 0x3000;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), -pte_nomap);

	/* More than 15 bytes of prefixes. */
	insn.ip = 0x1040;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), -pte_bad_insn);
	insn.ip = 0x1040 + 20 - 14;
	CHECK_EQ(ipt__insn_decode(&insn, &iext, image, &asid), 0);
	CHECK_EQ(insn.size, 15);

	/* A straight run of nops, then a jump back to its start. */
	CHECK_EQ(ipt__insn_range_is_contiguous(0x1080, 0x1090, ptem_64bit,
					       image, &asid, 0x10), 1);
	CHECK_EQ(ipt__insn_range_is_contiguous(0x1080, 0x1090, ptem_64bit,
					       image, &asid, 0xf), 0);
	CHECK_EQ(ipt__insn_range_is_contiguous(0x1088, 0x1081, ptem_64bit,
					       image, &asid, 0x20), 1);
	CHECK_EQ(ipt__insn_range_is_contiguous(0x10fd, 0x1100, ptem_64bit,
					       image, &asid, 0x20),
		 -pte_bad_insn);

	/* Decoding a loop many times reads the memory once with the cache. */
	mem.calls = 0;
	for (i = 0; i < 100; ++i)
		(void) ipt__insn_range_is_contiguous(0x1080, 0x1090,
						     ptem_64bit, image, &asid,
						     0x10);
	if (cache_limit)
		CHECK(mem.calls <= 2);
	else
		CHECK(mem.calls >= 1600);

	pt_image_free(image);
}

int main(void)
{
	test_table();
	test_predicates();
	test_next_ip();
	test_decode_image(0);
	test_decode_image(1 << 20);
	return check_done();
}

/* t_rerun.c - examples/ptxed --threads where a join does not hold.
 *
 * A call, a PSB, conditional branches, then the call's return,
 * compressed.  The SDM has a
 * return after a PSB never compressed against a call before it, so this
 * trace breaks the rule that makes ipt.h's joins exact: the decoder that
 * starts at the second PSB finds its return stack empty where the one
 * from the first PSB pops the call.  ptxed --threads joins the first
 * piece to the second (their return stacks differ), sees the second find
 * its stack empty, and decodes the first piece once more to the end: the
 * output must be one decoder's, and --ipt:stitch must tell of the
 * second decode.  With the instruction and the block decoder, the
 * return early (nothing of the second piece stands) and late (the second
 * piece's first instructions stand); and the statistics alone, with
 * code read through the callback.  Blocks counted in file sections end
 * where the decoder's past says, so there ptxed --threads decodes on one
 * thread: the same output, no pieces.
 *
 * Run from the top of the tree, after `make`; $PTXED names another build
 * of examples/ptxed.c.
 */
#include "ipt.h"
#include "check.h"
#include "files.h"
#include "blk_util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIR "build/seg/t_rerun.d"

/* 0x1000: call 0x1010; 0x1005: jmp rax
 * 0x1010: jz +0 (jccs times); nop (@nops times); ret
 * ptxed looks for the next piece every few steps: the branches give it
 * steps enough to find it. */
enum { base = 0x1000, callee = 0x1010, jccs = 40 };

/* Run @cmd; its stdout in @out (up to @size - 1 bytes, terminated). */
static int run(const char *cmd, char *out, size_t size)
{
	FILE *pipe = popen(cmd, "r");
	size_t n;

	if (!pipe)
		return -1;
	n = fread(out, 1, size - 1, pipe);
	out[n] = 0;
	return pclose(pipe);
}

static void check_case(const char *ptxed, unsigned int nops, int psbs,
		       const char *decoder, int pieces)
{
	static char one[16384], two[16384], err[8192];
	uint8_t code[0x100];
	char cmd[1024];
	struct tb t;
	unsigned int i;
	int k;

	memset(code, 0x90, sizeof(code));
	code[0] = 0xe8; /* call rel32 */
	code[1] = callee - (base + 5);
	code[2] = code[3] = code[4] = 0;
	code[5] = 0xff; /* jmp rax */
	code[6] = 0xe0;
	for (k = 0; k < jccs; ++k) {
		code[callee - base + 2 * k] = 0x74; /* jz rel8 */
		code[callee - base + 2 * k + 1] = 0;
	}
	code[callee - base + 2 * jccs + nops] = 0xc3;

	tb_init(&t);
	tb_start64(&t, base);
	/* The PSB comes after the call; more of them make more pieces. */
	for (k = 0; k < psbs; ++k)
		tb_start64(&t, callee);
	/* The branches, not taken: here the two decoders meet. */
	for (k = 0; k < jccs; ++k)
		tb_tnt(&t, 0, 1);
	tb_tnt(&t, 1, 1);
	tb_ip(&t, ppt_tip_pgd, pt_ipc_suppressed, 0);
	tb_done(&t);
	CHECK(!t.errors);

	CHECK(write_file(DIR "/code.bin", code, sizeof(code)));
	CHECK(write_file(DIR "/trace.pt", t.buf,
			 (size_t) (t.config.end - t.config.begin)));

	snprintf(cmd, sizeof(cmd), "%s %s --raw " DIR "/code.bin:0x%x "
		 "--pt " DIR "/trace.pt", ptxed, decoder, base);
	CHECK(run(cmd, one, sizeof(one)) == 0);
	/* One decoder returns from the call. */
	CHECK(strstr(one, "[disabled]") != NULL || strstr(one, "insn: "));
	CHECK(strstr(one, "error") == NULL);
	for (i = 2; i <= 8; i *= 2) {
		snprintf(cmd, sizeof(cmd), "%s %s --threads %u --ipt:stitch "
			 "--raw " DIR "/code.bin:0x%x --pt " DIR "/trace.pt "
			 "2>" DIR "/err", ptxed, decoder, i, base);
		CHECK(run(cmd, two, sizeof(two)) == 0);
		CHECK(!strcmp(one, two));
		snprintf(cmd, sizeof(cmd), "cat " DIR "/err");
		CHECK(run(cmd, err, sizeof(err)) == 0);
		if (pieces) {
			CHECK(strstr(err, "join 2 to piece") != NULL);
			CHECK(strstr(err, "piece 0 again") != NULL);
		} else {
			CHECK(strstr(err, "piece") == NULL);
		}
		if (strcmp(one, two) || !strstr(err, "piece 0 again") != !pieces)
			printf("%s, %u nops, %d psbs, %u threads:\n%s\n%s\n",
			       decoder, nops, psbs, i, two, err);
	}
}

int main(void)
{
	const char *ptxed = getenv("PTXED");
	unsigned int nops;
	int psbs;

	if (!ptxed)
		ptxed = "examples/ptxed";
	mkdir("build", 0755);
	mkdir("build/seg", 0755);
	mkdir(DIR, 0755);
	for (nops = 0; nops < 8; nops += 7)
		for (psbs = 1; psbs <= 3; psbs += 2) {
			check_case(ptxed, nops, psbs, "--insn-decoder", 1);
			check_case(ptxed, nops, psbs, "--block-decoder", 1);
			check_case(ptxed, nops, psbs,
				   "--block-decoder --ipt:callback --stat "
				   "--quiet", 1);
			check_case(ptxed, nops, psbs,
				   "--block-decoder --stat --quiet", 0);
		}
	return check_done();
}

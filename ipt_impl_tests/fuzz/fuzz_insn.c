/* Instruction decoder harness: the block decoder harness, one instruction
 * at a time (see fuzz_blk.c). */
#define FUZZ_INSN
#include "fuzz_blk.c"

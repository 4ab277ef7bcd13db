# blk.mk - block and instruction decoder tests beyond the plain t_*.c rule.

# The block and instruction tests share a trace builder and drivers.
$(patsubst ipt_impl_tests/%.c,$(B)/%,$(wildcard ipt_impl_tests/t_blk_*.c ipt_impl_tests/t_insn_*.c)): ipt_impl_tests/t_blk_util.h

# Both decoders agree, block by block and event by event, on every ptxed
# case of the libipt conformance suite.
$(B)/blk_agree: ipt_impl_tests/blk_agree.c $(B)/ipt_impl.o | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) -lm

TESTS += "$(B)/blk_agree $(CONFORMANCE)/libipt"
TEST_DEPS += $(B)/blk_agree

# blk.mk - block and instruction decoder tests beyond the plain t_*.c rule.

# The block and instruction tests share a trace builder and drivers.
$(patsubst ipt_impl_tests/%.c,$(B)/%,$(wildcard ipt_impl_tests/t_blk_*.c ipt_impl_tests/t_insn_*.c)): ipt_impl_tests/t_blk_util.h

# Both decoders agree, block by block and event by event, on every ptxed
# case of the libipt conformance suite.
$(B)/blk_agree: ipt_impl_tests/blk_agree.c $(B)/ipt_impl.o | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) -lm

# A test is a command without arguments: a wrapper carries the suite's
# place, rewritten each run so that CONFORMANCE=... on the command line
# takes effect.
$(B)/blk_agree.sh: $(B)/blk_agree ipt-blk-force
	@printf '#!/bin/sh\nexec %s %s\n' "$(B)/blk_agree" "$(CONFORMANCE)/libipt" > $@
	@chmod +x $@

TESTS += $(B)/blk_agree.sh
TEST_DEPS += $(B)/blk_agree.sh

.PHONY: ipt-blk-force
ipt-blk-force:

# Hostile input under AddressSanitizer and UBSan: random code and packet
# sequences with flipped bits through both decoders.
BLK_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all

$(B)/ipt_impl_san.o: ipt_impl_tests/ipt_impl.c $(HDR) | $(B)
	$(CC) -O1 -g $(WARN) $(BLK_SAN) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/blk_fuzz: ipt_impl_tests/blk_fuzz.c $(B)/ipt_impl_san.o | $(B)
	$(CC) -O1 -g $(WARN) $(BLK_SAN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/ipt_impl_san.o $(ZYDIS) -lm

TESTS += $(B)/blk_fuzz
TEST_DEPS += $(B)/blk_fuzz

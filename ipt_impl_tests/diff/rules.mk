# pkt.mk - packet-layer tests that need more than a t_*.c program:
# compile checks (C99, C11, C++, IPT_STATIC in two TUs) and the
# differential test against Debian's libipt 2.0.5.

# The packet tests share sample packets.
$(B)/t_pkt_roundtrip $(B)/asan/t_pkt_roundtrip: ipt_impl_tests/pkt_samples.h

# Compile checks: C99, C11, C++, two IPT_STATIC translation units.
TESTS += ipt_impl_tests/pkt_compile.sh

# Differential test against libipt 2.0.5: one harness, two builds.
$(B)/pkt_diff_ipt: ipt_impl_tests/pkt_diff.c $(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm

$(B)/pkt_diff_libipt: ipt_impl_tests/pkt_diff.c | $(B)
	$(CC) $(OPT) $(WARN) $(CFLAGS) -DUSE_LIBIPT -o $@ $< -lipt

TESTS += ipt_impl_tests/pkt_diff.sh
TEST_DEPS += $(B)/pkt_diff_ipt $(B)/pkt_diff_libipt

# Hostile input under AddressSanitizer and UBSan.
$(B)/pkt_fuzz: ipt_impl_tests/pkt_fuzz.c $(HDR) | $(B)
	$(CC) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
		$(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm

TESTS += $(B)/pkt_fuzz
TEST_DEPS += $(B)/pkt_fuzz

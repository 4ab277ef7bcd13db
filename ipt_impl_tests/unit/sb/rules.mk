# unit/sb: the sideband layers, >>pev and >>sb.  Each t_*.c is a test
# binary linked with the implementation object.

SB_UNIT_SRCS := $(wildcard ipt_impl_tests/unit/sb/t_*.c)
SB_UNIT_BINS := $(patsubst ipt_impl_tests/unit/sb/%.c,$(B)/unit/sb/%,$(SB_UNIT_SRCS))

$(B)/unit/sb:
	mkdir -p $@

$(B)/unit/sb/t_%: ipt_impl_tests/unit/sb/t_%.c $(B)/ipt_impl.o ipt_impl_tests/check.h $(HDR) | $(B)/unit/sb
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -Iipt_impl_tests $(CFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) -lm

TESTS += $(SB_UNIT_BINS)
TEST_DEPS += $(SB_UNIT_BINS)

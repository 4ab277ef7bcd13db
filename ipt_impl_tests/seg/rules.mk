# seg/rules.mk - decoding one trace in pieces: examples/ptxed --threads
# against one thread on every conformance case (threads-check), the same
# under ThreadSanitizer (tsan-check), and the segment index and decoder
# joins through the API (seg_split); a trace where ptxed must decode a
# piece again (t_rerun).  Real programs' traces with a short
# PSB period are checked in synth/run-synth.

SEG_B := $(B)/seg
SEG_T := ipt_impl_tests/seg
SEG_IMPL := $(B)/ipt_impl.o

# threads-check finds the conformance suites here.
export CONFORMANCE

$(SEG_B)/ptxed_tsan: examples/ptxed.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) -O1 -g -fsanitize=thread $(WARN) $(CPPFLAGS) -o $@ $< \
		$(ZYDIS) -lm -pthread

$(SEG_B)/seg_split: $(SEG_T)/seg_split.c $(SEG_T)/seg_split.h $(SEG_IMPL) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(SEG_IMPL) \
		$(ZYDIS) -lm

$(SEG_B)/t_rerun: $(SEG_T)/t_rerun.c $(SEG_IMPL) $(LIB_HDRS) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(SEG_IMPL) \
		$(ZYDIS) -lm

TESTS += $(SEG_T)/threads-check
TESTS += $(SEG_T)/tsan-check
TESTS += $(SEG_B)/seg_split
TESTS += $(SEG_B)/t_rerun
TEST_DEPS += examples/ptxed examples/ptdump $(SEG_B)/ptxed_tsan \
	$(SEG_B)/seg_split $(SEG_B)/t_rerun

# synth/rules.mk - Intel PT traces of real programs (ptsynth.c),
# decoded by ipt.h and by the system's libipt, compared with the ground
# truth (run-synth); and `make demo`.
#
#   make test SYNTH_SKIP_PTRACE=1   where ptrace is not permitted: only the
#                                   shipped sample trace is decoded
#   make demo                       trace a small program and show it

SYNTH_B := $(B)/synth
SYNTH_SKIP_PTRACE ?=
export SYNTH_SKIP_PTRACE

$(SYNTH_B):
	mkdir -p $(SYNTH_B)

# ptsynth writes its packets with ipt.h's encoder.
$(SYNTH_B)/ptsynth: $(T)/synth/ptsynth.c $(IMPL) $(HDR) | $(SYNTH_B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) \
		$(ZYDIS) -lm

# The harness against libipt: the reference.
$(SYNTH_B)/ptxd-libipt: $(T)/synth/ptxd.c | $(SYNTH_B)
	$(CC) $(OPT) $(WARN) $(CFLAGS) -DUSE_LIBIPT -o $@ $< $(ZYDIS) -lipt

# The same harness against ipt.h.
$(SYNTH_B)/ptxd-ipt: $(T)/synth/ptxd.c $(IMPL) $(HDR) | $(SYNTH_B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) \
		$(ZYDIS) -lm

# The program `make demo` traces.
$(SYNTH_B)/demo: $(T)/synth/demo.c | $(SYNTH_B)
	$(CC) -O2 -static -o $@ $< 2>/dev/null || $(CC) -O2 -o $@ $<

# A program that takes signals: asynchronous disables and enables.
$(SYNTH_B)/signals: $(T)/synth/signals.c | $(SYNTH_B)
	$(CC) -O2 -o $@ $<

SYNTH_TOOLS := $(SYNTH_B)/ptsynth $(SYNTH_B)/ptxd-libipt $(SYNTH_B)/ptxd-ipt \
	$(SYNTH_B)/signals

TESTS += $(T)/synth/run-synth
TEST_DEPS += $(SYNTH_TOOLS) $(B)/unit/cov/t_cov_oracle

demo: all $(SYNTH_TOOLS) $(SYNTH_B)/demo
	@$(T)/synth/demo


# bench/rules.mk - `make bench`: ipt.h against the system's libipt 2.0.5, same
# harness, same traces, same run (run).  Not part of
# `make test`: it records real programs (minutes, cached in build/bench/)
# and takes minutes to measure.
#
#   make bench                       everything, 5 repetitions
#   make bench BENCH_REPS=3          fewer repetitions
#   make bench BENCH_ONLY=python     only traces whose name contains this
#   make bench CONFORMANCE=DIR       another corpus (its real/ suite)

BENCH_B := $(B)/bench
BENCH_REPS ?= 5
BENCH_ONLY ?=
BENCH_MIN_TIME ?= 0.3

$(BENCH_B):
	mkdir -p $(BENCH_B)

# The harness against ipt.h, with the implementation compiled in.
$(BENCH_B)/bench-ipt: $(T)/bench/bench.c $(IMPL) $(HDR) | $(BENCH_B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) \
		$(ZYDIS) -lm

# The same harness against libipt.
$(BENCH_B)/bench-libipt: $(T)/bench/bench.c | $(BENCH_B)
	$(CC) $(OPT) $(WARN) $(CFLAGS) -DUSE_LIBIPT -o $@ $< $(ZYDIS) -lipt

bench: $(BENCH_B)/bench-ipt $(BENCH_B)/bench-libipt $(B)/synth/ptsynth
	@BENCH_REPS=$(BENCH_REPS) BENCH_ONLY=$(BENCH_ONLY) \
		BENCH_MIN_TIME=$(BENCH_MIN_TIME) \
		$(T)/bench/run $(CONFORMANCE)

# bench/rules.mk - `make bench`: ipt.h against the system's libipt 2.0.5, same
# harness, same traces, same run (run).  Not part of
# `make test`: it records real programs (minutes, cached in build/bench/)
# and takes minutes to measure.
#
#   make bench                       everything, 5 repetitions
#   make bench BENCH_REPS=3          fewer repetitions
#   make bench BENCH_ONLY=python     only traces whose name contains this
#   make bench CONFORMANCE=DIR       another corpus (its real/ suite)
#   make bench-threads               only the threads table (median of 3)

BENCH_B := $(B)/bench
BENCH_REPS ?= 5
BENCH_ONLY ?=
BENCH_MIN_TIME ?= 0.3

$(BENCH_B):
	mkdir -p $(BENCH_B)

# The harness against ipt.h, with the implementation compiled in.
$(BENCH_B)/bench-ipt: $(T)/bench/bench.c $(IMPL) $(HDR) \
		| $(BENCH_B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) \
		$(ZYDIS) -lm -pthread

# The same harness against libipt.
$(BENCH_B)/bench-libipt: $(T)/bench/bench.c | $(BENCH_B)
	$(CC) $(OPT) $(WARN) $(CFLAGS) -DUSE_LIBIPT -o $@ $< $(ZYDIS) -lipt

# Only ptxed --threads and the API on threads against one thread, on the
# python and ls traces (bench/threads), BENCH_REPS times (3 here).
bench-threads: examples/ptxed $(BENCH_B)/bench-ipt $(B)/synth/ptsynth
	@BENCH_REPS=$(if $(filter command line,$(origin BENCH_REPS)),$(BENCH_REPS),3) \
		BENCH_THREADS_ONLY=1 $(T)/bench/run $(CONFORMANCE)

bench: $(BENCH_B)/bench-ipt $(BENCH_B)/bench-libipt $(B)/synth/ptsynth
	@BENCH_REPS=$(BENCH_REPS) BENCH_ONLY=$(BENCH_ONLY) \
		BENCH_MIN_TIME=$(BENCH_MIN_TIME) \
		$(T)/bench/run $(CONFORMANCE)

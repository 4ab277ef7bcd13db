# fuzz/rules.mk - hostile input.  Each fuzz_<name>.c is a libFuzzer
# harness (README.md here); random_*.c feed fixed pseudo-random and
# mutated inputs to a layer under the sanitizers, without libFuzzer.
#
#   make fuzz FUZZ_SECONDS=N   run each harness under libFuzzer for N s
#   make fuzz-replay           replay seeds and regression inputs (ASan+UBSan)
#   make fuzz-seeds            make the seed corpora in build/fuzz/seeds/
#
# `make test` gets from here: the random tests; per harness a replay of
# the seeds and regress/ inputs, a replay of regress/ with the strict
# build, and a short libFuzzer run (FUZZ_SMOKE seconds).

FZ := $(T)/fuzz
FB := $(B)/fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE ?= 10
FUZZ_OPTIONS ?=
# The implementation is built for fuzzing with a small instruction cache,
# a small image page cache and a small TNT memo: every path through them
# (miss, hit, eviction) is reached after a few instructions, and setting
# them up costs little per input.  The run cache keeps its default limit; it starts
# small.  Code that loops without trace is given up after 2048
# instructions (the coverage decoder, and the harnesses' own decode loops,
# fuzz_blk.c).  -O2: the decoders run far more often than they are
# compiled.  The harnesses and their replays are built with the same
# definitions, so that an input does the same in each.
FUZZ_OPT := -O2 -g
FUZZ_DEFS := -DIPT_BLK_ICACHE_BITS=6 -DIPT_IMAGE_CACHE_LIMIT=16384 \
	-DIPT_COV_IDLE_MAX=2048 -DIPT_COV_MEMO_LIMIT=65536
FUZZ_HARNESSES := $(patsubst $(FZ)/fuzz_%.c,%,$(wildcard $(FZ)/fuzz_*.c))
FUZZ_SRCS := $(FZ)/fuzz.h $(FZ)/fuzz_blk.c $(HDR) $(T)/seg/seg_split.h \
	$(T)/unit/cov/cov_oracle.h

# libFuzzer builds (clang), with their own implementation object.
$(FB)/ipt_impl.o: $(T)/lib/ipt_impl.c $(HDR)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_OPT) $(WARN) $(CPPFLAGS) $(FUZZ_DEFS) \
		-fsanitize=fuzzer-no-link $(SAN) -c -o $@ $<

$(FB)/fuzz_%: $(FZ)/fuzz_%.c $(FUZZ_SRCS) $(FB)/ipt_impl.o
	$(CLANG) $(FUZZ_OPT) $(WARN) $(CPPFLAGS) $(FUZZ_DEFS) \
		-fsanitize=fuzzer $(SAN) -o $@ $< $(FB)/ipt_impl.o $(ZYDIS)

# Standalone replays (driver.c), and the strict build: no steering around
# open bugs (KNOWN).  Their implementation is sanitized and built as for
# fuzzing.
FUZZ_ASAN_IMPL := $(FB)/asan/ipt_impl.o

$(FUZZ_ASAN_IMPL): $(T)/lib/ipt_impl.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(FUZZ_DEFS) $(SAN) -c -o $@ $<

$(FB)/replay_%: $(FZ)/fuzz_%.c $(FZ)/driver.c $(FUZZ_SRCS) $(FUZZ_ASAN_IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(FUZZ_DEFS) $(SAN) -o $@ $< \
		$(FZ)/driver.c $(FUZZ_ASAN_IMPL) $(ZYDIS)

$(FB)/strict_%: $(FZ)/fuzz_%.c $(FZ)/driver.c $(FUZZ_SRCS) $(FUZZ_ASAN_IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(FUZZ_DEFS) $(SAN) -DFZ_STRICT \
		-o $@ $< $(FZ)/driver.c $(FUZZ_ASAN_IMPL) $(ZYDIS)

# Seeds: small traces made with ipt.h's encoder, and one per case of the
# conformance corpus.
$(FB)/mkseed: $(FZ)/mkseed.c $(FZ)/fuzz.h $(IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(IMPL) $(ZYDIS)

$(FB)/seeds/.stamp: $(FZ)/mkseeds $(FB)/mkseed
	$(FZ)/mkseeds $(FB)/mkseed $(FB)/seeds $(CONFORMANCE)
	@touch $@

fuzz-seeds: $(FB)/seeds/.stamp

# The random tests.
$(FB)/random_blk: $(FZ)/random_blk.c $(ASAN_IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(SAN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ASAN_IMPL) \
		$(ZYDIS) -lm

$(FB)/random_pkt: $(FZ)/random_pkt.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(SAN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm

TESTS += $(FB)/random_blk $(FB)/random_pkt
TESTS += $(foreach h,$(FUZZ_HARNESSES), \
	$(call cmd,$(FB)/replay_$(h) -q $(FB)/seeds/$(h) $(FZ)/regress/$(h)) \
	$(call cmd,$(FB)/strict_$(h) -q -t 5 -x $(FZ)/KNOWN $(FZ)/regress/$(h)) \
	$(call cmd,$(FZ)/run-fuzz $(h) $(FUZZ_SMOKE) $(FB)))
TEST_DEPS += $(FB)/random_blk $(FB)/random_pkt $(FB)/seeds/.stamp
TEST_DEPS += $(foreach h,$(FUZZ_HARNESSES),$(FB)/replay_$(h) $(FB)/strict_$(h) $(FB)/fuzz_$(h))

fuzz: $(addprefix $(FB)/fuzz_,$(FUZZ_HARNESSES)) $(FB)/seeds/.stamp
	@for h in $(FUZZ_HARNESSES); do \
		FUZZ_OPTIONS='$(FUZZ_OPTIONS)' \
			$(FZ)/run-fuzz $$h $(FUZZ_SECONDS) $(FB) || exit 1; \
	done

fuzz-replay: $(addprefix $(FB)/replay_,$(FUZZ_HARNESSES)) $(FB)/seeds/.stamp
	@for h in $(FUZZ_HARNESSES); do \
		$(FB)/replay_$$h -q $(FB)/seeds/$$h $(FZ)/regress/$$h \
			$(FB)/corpus/$$h || exit 1; \
	done

.PHONY: fuzz-seeds fuzz-replay
# Binaries made through pattern rules are kept, not removed as intermediate.
.PRECIOUS: $(FB)/strict_% $(FB)/replay_% $(FB)/fuzz_%

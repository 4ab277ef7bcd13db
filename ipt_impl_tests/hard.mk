# hard.mk - hardening tests: fuzzing, sanitizers, valgrind, allocation
# failures, embedding.  Included by the Makefile.
#
#   make fuzz FUZZ_SECONDS=N   run each fuzz harness under libFuzzer for N s
#   make fuzz-replay           replay seeds and regression inputs (ASan+UBSan)
#   make fuzz-seeds            make the seed corpora in build/fuzz/seeds/
#   make hvagent               build examples/hvagent (freestanding object
#                              plus hosted driver)
#
# `make test` gets from here: a short libFuzzer run of each harness
# (FUZZ_SMOKE seconds), a replay of seeds and regression inputs, the unit
# tests and the conformance suites built with ASan+UBSan, the same under
# valgrind memcheck, the failing-allocator test, the
# per-object allocator test, the worst-case memory test, and the
# embedding tests (freestanding nm -u, no writable data, threads, IPT_STATIC
# next to libipt, hvagent).

FZ := ipt_impl_tests/fuzz
HD := ipt_impl_tests/hard
FB := $(B)/fuzz
AB := $(B)/asan
HB := $(B)/hard
CLANG ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SMOKE ?= 20
FUZZ_OPTIONS ?=
# The implementation is built for fuzzing with a small instruction cache
# and a small image page cache: every path through them (miss, hit,
# eviction) is reached after a few instructions, and setting them up costs
# little per input.  The run cache keeps its default limit; it starts
# small.  -O2: the decoders run far more often than they are compiled.
FUZZ_OPT := -O2 -g
FUZZ_DEFS := -DIPT_BLK_ICACHE_BITS=6 -DIPT_IMAGE_CACHE_LIMIT=16384
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_HARNESSES := $(patsubst $(FZ)/fuzz_%.c,%,$(wildcard $(FZ)/fuzz_*.c))
FUZZ_BINS := $(addprefix $(FB)/fuzz_,$(FUZZ_HARNESSES))
REPLAY_BINS := $(addprefix $(AB)/replay_,$(FUZZ_HARNESSES))

$(FB) $(AB) $(HB):
	mkdir -p $@

# A one-line script that runs a test command with its arguments: the test
# runner takes commands without arguments.
define hard_wrap
	@mkdir -p $(dir $(1))
	@printf '#!/bin/sh\nexec %s\n' '$(2)' >$(1)
	@chmod +x $(1)
endef

# ---- fuzz harnesses: libFuzzer builds and standalone replays ----

FUZZ_SRCS := $(FZ)/fuzz.h $(FZ)/fuzz_blk.c $(HDR)

$(FB)/ipt_impl.o: ipt_impl_tests/ipt_impl.c $(HDR) | $(FB)
	$(CLANG) $(FUZZ_OPT) $(WARN) $(CPPFLAGS) $(FUZZ_DEFS) \
		-fsanitize=fuzzer-no-link $(FUZZ_SAN) -c -o $@ $<

$(FB)/fuzz_%: $(FZ)/fuzz_%.c $(FUZZ_SRCS) $(FB)/ipt_impl.o
	$(CLANG) $(FUZZ_OPT) $(WARN) $(CPPFLAGS) -fsanitize=fuzzer \
		$(FUZZ_SAN) -o $@ $< $(FB)/ipt_impl.o $(ZYDIS)

$(AB)/ipt_impl.o: ipt_impl_tests/ipt_impl.c $(HDR) | $(AB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -c -o $@ $<

$(AB)/replay_%: $(FZ)/fuzz_%.c $(FZ)/driver.c $(FUZZ_SRCS) $(AB)/ipt_impl.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(FZ)/driver.c \
		$(AB)/ipt_impl.o $(ZYDIS)

# The strict build: no steering around open bugs (fuzz/KNOWN).
$(AB)/strict_%: $(FZ)/fuzz_%.c $(FZ)/driver.c $(FUZZ_SRCS) $(AB)/ipt_impl.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -DFZ_STRICT -o $@ $< \
		$(FZ)/driver.c $(AB)/ipt_impl.o $(ZYDIS)

$(HB)/mkseed: $(FZ)/mkseed.c $(FZ)/fuzz.h $(B)/ipt_impl.o | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS)

$(FB)/seeds/.stamp: $(FZ)/mkseeds $(HB)/mkseed
	$(FZ)/mkseeds $(HB)/mkseed $(FB)/seeds $(CONFORMANCE)
	@touch $@

fuzz-seeds: $(FB)/seeds/.stamp

# make test: replay, then a short fuzzing run, per harness.
$(HB)/replay-%: $(AB)/replay_% $(FB)/seeds/.stamp
	$(call hard_wrap,$@,$(AB)/replay_$* -q $(FB)/seeds/$* $(FZ)/regress/$*)

$(HB)/regress-%: $(AB)/strict_% $(FZ)/KNOWN
	$(call hard_wrap,$@,$(AB)/strict_$* -q -t 5 -x $(FZ)/KNOWN $(FZ)/regress/$*)

$(HB)/fuzz-smoke-%: $(FB)/fuzz_% $(FB)/seeds/.stamp $(FZ)/run-fuzz
	$(call hard_wrap,$@,$(FZ)/run-fuzz $* $(FUZZ_SMOKE) $(FB))

TESTS += $(addprefix $(HB)/replay-,$(FUZZ_HARNESSES))
TESTS += $(addprefix $(HB)/regress-,$(FUZZ_HARNESSES))
TESTS += $(addprefix $(HB)/fuzz-smoke-,$(FUZZ_HARNESSES))
TEST_DEPS += $(addprefix $(HB)/replay-,$(FUZZ_HARNESSES))
TEST_DEPS += $(addprefix $(HB)/regress-,$(FUZZ_HARNESSES))
TEST_DEPS += $(addprefix $(HB)/fuzz-smoke-,$(FUZZ_HARNESSES))

fuzz: $(FUZZ_BINS) $(FB)/seeds/.stamp
	@for h in $(FUZZ_HARNESSES); do \
		FUZZ_OPTIONS='$(FUZZ_OPTIONS)' \
			$(FZ)/run-fuzz $$h $(FUZZ_SECONDS) $(FB) || exit 1; \
	done

fuzz-replay: $(REPLAY_BINS) $(FB)/seeds/.stamp
	@for h in $(FUZZ_HARNESSES); do \
		$(AB)/replay_$$h -q $(FB)/seeds/$$h $(FZ)/regress/$$h \
			$(FB)/corpus/$$h || exit 1; \
	done

.PHONY: fuzz-seeds fuzz-replay hvagent

# ---- the unit tests and the examples under ASan+UBSan, valgrind ----

ASAN_UNITS := $(patsubst $(B)/%,$(AB)/%,$(UNIT_BINS))
ASAN_EXAMPLES := $(patsubst examples/%,$(AB)/%,$(EXAMPLES))

$(AB)/t_%: ipt_impl_tests/t_%.c $(AB)/ipt_impl.o ipt_impl_tests/check.h $(HDR)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(AB)/ipt_impl.o \
		$(ZYDIS) -lm

$(AB)/ptdump $(AB)/ptxed: $(AB)/%: examples/%.c $(HDR) $(wildcard examples/*.h) | $(AB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(ZYDIS) -lm

$(HB)/asan-conformance: $(ASAN_EXAMPLES) $(HD)/asan-conformance | $(HB)
	$(call hard_wrap,$@,$(HD)/asan-conformance $(CONFORMANCE) $(AB)/ptdump $(AB)/ptxed)

# valgrind: the unit tests, and every conformance case in one process
# with ptdump and ptxed linked in (main renamed, ipt.h static in each).
$(HB)/vg-ptdump.o $(HB)/vg-ptxed.o: $(HB)/vg-%.o: examples/%.c $(HDR) $(wildcard examples/*.h) | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DIPT_STATIC -Dmain=$*_main -c -o $@ $<

$(HB)/valgrind_all: $(HD)/valgrind_all.c $(HB)/vg-ptdump.o $(HB)/vg-ptxed.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(HB)/vg-ptdump.o \
		$(HB)/vg-ptxed.o $(ZYDIS) -lm

$(HB)/valgrind: $(HB)/valgrind_all $(UNIT_BINS) $(HD)/valgrind-all
	$(call hard_wrap,$@,$(HD)/valgrind-all $(HB)/valgrind_all $(CONFORMANCE) $(UNIT_BINS))

TESTS += $(ASAN_UNITS) $(HB)/asan-conformance $(HB)/valgrind
TEST_DEPS += $(ASAN_UNITS) $(HB)/asan-conformance $(HB)/valgrind

# ---- allocation failures ----

$(HB)/nomem-bin: $(HD)/nomem.c $(HD)/cases.h $(HD)/scenarios.h $(HDR) ipt_impl_tests/check.h | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(ZYDIS)

$(HB)/nomem: $(HB)/nomem-bin
	$(call hard_wrap,$@,$(HB)/nomem-bin $(CONFORMANCE))

# ---- runtime allocators: one arena per object ----

$(HB)/alloc-bin: $(HD)/alloc.c $(HD)/cases.h $(HD)/scenarios.h $(AB)/ipt_impl.o ipt_impl_tests/check.h | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(AB)/ipt_impl.o \
		$(ZYDIS)

$(HB)/alloc: $(HB)/alloc-bin
	$(call hard_wrap,$@,$(HB)/alloc-bin $(CONFORMANCE))

# ---- embedding: freestanding, no state ----

$(HB)/embed: $(HD)/embed-check $(HD)/freestanding.c $(B)/ipt_impl.o $(HDR) | $(HB)
	$(call hard_wrap,$@,$(HD)/embed-check $(HB)/embed-objs $(B)/ipt_impl.o)

# Several threads decode at once; as built, and under ThreadSanitizer.
$(HB)/threads-bin: $(HD)/threads.c $(HD)/cases.h $(B)/ipt_impl.o | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) \
		-lpthread

$(HB)/threads-tsan-bin: $(HD)/threads.c $(HD)/cases.h ipt_impl_tests/ipt_impl.c $(HDR) | $(HB)
	$(CC) -O1 -g $(WARN) $(CPPFLAGS) -fsanitize=thread -o $@ $< \
		ipt_impl_tests/ipt_impl.c $(ZYDIS) -lpthread

$(HB)/threads: $(HB)/threads-bin
	$(call hard_wrap,$@,$(HB)/threads-bin $(CONFORMANCE))

$(HB)/threads-tsan: $(HB)/threads-tsan-bin
	$(call hard_wrap,$@,env TSAN_OPTIONS=halt_on_error=1 $(HB)/threads-tsan-bin $(CONFORMANCE))

# IPT_STATIC in two translation units next to libipt 2.0.5.
$(HB)/static-a.o $(HB)/static-b.o: $(HB)/static-%.o: $(HD)/static_tu.c $(HD)/static_api.h $(HDR) | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DTU=$* -c -o $@ $<

$(HB)/static-libipt.o: $(HD)/static_tu.c $(HD)/static_api.h | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DTU=libipt -DUSE_LIBIPT -c -o $@ $<

$(HB)/static-bin: $(HD)/static_main.c $(HD)/cases.h $(HB)/static-a.o $(HB)/static-b.o $(HB)/static-libipt.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(HB)/static-a.o \
		$(HB)/static-b.o $(HB)/static-libipt.o -lipt $(ZYDIS)

$(HB)/static: $(HB)/static-bin $(HD)/static-check
	$(call hard_wrap,$@,$(HD)/static-check $(HB) $(CONFORMANCE))

# The hypervisor agent example: a freestanding object and a hosted driver.
$(HB)/hvagent.o: examples/hvagent.c $(HDR) | $(HB)
	$(CC) $(OPT) -ffreestanding -nostdlib -fno-builtin \
		$(WARN) $(CPPFLAGS) -c -o $@ $<

$(HB)/hvagent: examples/hvagent.c $(HB)/hvagent.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DHVAGENT_HOST -o $@ $< \
		$(HB)/hvagent.o $(ZYDIS)

hvagent: $(HB)/hvagent

$(HB)/hvagent-test: $(HB)/hvagent $(HD)/hvagent-check
	$(call hard_wrap,$@,$(HD)/hvagent-check $(HB) $(CONFORMANCE))

# The most memory each decoder takes (README's table), against what it
# allocates on a trace that fills every cache.
$(HB)/memory-bin: $(HD)/memory.c $(HDR) ipt_impl_tests/check.h ipt_impl_tests/t_blk_util.h | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(ZYDIS) -lm

$(HB)/memory: $(HB)/memory-bin
	$(call hard_wrap,$@,$(HB)/memory-bin)

HARD_TESTS := nomem alloc memory embed threads threads-tsan static hvagent-test
TESTS += $(addprefix $(HB)/,$(HARD_TESTS))
TEST_DEPS += $(addprefix $(HB)/,$(HARD_TESTS))

# Binaries made through pattern rules are kept, not removed as intermediate.
.PRECIOUS: $(AB)/strict_% $(AB)/replay_% $(FB)/fuzz_% $(AB)/t_%

# ---- the block and instruction decoders' shortcuts change nothing ----
# examples/ptxed against the same built with IPT_BLK_GENERAL_PATH, on every
# ptxed case of the libipt and real suites, the synthesized sample, and
# traces ptsynth synthesizes of /bin/true and of a program that takes
# signals (SYNTH_SKIP_PTRACE=1 where ptrace is not permitted).

$(HB)/ptxed-general: examples/ptxed.c $(HDR) $(wildcard examples/*.h) | $(HB)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DIPT_BLK_GENERAL_PATH -o $@ $< \
		$(ZYDIS) -lm

$(HB)/general-path: examples/ptxed $(HB)/ptxed-general $(HD)/general-path \
		$(B)/synth/ptsynth $(B)/synth/signals
	$(call hard_wrap,$@,$(HD)/general-path -s $(B)/synth/ptsynth /bin/true $(B)/synth/signals -- examples/ptxed $(HB)/ptxed-general $(CONFORMANCE)/libipt $(CONFORMANCE)/real examples/synth-sample)

TESTS += $(HB)/general-path
TEST_DEPS += $(HB)/general-path

# hard/rules.mk - hardening: sanitizers, valgrind, allocation failures,
# memory bounds, threads.
#
# `make test` gets from here: the conformance corpus with ptdump and ptxed
# built with ASan+UBSan (asan-conformance), the unit tests and every
# conformance case under valgrind memcheck (valgrind-all), every
# allocation failing in turn (nomem), one allocator per object (alloc),
# the worst-case memory of each decoder (memory), several threads
# decoding at once, as built and under ThreadSanitizer (threads), the
# block and instruction decoders without their shortcuts (general-path).
# The unit tests under ASan+UBSan are built by the Makefile
# (build/asan/unit/).

HD := $(T)/hard
HB := $(B)/hard

# ptdump and ptxed with the sanitizers.
$(B)/asan/ptdump $(B)/asan/ptxed: $(B)/asan/%: examples/%.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(ZYDIS) -lm

# valgrind: every conformance case in one process with ptdump and ptxed
# linked in (main renamed, ipt.h static in each).
$(HB)/vg-ptdump.o $(HB)/vg-ptxed.o: $(HB)/vg-%.o: examples/%.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DIPT_STATIC -Dmain=$*_main -c -o $@ $<

$(HB)/valgrind_all: $(HD)/valgrind_all.c $(HB)/vg-ptdump.o $(HB)/vg-ptxed.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(HB)/vg-ptdump.o \
		$(HB)/vg-ptxed.o $(ZYDIS) -lm

# Allocation failures and runtime allocators.
$(HB)/nomem: $(HD)/nomem.c $(HD)/scenarios.h $(HDR) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(ZYDIS)

$(HB)/alloc: $(HD)/alloc.c $(HD)/scenarios.h $(ASAN_IMPL) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(SAN) -o $@ $< $(ASAN_IMPL) $(ZYDIS)

# The most memory each decoder takes (README's table), against what it
# allocates on a trace that fills every cache.
$(HB)/memory: $(HD)/memory.c $(HDR) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(ZYDIS) -lm

# Several threads decode at once; as built, and under ThreadSanitizer.
$(HB)/threads: $(HD)/threads.c $(LIB_HDRS) $(IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(IMPL) $(ZYDIS) -lpthread

$(HB)/threads-tsan: $(HD)/threads.c $(LIB_HDRS) $(T)/lib/ipt_impl.c $(HDR)
	@mkdir -p $(@D)
	$(CC) -O1 -g $(WARN) $(CPPFLAGS) -fsanitize=thread -o $@ $< \
		$(T)/lib/ipt_impl.c $(ZYDIS) -lpthread

TESTS += $(call cmd,$(HD)/asan-conformance $(CONFORMANCE) $(B)/asan/ptdump $(B)/asan/ptxed)
# A unit test that walks the corpus names a lighter load for memcheck as
# VG_ARGS_<name> in its folder's rules.mk; valgrind-all takes it joined
# to the program by '+'.
VG_UNITS := $(foreach u,$(UNIT_BINS),\
	$(subst $(space),+,$(strip $(u) $(VG_ARGS_$(notdir $(u))))))
TESTS += $(call cmd,$(HD)/valgrind-all $(HB)/valgrind_all $(CONFORMANCE) $(VG_UNITS))
TESTS += $(call cmd,$(HB)/nomem $(CONFORMANCE))
TESTS += $(call cmd,$(HB)/alloc $(CONFORMANCE))
TESTS += $(HB)/memory
TESTS += $(call cmd,$(HB)/threads $(CONFORMANCE))
TESTS += $(call cmd,env TSAN_OPTIONS=halt_on_error=1 $(HB)/threads-tsan $(CONFORMANCE))
TEST_DEPS += $(B)/asan/ptdump $(B)/asan/ptxed $(HB)/valgrind_all $(UNIT_BINS) \
	$(addprefix $(HB)/,nomem alloc memory threads threads-tsan)

# The block and instruction decoders' shortcuts change nothing: ptxed
# against the same built with IPT_BLK_GENERAL_PATH, on every ptxed case of
# the libipt and real suites, the synthesized sample, and traces ptsynth
# synthesizes of /bin/true and of a program that takes signals
# (SYNTH_SKIP_PTRACE=1 where ptrace is not permitted).
$(HB)/ptxed-general: examples/ptxed.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DIPT_BLK_GENERAL_PATH -o $@ $< \
		$(ZYDIS) -lm

TESTS += $(call cmd,$(HD)/general-path -s $(B)/synth/ptsynth /bin/true \
	$(B)/synth/signals -- examples/ptxed $(HB)/ptxed-general \
	$(CONFORMANCE)/libipt $(CONFORMANCE)/real $(CONFORMANCE)/regress \
	examples/synth-sample)
TEST_DEPS += examples/ptxed $(HB)/ptxed-general $(B)/synth/ptsynth \
	$(B)/synth/signals

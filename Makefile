# ipt.h: build the examples, run the tests, run the conformance suites.
#
#   make                 build examples/ptdump, ptxed, ptcov and decode
#   make test            build and run everything in ipt_impl_tests/
#   make test-build      build it, without running it
#   make conformance     run the conformance corpus against the examples;
#                        fails when a case listed in
#                        ipt_impl_tests/conformance/pass fails
#   make conformance-update   record the cases that pass now
#   make demo            trace a real program and show its instruction flow
#   make bench           compare speed and memory with libipt
#   make coverage        line and branch coverage of ipt.h, per layer
#   make fuzz            run each libFuzzer harness for FUZZ_SECONDS
#
# ipt_impl_tests/README.md maps what each folder tests.  Unit tests are
# found by folder: every ipt_impl_tests/unit/<layer>/t_*.c becomes the
# test binary build/unit/<layer>/t_*, linked with the one implementation
# object.  Everything else comes from the rules.mk of its folder.

CC       ?= cc
CXX      ?= c++
CLANG    ?= clang
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Werror
CFLAGS   ?=
T        := ipt_impl_tests
CPPFLAGS += -I. -I$(T)/lib
ZYDIS    := -lZydis
B        := build
CONFORMANCE ?= $(T)/conformance/corpus

# AddressSanitizer and UndefinedBehaviorSanitizer, as every sanitized
# build here uses them.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer

HDR := ipt.h
LIB_HDRS := $(wildcard $(T)/lib/*.h)
# Headers the unit tests of a layer share (unit/hv/fault_util.h, ...).
UNIT_HDRS := $(wildcard $(T)/unit/*/*.h)

EXAMPLES := $(patsubst %.c,%,$(wildcard examples/ptdump.c examples/ptxed.c \
	examples/ptcov.c examples/decode.c))

# Each rules.mk may append to TESTS (commands run by `make test`, each
# ending with "N passed, N failed") and TEST_DEPS (what those commands need
# built).  A command with arguments is one entry: $(call cmd,PROGRAM ARGS).
TESTS :=
TEST_DEPS :=
UNIT_BUILDS :=
comma := ,
empty :=
space := $(empty) $(empty)
cmd = $(subst $(space),$(comma),$(strip $(1)))

all: $(EXAMPLES)

examples/%: examples/%.c $(HDR) $(wildcard examples/*.h)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm -pthread

# $(call unit_build,DIR,COMPILER AND FLAGS) compiles the implementation
# once, as DIR/ipt_impl.o, and links every unit test with it as
# DIR/unit/<layer>/t_*.  The Makefile builds them as configured ($(B)) and
# with the sanitizers ($(B)/asan); compile/rules.mk other ways.
define unit_build
$(1)/ipt_impl.o: $(T)/lib/ipt_impl.c $(HDR)
	@mkdir -p $$(@D)
	$(2) $(WARN) $(CPPFLAGS) $(CFLAGS) -c -o $$@ $$<

$(1)/unit/%: $(T)/unit/%.c $(1)/ipt_impl.o $(LIB_HDRS) $(UNIT_HDRS) $(HDR)
	@mkdir -p $$(@D)
	$(2) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $$@ $$< $(1)/ipt_impl.o $(ZYDIS) -lm

.PRECIOUS: $(1)/unit/%
endef

UNIT_SRCS := $(sort $(wildcard $(T)/unit/*/t_*.c))
UNIT_BINS := $(patsubst $(T)/%.c,$(B)/%,$(UNIT_SRCS))
# The unit tests as built in DIR.
unit_bins = $(patsubst $(B)/%,$(1)/%,$(UNIT_BINS))

IMPL := $(B)/ipt_impl.o
ASAN_IMPL := $(B)/asan/ipt_impl.o
ASAN_UNITS := $(call unit_bins,$(B)/asan)
$(eval $(call unit_build,$(B),$(CC) $(OPT)))
$(eval $(call unit_build,$(B)/asan,$(CC) $(OPT) $(SAN)))

TEST_DEPS += $(UNIT_BINS) $(ASAN_UNITS)

# A folder's rules.mk adds what its tests need beyond that; a unit test
# that takes arguments names them as UNIT_ARGS_<name> (e.g.
# UNIT_ARGS_t_hv_fault := $(CONFORMANCE)/libipt), for its plain and its
# sanitized run alike.
include $(sort $(wildcard $(T)/unit/*/rules.mk)) $(sort $(wildcard $(T)/*/rules.mk))

# The unit tests of a build in DIR, each with its arguments.  Other
# folders add builds to UNIT_BUILDS (compile/: clang -O3, -m32).
unit_tests = $(foreach u,$(call unit_bins,$(1)),\
	$(call cmd,$(u) $(UNIT_ARGS_$(notdir $(u)))))
TESTS += $(foreach d,$(B) $(B)/asan $(UNIT_BUILDS),$(call unit_tests,$(d)))

test: all $(TEST_DEPS)
	@$(T)/lib/run-tests $(TESTS)

# Build what `make test` runs, without running it.
test-build: all $(TEST_DEPS)

conformance: all
	@$(T)/conformance/run --corpus $(CONFORMANCE) --check $(T)/conformance/pass

conformance-update: all
	@$(T)/conformance/run --corpus $(CONFORMANCE) --update $(T)/conformance/pass

clean:
	rm -rf $(B) $(EXAMPLES)

.PHONY: all test test-build conformance conformance-update clean demo bench bench-threads fuzz coverage

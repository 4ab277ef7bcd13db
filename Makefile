# ipt.h: build the examples, run the tests, run the conformance suites.
#
#   make                 build examples/ptdump, examples/ptxed, examples/decode
#   make test            build and run everything in ipt_impl_tests/
#   make test-build      build it, without running it
#   make conformance     run the conformance corpus against the examples;
#                        fails when a case listed in
#                        ipt_impl_tests/conformance/pass fails
#   make conformance-update   record the cases that pass now
#   make demo            trace a real program and show its instruction flow
#   make bench           compare speed and memory with libipt
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

EXAMPLES := $(patsubst %.c,%,$(wildcard examples/ptdump.c examples/ptxed.c examples/decode.c))

# Each rules.mk may append to TESTS (commands run by `make test`, each
# ending with "N passed, N failed") and TEST_DEPS (what those commands need
# built).  A command with arguments is one entry: $(call cmd,PROGRAM ARGS).
TESTS :=
TEST_DEPS :=
comma := ,
empty :=
space := $(empty) $(empty)
cmd = $(subst $(space),$(comma),$(strip $(1)))

all: $(EXAMPLES)

examples/%: examples/%.c $(HDR) $(wildcard examples/*.h)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm

# The implementation, compiled once for everything linked with it: as
# configured, and with the sanitizers.
IMPL := $(B)/ipt_impl.o
ASAN_IMPL := $(B)/asan/ipt_impl.o

$(IMPL): $(T)/lib/ipt_impl.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(ASAN_IMPL): $(T)/lib/ipt_impl.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) $(SAN) -c -o $@ $<

# Unit tests, and the same under the sanitizers (build/asan/unit/...).
UNIT_SRCS := $(sort $(wildcard $(T)/unit/*/t_*.c))
UNIT_BINS := $(patsubst $(T)/%.c,$(B)/%,$(UNIT_SRCS))
ASAN_UNITS := $(patsubst $(B)/%,$(B)/asan/%,$(UNIT_BINS))

$(B)/unit/%: $(T)/unit/%.c $(IMPL) $(LIB_HDRS) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) $(ZYDIS) -lm

$(B)/asan/unit/%: $(T)/unit/%.c $(ASAN_IMPL) $(LIB_HDRS) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) $(SAN) -o $@ $< $(ASAN_IMPL) \
		$(ZYDIS) -lm

TESTS += $(UNIT_BINS) $(ASAN_UNITS)
TEST_DEPS += $(UNIT_BINS) $(ASAN_UNITS)

include $(sort $(wildcard $(T)/*/rules.mk))

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

.PHONY: all test test-build conformance conformance-update clean demo bench fuzz
.PRECIOUS: $(B)/unit/% $(B)/asan/unit/%

# ipt.h: build the examples, run the tests, run the conformance suites.
#
#   make                 build examples/ptdump and examples/ptxed
#   make test            build and run everything in ipt_impl_tests/
#   make conformance     run ../shared/conformance against the examples
#   make conformance-update   record newly passing conformance cases
#   make demo            trace a real program and show its instruction flow
#   make bench           compare speed and memory with libipt
#
# Test programs are collected from ipt_impl_tests/: every t_*.c becomes a
# test binary linked with one shared implementation object; the *.mk files
# there add tests that need more (libipt, ptrace, sanitizers).

CC       ?= cc
CXX      ?= c++
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Werror
CFLAGS   ?=
CPPFLAGS += -I.
ZYDIS    := -lZydis
B        := build
CONFORMANCE ?= ../shared/conformance

HDR := ipt.h

EXAMPLES := $(patsubst %.c,%,$(wildcard examples/ptdump.c examples/ptxed.c))

# Each *.mk may append to TESTS (commands run by `make test`, each ending
# with "N passed, N failed") and TEST_DEPS (what those commands need built).
TESTS :=
TEST_DEPS :=

all: $(EXAMPLES)

examples/%: examples/%.c $(HDR) $(wildcard examples/*.h)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm -pthread

$(B):
	mkdir -p $(B)

# The implementation, compiled once for all unit tests.
$(B)/ipt_impl.o: ipt_impl_tests/ipt_impl.c $(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

UNIT_SRCS := $(wildcard ipt_impl_tests/t_*.c)
UNIT_BINS := $(patsubst ipt_impl_tests/%.c,$(B)/%,$(UNIT_SRCS))

$(B)/t_%: ipt_impl_tests/t_%.c $(B)/ipt_impl.o ipt_impl_tests/check.h $(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) -lm

TESTS += $(UNIT_BINS)
TEST_DEPS += $(UNIT_BINS)

include $(sort $(wildcard ipt_impl_tests/*.mk))

test: all $(TEST_DEPS)
	@ipt_impl_tests/run-tests $(TESTS)

conformance: all
	@ipt_impl_tests/conformance check $(CONFORMANCE)

conformance-update: all
	@ipt_impl_tests/conformance update $(CONFORMANCE)

clean:
	rm -rf $(B) $(EXAMPLES)

.PHONY: all test conformance conformance-update clean demo bench fuzz

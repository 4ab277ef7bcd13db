# tools/rules.mk - the example tools as programs: examples/ptdump's command
# line, errors and exit statuses (ptdump_cli); examples/ptxed end to end
# (t_ptxed), also built as C++ and with IPT_NO_STDIO (no file sections in
# the library, so all code reaches the decoders through the image's
# read-memory callback; that build reads its files where the others map
# them, examples/file.h); examples/hvagent, a freestanding object with a
# hosted driver (hvagent-check); examples/ptcov's options, report,
# --edges, --bitmap and errors (ptcov_cli); examples/decode, README.md's
# decoding loop (decode-check: the README's code is decode.c's, and it
# decodes).
#
#   make hvagent         build examples/hvagent's object and driver

TB := $(B)/tools

$(TB)/t_ptxed: $(T)/tools/t_ptxed.c $(IMPL) $(LIB_HDRS) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) $(ZYDIS) -lm

$(TB)/ptxed_nostdio: examples/ptxed.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -DIPT_NO_STDIO \
		-DEX_FILE_NO_MMAP -o $@ $< $(ZYDIS) -lm -pthread

$(TB)/ptxed_cxx: examples/ptxed.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CXX) -x c++ $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(ZYDIS) -lm -pthread

# The hypervisor agent example: a freestanding object and a hosted driver.
$(TB)/hvagent.o: examples/hvagent.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) -ffreestanding -nostdlib -fno-builtin \
		$(WARN) $(CPPFLAGS) -c -o $@ $<

$(TB)/hvagent: examples/hvagent.c $(TB)/hvagent.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DHVAGENT_HOST -o $@ $< \
		$(TB)/hvagent.o $(ZYDIS)

hvagent: $(TB)/hvagent

# A host and its guest in one trace, for the agent's guest-only flow.
$(TB)/vm/vm.pt: $(T)/tools/hvagent_vm.c $(LIB_HDRS) $(IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $(TB)/hvagent_vm $< $(IMPL) $(ZYDIS)
	$(TB)/hvagent_vm $(@D)

TESTS += $(T)/tools/ptdump_cli
TESTS += $(TB)/t_ptxed
TESTS += $(call cmd,env PTXED=$(TB)/ptxed_nostdio $(TB)/t_ptxed)
TESTS += $(call cmd,env PTXED=$(TB)/ptxed_cxx $(TB)/t_ptxed)
TESTS += $(call cmd,$(T)/tools/hvagent-check $(TB) $(CONFORMANCE))
TESTS += $(call cmd,$(T)/tools/decode-check examples/decode $(CONFORMANCE))
TESTS += $(call cmd,$(T)/tools/ptcov_cli $(CONFORMANCE))
TEST_DEPS += examples/ptdump examples/ptcov examples/decode $(TB)/t_ptxed \
	$(TB)/ptxed_nostdio \
	$(TB)/ptxed_cxx $(TB)/hvagent $(TB)/vm/vm.pt

.PHONY: hvagent

# Hypervisor-agent features: missing pages as pauses (fault and resume).

HV_B := $(B)/hv

$(HV_B):
	mkdir -p $(HV_B)

# Every ptxed case of the conformance suites and the shipped ptsynth sample,
# decoded with pages missing at random and fetched on demand, against the
# decode with all code present.
$(HV_B)/t_hv_fault: ipt_impl_tests/unit/hv/t_hv_fault.c \
		ipt_impl_tests/unit/hv/fault_util.h $(B)/ipt_impl.o \
		ipt_impl_tests/check.h $(HDR) | $(HV_B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -Iipt_impl_tests -Iipt_impl_tests/lib \
		$(CFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) -lm

$(HV_B)/t_hv_fault.sh: $(HV_B)/t_hv_fault ipt-hv-force
	@printf '#!/bin/sh\nexec %s %s %s %s --synth %s\n' "$(HV_B)/t_hv_fault" \
		"$(CONFORMANCE)/libipt" "$(CONFORMANCE)/real" \
		"$(CONFORMANCE)/libipt-sb" examples/synth-sample > $@
	@chmod +x $@

.PHONY: ipt-hv-force
ipt-hv-force:

TESTS += $(HV_B)/t_hv_fault.sh
TEST_DEPS += $(HV_B)/t_hv_fault.sh

# The fault harness shares the decode loops.
$(FB)/fuzz_fault $(AB)/replay_fault $(AB)/strict_fault: \
	ipt_impl_tests/unit/hv/fault_util.h

# unit/hv: hypervisor-agent features.  t_hv_fault decodes every ptxed case
# of the conformance corpus and the shipped ptsynth sample with pages
# missing at random, fetched on demand, against the decode with all code
# present.
UNIT_ARGS_t_hv_fault := $(CONFORMANCE)/libipt $(CONFORMANCE)/real \
	$(CONFORMANCE)/libipt-sb --synth examples/synth-sample

# The fault harness shares the decode loops.
$(FB)/fuzz_fault $(FB)/replay_fault $(FB)/strict_fault: \
	$(T)/unit/hv/fault_util.h

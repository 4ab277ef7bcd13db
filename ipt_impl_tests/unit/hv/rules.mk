# unit/hv: what hypervisor agents need.  These tests walk every ptxed case
# of the conformance corpus and the shipped ptsynth sample:
#   t_hv_fault   pages missing at random, fetched on demand, against the
#                decode with all code present
#   t_hv_buffer  one decoder of each kind (coverage too) pointed at
#                trace after trace (ipt_*_set_buffer, ipt_*_set_ring):
#                the output of new decoders, no allocation once warm
#   t_hv_stream  packet, event, query, block, instruction and coverage
#                decoders fed in random pieces (ipt_*_extend) against the whole
#                trace
#   t_hv_ring    the trace as a wrapped ring buffer in two pieces
#                (ipt_*_set_ring), split at packet boundaries, inside
#                packets and at random bytes, against the trace in one
#   t_hv_start   decoders started at packet boundaries with the state a
#                decoder of the trace up to there stands in
#                (ipt_*_start_at, ipt_*_get_start_state)
# t_hv_vm (VM entries as hardware writes them), t_hv_vmx (the SDM's VM
# entry and exit shapes, guest/host tags) and t_hv_cr3 (the CR3 filter)
# need no arguments.
HV_CASES := $(CONFORMANCE)/libipt $(CONFORMANCE)/real \
	$(CONFORMANCE)/libipt-sb --synth examples/synth-sample
UNIT_ARGS_t_hv_fault := $(HV_CASES)
UNIT_ARGS_t_hv_buffer := $(HV_CASES)
UNIT_ARGS_t_hv_stream := $(HV_CASES)
UNIT_ARGS_t_hv_cr3 := $(HV_CASES)
UNIT_ARGS_t_hv_ring := $(HV_CASES)
# t_hv_start: libipt's cases and the ptsynth sample (the real traces pass
# too but take minutes: t_hv_start $(CONFORMANCE)/real).
UNIT_ARGS_t_hv_start := $(CONFORMANCE)/libipt --synth examples/synth-sample

# The fault, streaming, start and ring harnesses share the decode loops.
$(B)/fuzz/fuzz_fault $(B)/fuzz/replay_fault $(B)/fuzz/strict_fault \
$(B)/fuzz/fuzz_start $(B)/fuzz/replay_start $(B)/fuzz/strict_start: \
	$(T)/unit/hv/fault_util.h $(T)/unit/hv/hv_cases.h
$(B)/fuzz/fuzz_stream $(B)/fuzz/replay_stream $(B)/fuzz/strict_stream \
$(B)/fuzz/fuzz_ring $(B)/fuzz/replay_ring $(B)/fuzz/strict_ring: \
	$(T)/unit/hv/fault_util.h $(T)/unit/hv/stream_util.h

# Under memcheck: the shipped sample alone.
VG_ARGS_t_hv_fault := --synth examples/synth-sample
VG_ARGS_t_hv_buffer := --synth examples/synth-sample
VG_ARGS_t_hv_stream := --synth examples/synth-sample
VG_ARGS_t_hv_ring := --synth examples/synth-sample
VG_ARGS_t_hv_start := --synth examples/synth-sample

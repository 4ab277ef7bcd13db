# unit/cov: the coverage decoder (ipt_cov_*) against the block decoder.
#   t_cov_oracle  ipt_cov's edges and bitmap against the edges derived from
#                 pt_blk_next on every libipt and real conformance case and
#                 the shipped synthesized trace, first pass and warm, and
#                 with pages withheld and supplied on demand (ipt_cov_pause)
#   t_cov_reuse   one decoder over many traces: no allocation once warm,
#                 the bitmap kept or cleared, invalidation, ranges, libxdc
#                 mode, errors
#   t_cov_tnt     the TNT memo across TNT packets: long TNT runs split
#                 into packets of random sizes, with PADs and timing
#                 packets between, against the block decoder's edges
#   t_cov_idle    giving up on code that runs without trace
#                 (IPT_COV_IDLE_MAX, here 1000) at the limit and across
#                 it, through pt_blk_next, the run walk and the TNT memo
UNIT_ARGS_t_cov_oracle := manifest $(CONFORMANCE)/libipt/MANIFEST \
	manifest $(CONFORMANCE)/real/MANIFEST synth examples/synth-sample

$(foreach t,t_cov_oracle t_cov_reuse t_cov_tnt t_cov_idle,$(B)/unit/cov/$(t) $(B)/asan/unit/cov/$(t)): \
	$(T)/unit/cov/cov_oracle.h $(T)/unit/hv/fault_util.h

# Under memcheck: the shipped sample alone.
VG_ARGS_t_cov_oracle := synth examples/synth-sample

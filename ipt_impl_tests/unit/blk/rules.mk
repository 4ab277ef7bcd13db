# unit/blk: the block decoder.
#   t_blk_psb  the short way through a PSB+'s status events against the
#              general one, and PSB+s with tracing off taken whole (also
#              the coverage decoder's edges, against cov_oracle.h), also on
#              every trace of the libipt and real conformance suites (at
#              the event level); under memcheck (hard/valgrind-all) the
#              synthesized traces alone
UNIT_ARGS_t_blk_psb := $(CONFORMANCE)/libipt $(CONFORMANCE)/real

$(B)/unit/blk/t_blk_psb $(B)/asan/unit/blk/t_blk_psb: \
	$(T)/unit/cov/cov_oracle.h

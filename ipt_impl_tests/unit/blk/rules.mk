# unit/blk: the block decoder.
#   t_blk_psb  the short way through a PSB+'s status events against the
#              general one, also on every trace of the libipt and real
#              conformance suites (at the event level); under memcheck
#              (hard/valgrind-all) the synthesized traces alone
UNIT_ARGS_t_blk_psb := $(CONFORMANCE)/libipt $(CONFORMANCE)/real

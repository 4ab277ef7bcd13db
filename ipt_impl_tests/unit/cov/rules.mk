# unit/cov: the coverage decoder (ipt_cov_*) against the block decoder.
#
# t_cov_oracle compares ipt_cov's edges and bitmap with the edges derived
# from pt_blk_next on every libipt and real conformance case and the
# shipped synthesized trace, first pass and warm, and with pages withheld
# and supplied on demand (ipt_cov_pause) with the decode of all code.

COV_UNIT := ipt_impl_tests/unit/cov

$(B)/t_cov_%: $(COV_UNIT)/t_cov_%.c $(COV_UNIT)/cov_oracle.h $(B)/ipt_impl.o \
		ipt_impl_tests/unit/hv/fault_util.h ipt_impl_tests/check.h \
		$(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -Iipt_impl_tests $(CFLAGS) -o $@ $< \
		$(B)/ipt_impl.o $(ZYDIS) -lm

# t_cov_reuse: one decoder over many traces (no allocation once warm, the
# bitmap kept or cleared, invalidation, ranges, libxdc mode, errors).
TESTS += $(COV_UNIT)/run-oracle $(B)/t_cov_reuse
TEST_DEPS += $(B)/t_cov_oracle $(B)/t_cov_reuse

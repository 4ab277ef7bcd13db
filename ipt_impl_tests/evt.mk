# evt.mk - event and query decoder tests beyond the plain t_*.c rule.

# The event and query tests share an encoder-based trace builder.
$(patsubst ipt_impl_tests/%.c,$(B)/%,$(wildcard ipt_impl_tests/t_evt_*.c ipt_impl_tests/t_qry_*.c)): ipt_impl_tests/evt_trace.h

# The query decoder against Debian's libipt 2.0.5: one harness, two
# builds, compared by evt_diff.py (which lists every deliberate
# 2.3-vs-2.0.5 difference it removes).
$(B)/evt_diff_ipt: ipt_impl_tests/evt_diff.c $(B)/ipt_impl.o | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS) -lm

$(B)/evt_diff_libipt: ipt_impl_tests/evt_diff.c | $(B)
	$(CC) $(OPT) $(WARN) $(CFLAGS) -DUSE_LIBIPT -o $@ $< -lipt

TESTS += ipt_impl_tests/evt_diff.sh
TEST_DEPS += $(B)/evt_diff_ipt $(B)/evt_diff_libipt

# The query loop of pt_qry_cond_branch(3) over the libipt conformance
# cases, checked instruction by instruction against ptxed.exp.  It needs
# ipt.h's internal instruction classification, so it is its own
# implementation unit.  A wrapper carries the suite's place, rewritten each
# run so that CONFORMANCE=... on the command line takes effect; a missing
# suite fails unless CONFORMANCE_OPTIONAL=1.
$(B)/qry_conformance: ipt_impl_tests/qry_conformance.c $(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm

$(B)/qry_conformance.sh: $(B)/qry_conformance ipt-evt-force
	@printf '#!/bin/sh\nexec %s %s\n' "$(B)/qry_conformance" "$(CONFORMANCE)" > $@
	@chmod +x $@

TESTS += $(B)/qry_conformance.sh
TEST_DEPS += $(B)/qry_conformance.sh

.PHONY: ipt-evt-force
ipt-evt-force:

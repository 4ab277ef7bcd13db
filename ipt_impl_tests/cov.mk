# cov.mk - until the test tree's rules.mk files are included from the
# Makefile: the coverage tests in unit/cov and the ptcov checks in tools.
include ipt_impl_tests/unit/cov/rules.mk
include ipt_impl_tests/tools/rules.mk

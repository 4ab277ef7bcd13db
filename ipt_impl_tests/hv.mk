# hv.mk - until the test tree's rules.mk files are included from the
# Makefile: the hypervisor-agent tests in unit/hv.
include ipt_impl_tests/unit/hv/rules.mk

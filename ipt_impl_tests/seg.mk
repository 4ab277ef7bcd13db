# seg.mk - until the test tree's rules.mk files are included from the
# Makefile: the tests of decoding a trace in pieces (seg/rules.mk).
include ipt_impl_tests/seg/rules.mk

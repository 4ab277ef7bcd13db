# seg.mk - includes seg/rules.mk, the tests of decoding a trace in pieces.
include ipt_impl_tests/seg/rules.mk

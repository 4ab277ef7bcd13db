# sb.mk - the sideband unit tests, in the unit/ layout.
include ipt_impl_tests/unit/sb/rules.mk

# ptdump.mk - tests of examples/ptdump beyond the conformance suites: its
# command line, error messages and exit statuses.

TESTS += ipt_impl_tests/ptdump_cli.sh
TEST_DEPS += examples/ptdump

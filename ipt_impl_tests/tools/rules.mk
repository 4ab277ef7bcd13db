# tools: command-line checks of the examples beyond the conformance suites.
#
# ptcov_cli.sh: examples/ptcov's options, report, --edges, --bitmap and
# errors.

TESTS += ipt_impl_tests/tools/ptcov_cli.sh
TEST_DEPS += examples/ptcov

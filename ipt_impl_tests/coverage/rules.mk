# coverage/rules.mk - `make coverage`: line and branch coverage of ipt.h's
# implementation by the tests, per layer (the >>tag banners), as a table.
#
# Everything is built again with gcc --coverage at -O0 in build/coverage/
# (a make of its own with B=build/coverage), then these tests run: the
# unit tests, the conformance corpus through ptdump, ptxed and decode, the
# corpus walks (blk_agree, qry_conformance), the libipt comparisons, the
# example tools' tests, ptxed --threads and the segment index
# (threads-check, seg_split), the random-input tests and fuzz replays, the
# allocation, memory and thread tests, and ptxed with and without the
# block decoder's shortcuts (general-path).  Left out: what needs another
# compiler (libFuzzer runs, TSan), the C++, IPT_NO_STDIO and -m32 builds,
# valgrind, and synth/'s recordings of larger programs.  The tests' output
# goes to build/coverage/tests.log.
#
# What is measured is ipt.h's own code, once:
# - the sanitized builds are built without the sanitizers (SAN is empty):
#   gcov counts the checks ASan and UBSan add (a shift's range, a
#   pointer's null test, ...) as branches of the line they check, about
#   600 branches that are the sanitizers' code and never taken;
# - IPT__INLINE is plain inline: with its always_inline gcov counts a
#   function's branches once per place it is inlined into (ipt__cov_count
#   into each edge kind, ipt__pkt_fast into both packet loops, ...);
# - the fuzz replays run their inputs in one process (-1): a child process
#   ends with _exit, which writes no counts.
# lcov collects the counts; table prints the table and writes the lines
# and branches never taken to build/coverage/uncovered.txt.

COV_B := $(B)/coverage

coverage:
	@command -v lcov >/dev/null || { echo "make coverage needs lcov"; exit 1; }
	@rm -rf $(COV_B)/lcov.info
	@find $(COV_B) -name '*.gcda' -delete 2>/dev/null || true
	@$(MAKE) --no-print-directory B=$(COV_B) CC=gcc CXX=g++ \
		OPT='-O0 -g --coverage -DIPT__INLINE=inline' SAN= coverage-run

# Inside that make: B is build/coverage.
$(B)/examples/%: examples/%.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm -pthread

COV_TESTS = $(call unit_tests,$(B)) \
	$(call cmd,$(T)/conformance/run --ptdump $(B)/examples/ptdump \
		--ptxed $(B)/examples/ptxed --corpus $(CONFORMANCE) \
		--check $(T)/conformance/pass) \
	$(call cmd,$(T)/tools/decode-check $(B)/examples/decode $(CONFORMANCE)) \
	$(call cmd,$(T)/tools/ptdump_cli $(B)/examples/ptdump) \
	$(call cmd,env PTXED=$(B)/examples/ptxed $(B)/tools/t_ptxed) \
	$(call cmd,env PTDUMP=$(B)/examples/ptdump $(T)/seg/threads-check \
		$(B)/examples/ptxed $(CONFORMANCE)) \
	$(B)/seg/seg_split \
	$(call cmd,$(T)/hard/general-path -s $(B)/synth/ptsynth /bin/true \
		$(B)/synth/signals -- $(B)/examples/ptxed $(B)/hard/ptxed-general \
		$(CONFORMANCE)/libipt $(CONFORMANCE)/real examples/synth-sample) \
	$(filter $(B)/conformance/% $(T)/diff/% $(B)/fuzz/random_% \
		$(B)/hard/nomem% $(B)/hard/alloc% $(B)/hard/memory% \
		$(B)/hard/threads$(comma)%,$(TESTS)) \
	$(subst $(comma)-q$(comma),$(comma)-1$(comma)-q$(comma),\
		$(filter $(B)/fuzz/replay_%,$(TESTS)))
COV_DEPS = $(UNIT_BINS) $(addprefix $(B)/examples/,ptdump ptxed decode) \
	$(B)/tools/t_ptxed $(B)/conformance/blk_agree \
	$(B)/conformance/qry_conformance \
	$(foreach h,pkt evt img blk,$(B)/diff/$(h)_diff_ipt $(B)/diff/$(h)_diff_libipt) \
	$(B)/fuzz/random_blk $(B)/fuzz/random_pkt $(B)/fuzz/seeds/.stamp \
	$(addprefix $(B)/fuzz/replay_,$(FUZZ_HARNESSES)) \
	$(addprefix $(B)/hard/,nomem alloc memory threads ptxed-general) \
	$(B)/synth/ptsynth $(B)/synth/signals $(B)/seg/seg_split

# COV_DEPS names what the folders included after this one define
# (FUZZ_HARNESSES): expanded when coverage-run is built.
.SECONDEXPANSION:
coverage-run: $$(COV_DEPS)
	@$(T)/lib/run-tests $(COV_TESTS) >$(B)/tests.log; tail -n 1 $(B)/tests.log
	@lcov -q --capture --rc lcov_branch_coverage=1 --directory $(B) \
		--output-file $(B)/all.info 2>/dev/null
	@lcov -q --rc lcov_branch_coverage=1 --extract $(B)/all.info \
		'*/ipt.h' --output-file $(B)/lcov.info
	@$(T)/coverage/table $(HDR) $(B)/lcov.info $(B)/uncovered.txt

.PHONY: coverage coverage-run

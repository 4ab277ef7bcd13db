# ptxed.mk - examples/ptxed built the two other ways t_ptxed then runs:
# as C++, and with IPT_NO_STDIO (no file sections in the library, so all
# code reaches the decoders through the image's read-memory callback).

$(B)/ptxed_nostdio: examples/ptxed.c $(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -DIPT_NO_STDIO -o $@ $< \
		$(ZYDIS) -lm -pthread

$(B)/ptxed_cxx: examples/ptxed.c $(HDR) | $(B)
	$(CXX) -x c++ $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(ZYDIS) -lm -pthread

TESTS += ipt_impl_tests/ptxed_builds.sh
TEST_DEPS += $(B)/ptxed_nostdio $(B)/ptxed_cxx $(B)/t_ptxed

# compile/rules.mk - ipt.h built the ways its users build it.
#
#   builds        the implementation and the API alone as C99 (-pedantic),
#                 C11 and C++ with each compiler; two IPT_STATIC units
#                 (static_a.c, static_b.c) linked into one program that runs
#   embed-check   freestanding.c (IPT_NO_STDIO, every hook the caller's)
#                 without libc: what it needs (nm -u), no writable data
#   static-check  IPT_STATIC in two units next to libipt 2.0.5 in one
#                 program (static_tu.c, static_main.c)
#   cxx/, nostdio/   the unit tests that compile their own copy of the
#                 implementation, again as C++ and with IPT_NO_STDIO
#   opt-levels    everything with gcc and clang at -O0 to -O3, objects only
#   clang-O3/     the implementation and the unit tests built with clang -O3,
#                 and run
#   targets       the freestanding agent for Windows x64 and x86 (clang
#                 --target=*-pc-windows-msvc, Zydis's headers), and 32-bit
#                 x86 Linux (-m32), objects only
#   m32/          the unit tests, ptdump and ptxed as 32-bit x86 programs,
#                 run (the unit tests, and the conformance ratchet)

CPB := $(B)/compile

# IPT_STATIC in two translation units next to libipt 2.0.5.
$(CPB)/static-a.o $(CPB)/static-b.o: $(CPB)/static-%.o: $(T)/compile/static_tu.c $(T)/compile/static_api.h $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DTU=$* -c -o $@ $<

$(CPB)/static-libipt.o: $(T)/compile/static_tu.c $(T)/compile/static_api.h
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -DTU=libipt -DUSE_LIBIPT -c -o $@ $<

$(CPB)/static-bin: $(T)/compile/static_main.c $(LIB_HDRS) $(CPB)/static-a.o $(CPB)/static-b.o $(CPB)/static-libipt.o
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(CPB)/static-a.o \
		$(CPB)/static-b.o $(CPB)/static-libipt.o -lipt $(ZYDIS)

# The unit tests with their own static copy of the implementation, as C++
# and without stdio (no file sections, the callback image alone).
CXX_UNITS := img/t_img_callback img/t_img_files ild/t_ild_classify ild/t_ild_random
NOSTDIO_UNITS := img/t_img_callback ild/t_ild_classify ild/t_ild_random

$(CPB)/cxx/%: $(T)/unit/%.c $(HDR) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CXX) -x c++ $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(ZYDIS)

$(CPB)/nostdio/%: $(T)/unit/%.c $(HDR) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(OPT) $(WARN) -DIPT_NO_STDIO $(CPPFLAGS) -o $@ $< $(ZYDIS)

COMPILE_BINS := $(addprefix $(CPB)/cxx/,$(CXX_UNITS)) \
	$(addprefix $(CPB)/nostdio/,$(NOSTDIO_UNITS))

TESTS += $(call cmd,$(T)/compile/builds $(CPB))
TESTS += $(call cmd,$(T)/compile/embed-check $(CPB)/embed $(IMPL))
TESTS += $(call cmd,$(T)/compile/static-check $(CPB) $(CONFORMANCE))
TESTS += $(COMPILE_BINS)
TEST_DEPS += $(IMPL) $(CPB)/static-bin $(COMPILE_BINS)

# Other compilers, optimisation levels and targets.
$(eval $(call unit_build,$(CPB)/clang-O3,$(CLANG) -O3 -g))
$(eval $(call unit_build,$(CPB)/m32,$(CC) -m32 $(OPT)))

$(CPB)/m32/ptdump $(CPB)/m32/ptxed: $(CPB)/m32/%: examples/%.c $(HDR) $(wildcard examples/*.h)
	@mkdir -p $(@D)
	$(CC) -m32 $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm -pthread

M32_UNITS := $(call unit_bins,$(CPB)/m32)
CLANG_UNITS := $(call unit_bins,$(CPB)/clang-O3)

# The compiler and level of this build (gcc -O2 by default) already build
# the implementation, the unit tests, the examples and the other test
# programs with -Werror, so opt-levels skips that pair (bench/bench.c is
# built by `make bench` only; gcc -O1 and -O3 still compile it here).
OPT_BUILT := $(if $(filter cc gcc,$(notdir $(CC))),gcc,$(notdir $(CC)))$(firstword $(filter -O%,$(OPT)))
TESTS += $(call cmd,$(T)/compile/opt-levels $(CPB)/opt $(OPT_BUILT))
TESTS += $(call cmd,$(T)/compile/targets $(CPB)/targets)
UNIT_BUILDS += $(CPB)/clang-O3 $(CPB)/m32
TESTS += $(call cmd,$(T)/conformance/run --ptdump $(CPB)/m32/ptdump \
	--ptxed $(CPB)/m32/ptxed --corpus $(CONFORMANCE) \
	--check $(T)/conformance/pass)
TEST_DEPS += $(CLANG_UNITS) $(M32_UNITS) $(CPB)/m32/ptdump $(CPB)/m32/ptxed

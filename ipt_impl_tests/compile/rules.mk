# img: the image and instruction-classification tests once more, built
# three other ways: under AddressSanitizer and UndefinedBehaviorSanitizer,
# as C++, and without stdio (IPT_NO_STDIO: no file sections, the callback
# image alone).  Each test file compiles its own static copy of the
# implementation, so none of these needs build/ipt_impl.o.

IMG_TESTS := img_callback ild_classify ild_random
IMG_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all

$(B)/img_asan_%: ipt_impl_tests/t_%.c $(HDR) ipt_impl_tests/check.h | $(B)
	$(CC) -O1 -g $(WARN) $(IMG_SAN) $(CPPFLAGS) -o $@ $< $(ZYDIS)

$(B)/img_cxx_%: ipt_impl_tests/t_%.c $(HDR) ipt_impl_tests/check.h | $(B)
	$(CXX) -x c++ -O1 $(WARN) $(CPPFLAGS) -o $@ $< $(ZYDIS)

$(B)/img_nostdio_%: ipt_impl_tests/t_%.c $(HDR) ipt_impl_tests/check.h | $(B)
	$(CC) -std=c99 -O1 $(WARN) -DIPT_NO_STDIO $(CPPFLAGS) -o $@ $< $(ZYDIS)

IMG_BINS := $(patsubst %,$(B)/img_asan_%,$(IMG_TESTS) img_files img_nomem) \
	    $(patsubst %,$(B)/img_cxx_%,$(IMG_TESTS) img_files) \
	    $(patsubst %,$(B)/img_nostdio_%,$(IMG_TESTS))

TESTS += $(IMG_BINS)
TEST_DEPS += $(IMG_BINS)

# The same script of image and image-section-cache calls against ipt.h and
# against Debian's libipt (separate programs: the symbols are the same).
$(B)/img_diff_ipt: ipt_impl_tests/img_diff.c $(B)/ipt_impl.o $(HDR) | $(B)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) -o $@ $< $(B)/ipt_impl.o $(ZYDIS)

$(B)/img_diff_libipt: ipt_impl_tests/img_diff.c | $(B)
	$(CC) $(OPT) $(WARN) -DUSE_LIBIPT -o $@ $< -lipt

TESTS += ipt_impl_tests/img_diff.sh
TEST_DEPS += $(B)/img_diff_ipt $(B)/img_diff_libipt

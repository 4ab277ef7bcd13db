# diff/rules.mk - ipt.h against Debian's libipt 2.0.5: each harness is one
# source built twice, against ipt.h and with -DUSE_LIBIPT against
# <intel-pt.h>, and a script compares the two outputs.
#
#   pkt   packet decoder on generated streams (pkt_diff.sh)
#   evt   query decoder on encoded streams; evt_diff.py lists every
#         deliberate 2.3-vs-2.0.5 difference it removes
#   img   a script of image and image-section-cache calls

DB := $(B)/diff

$(DB)/pkt_diff_ipt $(DB)/evt_diff_ipt $(DB)/img_diff_ipt: $(DB)/%_ipt: $(T)/diff/%.c $(IMPL) $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) $(ZYDIS) -lm

$(DB)/pkt_diff_libipt $(DB)/evt_diff_libipt $(DB)/img_diff_libipt: $(DB)/%_libipt: $(T)/diff/%.c
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CFLAGS) -DUSE_LIBIPT -o $@ $< -lipt

TESTS += $(call cmd,$(T)/diff/pkt_diff.sh $(DB)/pkt_diff_ipt $(DB)/pkt_diff_libipt)
TESTS += $(call cmd,$(T)/diff/evt_diff.sh $(DB))
TESTS += $(call cmd,$(T)/diff/img_diff.sh $(DB))
TEST_DEPS += $(foreach h,pkt evt img,$(DB)/$(h)_diff_ipt $(DB)/$(h)_diff_libipt)

# conformance/rules.mk - the corpus walked with the library's own API.  The
# corpus against the example tools is `make conformance` (the Makefile,
# ./run, ./pass).

CB := $(B)/conformance

# Both decoders agree, block by block and event by event, on every ptxed
# case of the libipt suite.
$(CB)/blk_agree: $(T)/conformance/blk_agree.c $(IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) $(ZYDIS) -lm

# The query loop of pt_qry_cond_branch(3) over the libipt cases, checked
# instruction by instruction against ptxed.exp.  It needs ipt.h's internal
# instruction classification, so it is its own implementation unit.
$(CB)/qry_conformance: $(T)/conformance/qry_conformance.c $(HDR)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(ZYDIS) -lm

TESTS += $(call cmd,$(CB)/blk_agree $(CONFORMANCE)/libipt)
TESTS += $(call cmd,$(CB)/qry_conformance $(CONFORMANCE))
TEST_DEPS += $(CB)/blk_agree $(CB)/qry_conformance

# ipt_pkt_next_batch and pt_pkt_next against the general packet decoder
# on every trace of the corpus and the synthesized sample, whole, cut at
# every byte, and as a ring split at every byte.
$(CB)/pkt_batch: $(T)/conformance/pkt_batch.c $(IMPL)
	@mkdir -p $(@D)
	$(CC) $(OPT) $(WARN) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(IMPL) $(ZYDIS) -lm

TESTS += $(call cmd,$(CB)/pkt_batch $(CONFORMANCE) examples/synth-sample/trace.pt)
TEST_DEPS += $(CB)/pkt_batch

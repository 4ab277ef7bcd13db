# pkt.mk - packet-layer tests that need more than a t_*.c program:
# compile checks (C99, C11, C++, IPT_STATIC in two TUs) and the
# differential test against Debian's libipt 2.0.5.

# The packet tests share sample packets.
$(B)/t_pkt_roundtrip $(B)/t_pkt_decoder: ipt_impl_tests/pkt_samples.h

# blk.mk - block and instruction decoder tests beyond the plain t_*.c rule.

# The block and instruction tests share a trace builder and drivers.
$(patsubst ipt_impl_tests/%.c,$(B)/%,$(wildcard ipt_impl_tests/t_blk_*.c ipt_impl_tests/t_insn_*.c)): ipt_impl_tests/t_blk_util.h

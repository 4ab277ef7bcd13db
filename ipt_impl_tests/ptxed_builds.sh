#!/usr/bin/env bash
# Runs t_ptxed against the IPT_NO_STDIO and C++ builds of examples/ptxed
# (see ptxed.mk) and adds up their "N passed, N failed" lines.
set -u
cd "$(dirname "$0")/.." || exit 1
pass=0 fail=0
for bin in build/ptxed_nostdio build/ptxed_cxx; do
	out=$(PTXED=$bin build/t_ptxed 2>&1)
	printf '%s\n' "$out" | grep -v '^[0-9]* passed' | sed "s|^|$bin: |"
	line=$(printf '%s\n' "$out" | tail -n 1)
	p=$(printf '%s' "$line" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p')
	f=$(printf '%s' "$line" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p')
	if [ -z "$p" ]; then
		echo "$bin: no summary"
		p=0 f=1
	fi
	pass=$((pass + p))
	fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

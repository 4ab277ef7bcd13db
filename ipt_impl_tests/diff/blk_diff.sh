#!/usr/bin/env bash
# Block boundaries against Debian's libipt 2.0.5: blk_diff built both ways
# over the ptxed cases of the libipt conformance suite and the block
# boundary regression cases (regress/cases/C-*), each plain, ending blocks
# on calls and ending them on jumps.  The cases blk_diff.skip names are
# left out: on those libipt 2.0.5's blocks differ from libipt 2.3's (newer
# packets and events, errata handling, code in an unknown mode, and a few
# boundaries 2.3 places differently), and ipt.h follows 2.3.  Ends with "N passed, N failed".
#
#   blk_diff.sh BUILD_DIR CORPUS_DIR   (blk_diff_ipt and blk_diff_libipt
#                                       in BUILD_DIR; suites in CORPUS_DIR)
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:?build dir}" && pwd)
corpus=$(cd "${2:?corpus dir}" && pwd)
suite=$corpus/libipt
pass=0 fail=0
a=$(mktemp) && l=$(mktemp) || exit 1
trap 'rm -f "$a" "$l"' EXIT
if [ ! -f "$suite/MANIFEST" ]; then
	echo "blk_diff: no suite at $suite"
	echo "0 passed, 1 failed"
	exit 1
fi
one() {	# DIR RAW FLAG NAME
	(cd "$1" && timeout 20 "$b/blk_diff_ipt" trace.pt "$2" $3) >"$a" 2>&1
	(cd "$1" && timeout 20 "$b/blk_diff_libipt" trace.pt "$2" $3) >"$l" 2>&1
	if cmp -s "$a" "$l"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $4 ${3:-plain}"
		diff "$l" "$a" | head -n 6 | sed 's/^/    /'
	fi
}
each() {	# SUITE_DIR SKIP [CASES]
	while IFS=$'\t' read -r tool name args; do
		[ "$tool" = ptxed ] || continue
		[[ $name == ${3:-*} ]] || continue
		grep -qxF "$name" "$2" && continue
		raw=$(printf '%s\n' "$args" | grep -o -- '--raw [^ ]*' | head -n 1)
		raw=${raw#--raw }
		[ -n "$raw" ] || continue
		for flag in "" call jump; do
			one "$1/cases/$name" "$raw" "$flag" "$name"
		done
	done <"$1/MANIFEST"
}
each "$suite" "$here/blk_diff.skip"
each "$corpus/regress" "$here/blk_diff.skip" 'C-*'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# evt_diff.sh [DIR] - the query decoder against Debian's libipt 2.0.5: run
# evt_diff built both ways (DIR/evt_diff_ipt, DIR/evt_diff_libipt; DIR is
# build/diff) over the same streams and compare with evt_diff.py (which
# lists the deliberate 2.3-vs-2.0.5 differences it removes).  Ends with
# "N passed, N failed"; exits non-zero on a difference.
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=${1:-build/diff}
a=$(mktemp) && l=$(mktemp) || exit 1
trap 'rm -f "$a" "$l"' EXIT
"$b/evt_diff_ipt" 0 400 >"$a" || { echo "evt_diff_ipt failed"; echo "0 passed, 1 failed"; exit 1; }
"$b/evt_diff_libipt" 0 400 >"$l" || { echo "evt_diff_libipt failed"; echo "0 passed, 1 failed"; exit 1; }
exec python3 "$here/evt_diff.py" "$a" "$l"

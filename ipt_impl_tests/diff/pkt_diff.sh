#!/usr/bin/env bash
# pkt_diff.sh [IPT-PROGRAM LIBIPT-PROGRAM [STREAMS]]
# Runs both builds of pkt_diff.c (by default build/diff/pkt_diff_ipt and
# build/diff/pkt_diff_libipt) and compares their output stream by stream;
# each stream whose lines differ counts as one failure.
set -u
set -- "${1:-build/diff/pkt_diff_ipt}" "${2:-build/diff/pkt_diff_libipt}" "${3:-}"
ours=$("$1" $3 2>&1) || { echo "$1 failed"; echo "0 passed, 1 failed"; exit 1; }
theirs=$("$2" $3 2>&1) || { echo "$2 failed"; echo "0 passed, 1 failed"; exit 1; }
total=$(printf '%s\n' "$ours" | awk '$2 == "S"' | wc -l)
differ=$(diff <(printf '%s\n' "$ours") <(printf '%s\n' "$theirs") |
	awk '/^[<>] / { print $2 }' | sort -un)
failed=$(printf '%s' "$differ" | grep -c . || true)
if [ "$failed" -gt 0 ]; then
	echo "streams that differ (ipt.h <, libipt >):"
	for s in $(printf '%s\n' "$differ" | head -n 3); do
		diff <(printf '%s\n' "$ours" | awk -v s="$s" '$1 == s') \
		     <(printf '%s\n' "$theirs" | awk -v s="$s" '$1 == s') | head -n 12
	done
fi
if [ "$total" -lt 100 ]; then
	echo "too few streams: $total"
	failed=$((failed + 1))
fi
echo "$((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]

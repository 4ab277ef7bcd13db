#!/usr/bin/env bash
# ptcov_cli.sh - examples/ptcov's command line and output, on the shipped
# synthesized trace (examples/synth-sample) and a libipt conformance case:
# every option, the default report, --edges (sorted, counts adding up to
# the reported edges), --bitmap (the size asked for, the hash reported),
# --raw ranges against --raw-list, --libxdc, --filter, and the errors.
# Run from the project root.
set -u
P=examples/ptcov
S=examples/synth-sample
C=${CONFORMANCE:-../shared/conformance}/libipt/cases/loop-tnt-64
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0

ok() {	# ok NAME CONDITION-STATUS
	if [ "$2" -eq 0 ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $1"
	fi
}

# The sample's image as a --raw-list (absolute paths) and as --raw options.
raw=()
while read -r begin end file _; do
	printf '%s %x %s\n' "$begin" $((0x$end - 0x$begin)) "$PWD/$S/$file"
	raw+=(--raw "$S/$file:0x$begin")
done <"$S/image.txt" >"$T/list"
# One entry relative to the list's own directory.
mkdir -p "$T/sub"
cp "$S/$(awk 'NR == 1 { print $3 }' "$S/image.txt")" "$T/sub/first.bin"
awk 'NR == 1 { printf "%s %x sub/first.bin\n", $1, 1 }' "$S/image.txt" >"$T/rel"

# The default report: its lines, in order.
out=$("$P" --repeat 2 --raw-list "$T/list" --pt "$S/trace.pt" 2>&1)
ok report-status $?
fields=$(printf '%s\n' "$out" | cut -d: -f1 | tr '\n' ',')
[ "$fields" = "trace bytes,edges,distinct edges,bitmap entries,errors,first pass,warm passes,bitmap hash," ]
ok report-lines $?
size=$(stat -c %s "$S/trace.pt")
printf '%s\n' "$out" | grep -qx "trace bytes:    $size"
ok report-bytes $?
printf '%s\n' "$out" | grep -qx "errors:         0, 0 bytes skipped"
ok report-errors $?
printf '%s\n' "$out" | grep -Eq '^first pass: +[0-9.]+ ms, [0-9.]+ MB/s$'
ok report-first $?
printf '%s\n' "$out" | grep -Eq '^warm passes: +[0-9.]+ ms, [0-9.]+ MB/s \(2\)$'
ok report-warm $?
edges=$(printf '%s\n' "$out" | awk '/^edges:/ { print $2 }')
distinct=$(printf '%s\n' "$out" | awk '/^distinct edges:/ { print $3 }')
hash=$(printf '%s\n' "$out" | awk '/^bitmap hash:/ { print $3 }')
[ "${edges:-0}" -gt 1000 ] && [ "${distinct:-0}" -gt 100 ]
ok report-counts $?

# --raw options give the same as --raw-list; --repeat 0 has no warm line.
out2=$("$P" --repeat 0 "${raw[@]}" --pt "$S/trace.pt" 2>&1)
ok raw-status $?
[ "$(printf '%s\n' "$out2" | awk '/^bitmap hash:/ { print $3 }')" = "$hash" ]
ok raw-same-hash $?
! printf '%s\n' "$out2" | grep -q '^warm passes'
ok repeat-zero $?

# --edges: "from to count kind", sorted by (from, to), counts add up.
"$P" --edges --repeat 0 --raw-list "$T/list" --pt "$S/trace.pt" >"$T/edges"
ok edges-status $?
awk 'NF != 4 || length($1) != 16 || $1 !~ /^[0-9a-f]+$/ ||
     length($2) != 16 || $2 !~ /^[0-9a-f]+$/ ||
     $4 !~ /^(taken|not-taken|jump|call|return|far|async|enable|disable)$/ \
     { bad = 1 } END { exit bad }' "$T/edges"
ok edges-format $?
sort -c -k1,1 -k2,2 "$T/edges"
ok edges-sorted $?
[ "$(wc -l <"$T/edges")" -eq "$distinct" ]
ok edges-distinct $?
[ "$(awk '{ n += $3 } END { print n }' "$T/edges")" -eq "$edges" ]
ok edges-total $?
grep -q ' return$' "$T/edges" && grep -q ' taken$' "$T/edges" &&
	grep -q ' not-taken$' "$T/edges"
ok edges-kinds $?

# --bitmap: --size bytes, the reported FNV-1a hash.
"$P" --repeat 0 --size 4096 --bitmap "$T/map" --raw-list "$T/list" \
	--pt "$S/trace.pt" >"$T/out3"
ok bitmap-status $?
[ "$(stat -c %s "$T/map")" -eq 4096 ]
ok bitmap-size $?
fnv=$(python3 -c '
import sys
h = 0xcbf29ce484222325
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("%016x" % h)' "$T/map")
grep -qx "bitmap hash:    $fnv" "$T/out3"
ok bitmap-hash $?

# --libxdc: conditional branches only.
"$P" --libxdc --edges --repeat 0 --raw-list "$T/list" --pt "$S/trace.pt" \
	>"$T/xdc"
ok libxdc-status $?
[ -s "$T/xdc" ] && ! grep -qv -E ' (taken|not-taken)$' "$T/xdc"
ok libxdc-kinds $?
[ "$(grep -E ' (taken|not-taken)$' "$T/edges" | md5sum)" = "$(md5sum <"$T/xdc")" ]
ok libxdc-same-edges $?

# --filter: only edges from inside.
lo=$(awk 'NR == 1 { print $1 }' "$T/edges")
"$P" --filter "$lo-${lo%?}f" --edges --repeat 0 --raw-list "$T/list" \
	--pt "$S/trace.pt" >"$T/filtered"
ok filter-status $?
[ -s "$T/filtered" ] &&
	[ "$(wc -l <"$T/filtered")" -lt "$(wc -l <"$T/edges")" ] &&
	! awk -v lo="$lo" '$4 != "enable" && $1 != lo { bad = 1 } END { exit !bad }' "$T/filtered"
ok filter-edges $?

# --cpu, a range in --raw, on a conformance case.
if [ -d "$C" ]; then
	"$P" --cpu 6/85 --repeat 1 --raw "$C/image.bin:0x0-0x14:0x100000" \
		--pt "$C/trace.pt" >"$T/conf" 2>&1
	ok conformance-status $?
	grep -Eq '^edges: +[1-9]' "$T/conf" &&
		grep -q '^errors:         0, 0 bytes skipped' "$T/conf"
	ok conformance-report $?
fi

# A list with a path relative to it.
"$P" --repeat 0 --raw-list "$T/rel" --pt "$S/trace.pt" >/dev/null 2>&1
ok relative-list $?

# Errors: exit status 1 and a message.
err() {	# err NAME ARGS...: must fail with a message on stderr
	local name=$1 msg
	shift
	msg=$("$P" "$@" 2>&1 >/dev/null)
	[ $? -eq 1 ] && [ -n "$msg" ]
	ok "$name" $?
}
err no-args
err no-pt --raw-list "$T/list"
err no-code --pt "$S/trace.pt"
err unknown --bogus --raw-list "$T/list" --pt "$S/trace.pt"
err missing-value --raw-list "$T/list" --pt
err bad-size --size 1000 --raw-list "$T/list" --pt "$S/trace.pt"
err bad-size-text --size 4k --raw-list "$T/list" --pt "$S/trace.pt"
err bad-repeat --repeat x --raw-list "$T/list" --pt "$S/trace.pt"
err bad-filter --filter 10 --raw-list "$T/list" --pt "$S/trace.pt"
err bad-filter-order --filter 20-10 --raw-list "$T/list" --pt "$S/trace.pt"
err five-filters --filter 1-2 --filter 1-2 --filter 1-2 --filter 1-2 \
	--filter 1-2 --raw-list "$T/list" --pt "$S/trace.pt"
err bad-cpu --cpu x --raw-list "$T/list" --pt "$S/trace.pt"
err bad-raw --raw "$S/trace.pt" --pt "$S/trace.pt"
err missing-raw --raw "$T/nothing:0x1000" --pt "$S/trace.pt"
err missing-list --raw-list "$T/nothing" --pt "$S/trace.pt"
printf 'zz\n' >"$T/badlist"
err bad-list --raw-list "$T/badlist" --pt "$S/trace.pt"
err missing-pt --raw-list "$T/list" --pt "$T/nothing"
err unwritable-bitmap --bitmap "$T/no/such/dir" --raw-list "$T/list" \
	--pt "$S/trace.pt"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

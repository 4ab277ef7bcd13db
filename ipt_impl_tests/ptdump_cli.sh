#!/usr/bin/env bash
# ptdump_cli.sh - examples/ptdump's command line: options, errors, exit
# statuses, file ranges and the output columns, as libipt's ptdump has them.
# The libipt conformance suite covers packet and timing output in depth;
# this covers what it does not: every error message and option switch.
set -u
P=examples/ptdump
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0

# expect NAME STATUS EXPECTED-OUTPUT -- ARGS...: stdout and stderr together.
expect() {
	local name=$1 status=$2 want=$3 got rc
	shift 4
	got=$("$P" "$@" 2>&1)
	rc=$?
	if [ "$got" == "$want" ] && [ "$rc" -eq "$status" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		printf 'FAIL %s (exit %d, want %d)\n--- want\n%s\n--- got\n%s\n' \
			"$name" "$rc" "$status" "$want" "$got"
	fi
}

# A PSB+ with TSC and CBR, then PAD and MTC.
psb='\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82\x02\x82'
printf "\\x00\\x00${psb}\\x19\\x10\\x32\\x54\\x76\\x00\\x00\\x00\\x02\\x03\\x20\\x00\\x02\\x23\\x00\\x59\\x05" > "$T/t.pt"
: > "$T/empty.pt"

expect no-file 1 "$P: No processor trace file specified." --
expect unknown 1 "$P: unknown option: --bogus." -- --bogus "$T/t.pt"
expect dash 1 "$P: unknown option: -." -- - "$T/t.pt"
expect two-files 1 "$P: [<options>] <ptfile>.  Use --help or -h for help." -- a b
expect time-tcal 1 "$P: specify either --time or --tcal." -- --time --tcal x
expect tcal-time 1 "$P: specify either --time or --tcal." -- --tcal --time x
expect missing 1 "$P: --mtc-freq: missing argument." -- --mtc-freq
expect missing-dd 1 "$P: --nom-freq: missing argument." -- --nom-freq --raw x
expect bad-arg 1 "$P: --mtc-freq: bad argument: 3x." -- --mtc-freq 3x x
expect too-big-8 1 "$P: --nom-freq: value too big: 0x100." -- --nom-freq 0x100 x
expect too-big-32 1 "$P: --cpuid-0x15.eax: value too big: 4294967296." -- --cpuid-0x15.eax 4294967296 x
expect ebx 1 "$P: --cpuid-0x15.ebx: bad argument: -." -- --cpuid-0x15.ebx - x
expect cpu-missing 1 "$P: --cpu: missing argument." -- --cpu
expect cpu-auto 1 "$P: cpu must be specified as f/m[/s]" -- --cpu auto x
expect cpu-bad 1 "$P: cpu must be specified as f/m[/s]" -- --cpu 6/256 x
expect no-open 1 "$P: failed to open $T/none.pt: 2." -- "$T/none.pt"
expect empty 1 "$P: bad offset 0x0 into $T/empty.pt." -- "$T/empty.pt"
expect bad-offset 1 "$P: bad offset 0x23 into $T/t.pt." -- "$T/t.pt:0x23"
expect bad-range 1 "$P: bad range 0x100 in $T/t.pt." -- "$T/t.pt:2-0x100"
expect backwards 2 "$P: bad file $T/t.pt:4-2: invalid argument." -- "$T/t.pt:4-2"

all="0000000000000002  psb
0000000000000012  tsc        76543210
000000000000001a  cbr        20
000000000000001e  psbend
0000000000000020  pad
0000000000000021  mtc        5"
expect dump 0 "$all" -- "$T/t.pt"
expect cpu-none 0 "$all" -- --cpu 6/78 --cpu none "$T/t.pt"
expect unknown-cpu 0 "[0: failed to determine errata: unknown cpu]
$all" -- --cpu 6/1 "$T/t.pt"
expect quiet 0 "" -- --quiet "$T/t.pt"
expect no-pad 0 "0000000000000002  psb
0000000000000012  tsc        76543210
000000000000001a  cbr        20
000000000000001e  psbend
0000000000000021  mtc        5" -- --no-pad "$T/t.pt"
expect no-timing 0 "0000000000000002  psb
000000000000001e  psbend
0000000000000020  pad" -- --no-timing "$T/t.pt"
expect raw 0 "02820282028202820282028202820282  psb
1910325476000000                  tsc        76543210
02032000                          cbr        20
0223                              psbend
00                                pad
5905                              mtc        5" -- --no-offset --raw "$T/t.pt"
# The range is a file of its own: offsets start at zero.
expect range 0 "0000000000000000  psb
0000000000000010  tsc        76543210" -- "$T/t.pt:2-0x1a"
expect no-sync 0 "0000000000000000  pad
0000000000000001  pad
0000000000000002  psb" -- --no-sync "$T/t.pt:0-0x12"
# A colon suffix that is no range belongs to the name.
expect colon-name 1 "$P: failed to open $T/t.pt:x: 2." -- "$T/t.pt:x"
expect time 0 "0000000000000002  psb
0000000000000012  tsc        76543210                  tsc  0000000076543210
000000000000001a  cbr        20
000000000000001e  psbend
0000000000000020  pad
0000000000000021  mtc        5                         tsc  0000000076543210" -- --time "$T/t.pt"
expect tcal 0 "0000000000000002  psb
[12: error printing time: no timing information]
0000000000000012  tsc        76543210                  fcr  <unavailable>
000000000000001a  cbr        20                        fcr  +0.156
000000000000001e  psbend
0000000000000020  pad
0000000000000021  mtc        5                         fcr  +0.000" -- --tcal --time-delta --nom-freq 5 "$T/t.pt"

# PSB+ with TSC 0x1000, TMA (CTC 0x10, FC 0) and CBR 2; then MTC 0x12 and
# CYC 10.  At 2 FC per CTC tick the MTC is 4 later; the nominal ratio 4
# over CBR 2 gives 2 FC per cycle, and of the CYC's 10 cycles 2 belong to
# the MTC period before: 16 more.
printf "${psb}\\x19\\x00\\x10\\x00\\x00\\x00\\x00\\x00\\x02\\x73\\x10\\x00\\x00\\x00\\x00\\x02\\x03\\x02\\x00\\x02\\x23\\x59\\x12\\x53" > "$T/m.pt"
head="0000000000000000  psb
0000000000000010  tsc        1000                      tsc  +1000
0000000000000018  tma        10, 0                     tsc  +0
000000000000001f  cbr        2
0000000000000023  psbend"
expect mtc-cyc 0 "$head
0000000000000025  mtc        12                        tsc  +4
0000000000000027  cyc        a                         tsc  +10" -- \
	--time --time-delta --mtc-freq 0 --cpuid-0x15.eax 1 \
	--cpuid-0x15.ebx 2 --nom-freq 4 "$T/m.pt"
expect no-cpuid 0 "$head
[25: error updating time: bad configuration]
0000000000000025  mtc        12                        tsc  +0
[27: error updating time: bad configuration]
0000000000000027  cyc        a                         tsc  +0" -- \
	--time --time-delta --nom-freq 4 "$T/m.pt"
expect no-cyc 0 "$head
0000000000000025  mtc        12                        tsc  +4" -- \
	--time --time-delta --mtc-freq 0 --cpuid-0x15.eax 1 \
	--cpuid-0x15.ebx 2 --nom-freq 4 --no-cyc "$T/m.pt"
expect no-tcal 0 "$head
0000000000000025  mtc        12                        tsc  +4
[27: error updating time: no calibration]
0000000000000027  cyc        a                         tsc  +0" -- \
	--time --time-delta --mtc-freq 0 --cpuid-0x15.eax 1 \
	--cpuid-0x15.ebx 2 --nom-freq 4 --no-tcal "$T/m.pt"

got=$("$P" --help 2>&1)
case $got in "usage: $P [<options>] <ptfile>[:<from>[-<to>]"*"--cpuid-0x15.ebx"*)
	pass=$((pass + 1));; *) fail=$((fail + 1)); echo "FAIL help";; esac
got=$("$P" -h --bogus 2>&1) && [ "${got#usage: }" != "$got" ] &&
	pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL -h"; }
got=$("$P" --version 2>&1)
case $got in "$P-"*" / libipt-2.3.0"*) pass=$((pass + 1));;
	*) fail=$((fail + 1)); echo "FAIL version: $got";; esac

echo "ptdump-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

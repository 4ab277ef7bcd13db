#!/usr/bin/env bash
# Runs the image/iscache call script (img_diff.c) built against ipt.h and
# against Debian's libipt, and compares their outputs line by line.
#   img_diff.sh [DIR]   DIR holds img_diff_ipt and img_diff_libipt
#                       (build/diff)
set -u
b=${1:-build/diff}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/ipt" "$dir/lib"
"$b/img_diff_ipt" "$dir/ipt" >"$dir/ipt.out" || echo "ipt.h run failed"
"$b/img_diff_libipt" "$dir/lib" >"$dir/lib.out" || echo "libipt run failed"
# The file names differ by directory only; compare what follows them.
sed -i "s|$dir/ipt|DIR|g" "$dir/ipt.out"
sed -i "s|$dir/lib|DIR|g" "$dir/lib.out"
total=$(wc -l <"$dir/lib.out")
failed=$(diff "$dir/lib.out" "$dir/ipt.out" | grep -c '^>')
missing=$(diff "$dir/lib.out" "$dir/ipt.out" | grep -c '^<')
[ "$missing" -gt "$failed" ] && failed=$missing
diff -u "$dir/lib.out" "$dir/ipt.out" | head -40
[ "$total" -gt 100 ] || { echo "too little output"; failed=$((failed + 1)); }
echo "$((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]

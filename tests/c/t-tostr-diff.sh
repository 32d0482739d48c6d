#!/usr/bin/env bash
# fi_tostr/fi_tostr_r print exactly what upstream's library prints: the same
# upstream-built program runs once on Debian's libfabric and once on ours.
set -eu
exe=$OXI_WORK/tostr_dump
gcc -std=gnu99 -Wall -Werror -o "$exe" "$OXI_ROOT/tests/c/tostr_dump.c" -lfabric
# fid values print the data's address, which differs between runs.
strip_fid() { sed 's/fid: 0x[0-9a-f]*/fid: ADDR/'; }
"$exe" | strip_fid >"$exe.upstream"
LD_LIBRARY_PATH=$OXI_LIB "$exe" | strip_fid >"$exe.ours"
if diff -u "$exe.upstream" "$exe.ours" >"$exe.diff"; then
	echo "fi_tostr output identical ($(wc -l <"$exe.ours") lines)"
else
	head -60 "$exe.diff"
	exit 1
fi

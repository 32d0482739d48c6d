#!/usr/bin/env bash
# Bad input never crashes: every exported function and the object vtables
# with NULL and invalid arguments return the documented codes. Runs once
# plainly and once under valgrind (errors and definite leaks fail).
set -eu
exe=$OXI_WORK/badinput
gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/badinput.c" -L"$OXI_LIB" -lfabric
LD_LIBRARY_PATH=$OXI_LIB timeout 60 "$exe"
LD_LIBRARY_PATH=$OXI_LIB timeout 300 valgrind -q --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite "$exe" >"$exe.vg.out" 2>"$exe.vg.err" || {
	cat "$exe.vg.out" "$exe.vg.err"
	echo "valgrind found errors"
	exit 1
}
tail -1 "$exe.vg.out"
echo "valgrind: clean"

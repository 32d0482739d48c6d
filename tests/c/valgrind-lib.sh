# Shared by the tests that build one C program and run it plainly and under
# valgrind (sourced, not a test).
# plain_and_valgrind NAME: builds tests/c/NAME.c against our library, runs
# it, then runs it under valgrind (errors and definite leaks fail); prints
# the valgrind run's last line. Exits the test on failure.
plain_and_valgrind() {
	local exe=$OXI_WORK/$1
	gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/$1.c" -L"$OXI_LIB" -lfabric || exit 1
	LD_LIBRARY_PATH=$OXI_LIB timeout 60 "$exe" || exit 1
	LD_LIBRARY_PATH=$OXI_LIB timeout 300 valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite "$exe" >"$exe.vg.out" 2>"$exe.vg.err" || {
		cat "$exe.vg.out" "$exe.vg.err"
		echo "valgrind found errors"
		exit 1
	}
	tail -1 "$exe.vg.out"
	echo "valgrind: clean"
}

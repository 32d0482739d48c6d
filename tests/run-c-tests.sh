#!/usr/bin/env bash
# Runs every C-level test of the built library (build/lib) and prints the
# plain summary line "N passed, N failed". Each test is a script in
# tests/c/ named t-*.sh that exits 0 on success; its output is shown only on
# failure. Tests are independent and run in parallel (two at a time).
# Arguments name a subset (`tests/run-c-tests.sh t-killpeer t-badframes`).
set -u
cd "$(dirname "$0")/.."
root=$PWD
export OXI_ROOT=$root
export OXI_LIB=$root/build/lib
export OXI_WORK=$root/build/tests
# Tests talk over loopback only: our sockets provider lists (and so binds)
# nothing else. A test that is about interfaces unsets it itself.
export FI_SOCKETS_IFACE=lo
# The release the library says it is, written down once for the tests (not
# read from the headers, so a header, fi_tostr, fi_version or pkg-config
# that drifts from it fails): fi_tostr(FI_TYPE_VERSION), fi_info's
# "libfabric:" line, pkg-config's version and the headers' FI_*_VERSION.
export OXI_API_RELEASE=2.6.0
mkdir -p "$OXI_WORK"
jobs=${OXI_TEST_JOBS:-2}

if [ $# -gt 0 ]; then
	tests=()
	for n in "$@"; do tests+=( "tests/c/${n%.sh}.sh" ); done
else
	tests=( $(ls tests/c/t-*.sh 2>/dev/null) )
fi
if [ ${#tests[@]} -eq 0 ]; then
	echo "no C tests found" >&2
	exit 1
fi

run_one() {
	local t=$1 name out
	name=$(basename "$t" .sh)
	out=$OXI_WORK/$name.log
	if timeout 600 bash "$t" >"$out" 2>&1; then
		echo "PASS $name"
	else
		echo "FAIL $name (exit $?)"
		sed 's/^/    /' "$out" | tail -40
	fi
}
export -f run_one

results=$(printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}')
echo "$results"
passed=$(grep -c '^PASS ' <<<"$results")
failed=$(grep -c '^FAIL ' <<<"$results")
echo "c-tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

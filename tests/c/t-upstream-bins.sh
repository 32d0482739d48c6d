#!/usr/bin/env bash
# Debian's upstream-built tools run on our library: fi_info --version, -l,
# -e, and fi_strerror for every code 0..300 prints exactly what it prints
# against upstream's library.
set -eu
export FI_LOG_LEVEL=
run() { LD_LIBRARY_PATH=$OXI_LIB "$@"; }

out=$(run fi_info --version)
echo "$out"
# "libfabric api" is the API fi_info was built against (1.17); "libfabric"
# is the library's release, fi_tostr(FI_TYPE_VERSION): ours, 2.6's.
grep -q '^libfabric api: 1.17$' <<<"$out" || { echo "fi_info --version: wrong API version"; exit 1; }
grep -qx "libfabric: $OXI_API_RELEASE" <<<"$out" || { echo "fi_info --version: want libfabric: $OXI_API_RELEASE"; exit 1; }
# fi_info must really have loaded our library, not the system one.
lib=$(LD_LIBRARY_PATH=$OXI_LIB LD_DEBUG=libs fi_info --version 2>&1 | sed -n 's/.*calling init: \(.*libfabric.*\)/\1/p' | head -1)
case "$lib" in "$OXI_LIB"/*) ;; *) echo "fi_info loaded '$lib', not ours"; exit 1;; esac

run fi_info -l >/dev/null
out=$(run fi_info -e)
grep -q '^# FI_PROVIDER: String' <<<"$out" || { echo "fi_info -e lacks FI_PROVIDER"; echo "$out"; exit 1; }
grep -q '^# FI_LOG_LEVEL: String' <<<"$out" || { echo "fi_info -e lacks FI_LOG_LEVEL"; exit 1; }

bad=0
for i in $(seq 0 300); do
	a=$(fi_strerror "$i" 2>&1 || true)
	b=$(run fi_strerror "$i" 2>&1 || true)
	if [ "$a" != "$b" ]; then
		echo "fi_strerror $i: upstream '$a', ours '$b'"
		bad=$((bad + 1))
	fi
done
[ $bad -eq 0 ] || exit 1
echo "fi_strerror 0..300 identical"

#!/usr/bin/env bash
# The library exports exactly the versioned symbols Debian's libfabric 1.17
# exports, with the same default (@@) versions, and has SONAME libfabric.so.1.
set -eu
ours=$OXI_LIB/libfabric.so.1
theirs=$(ls /usr/lib/x86_64-linux-gnu/libfabric.so.1 2>/dev/null || true)
[ -e "$ours" ] || { echo "missing $ours"; exit 1; }
[ -n "$theirs" ] || { echo "Debian's libfabric1 is not installed"; exit 1; }

# "name version" per defined function symbol; (FABRIC_x) marks a compat one.
syms() {
	objdump -T "$1" | awk '$2 == "g" && $4 == ".text" { print $7, $6 }' | sort
}
diff <(syms "$theirs") <(syms "$ours") && echo "versioned symbols identical: $(syms "$ours" | wc -l)"
n=$(syms "$ours" | wc -l)
[ "$n" -eq 26 ] || { echo "expected 26 versioned function symbols, got $n"; exit 1; }

# No other global symbol: only fi_* functions and the version nodes.
extra=$(nm -D --defined-only "$ours" | awk '{print $3}' | grep -v -E '^(fi_[a-z_]+(@@?FABRIC_1\.[0-9])?|FABRIC_1\.[0-9])$' || true)
[ -z "$extra" ] || { echo "unexpected exported symbols:"; echo "$extra"; exit 1; }

soname=$(readelf -d "$ours" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libfabric.so.1 ] || { echo "SONAME is '$soname'"; exit 1; }
for l in libfabric.so libfabric.so.1; do
	[ -L "$OXI_LIB/$l" ] || { echo "$l is not a symlink"; exit 1; }
done
echo ok

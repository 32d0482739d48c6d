#!/usr/bin/env bash
# The library exports exactly upstream's newest released symbol map
# (tests/c/exports-upstream.list: FABRIC_1.0 ... FABRIC_1.9, defaults on the
# newest), every symbol@version Debian 12's libfabric 1.17 and Debian 13's
# 2.1 export (a default there may be a compat version here, as upstream's
# newer releases do), nothing else, and has SONAME libfabric.so.1.
set -eu
ours=$OXI_LIB/libfabric.so.1
deb12=$(ls /usr/lib/x86_64-linux-gnu/libfabric.so.1 2>/dev/null || true)
[ -e "$ours" ] || { echo "missing $ours"; exit 1; }
[ -n "$deb12" ] || { echo "Debian's libfabric1 is not installed"; exit 1; }
root=$("$OXI_ROOT/tests/trixie/root.sh")
deb13=$root/usr/lib/x86_64-linux-gnu/libfabric.so.1

# "name version" per defined function symbol; (FABRIC_x) marks a compat one.
syms() {
	objdump -T "$1" | awk '$2 == "g" && $4 == ".text" { print $7, $6 }' | sort
}
diff <(grep -v '^#' "$OXI_ROOT/tests/c/exports-upstream.list") <(syms "$ours") &&
	echo "versioned symbols identical to upstream's newest map: $(syms "$ours" | wc -l)"
n=$(syms "$ours" | wc -l)
[ "$n" -eq 36 ] || { echo "expected 36 versioned function symbols, got $n"; exit 1; }
grep -q 'fi_getinfo FABRIC_1.9$' <(syms "$ours") || { echo "fi_getinfo@@FABRIC_1.9 is not the default"; exit 1; }

# Everything an older library exported is there, at the same version.
for lib in "$deb12" "$deb13"; do
	[ -e "$lib" ] || { echo "missing $lib"; exit 1; }
	missing=$(comm -23 <(syms "$lib" | tr -d '()') <(syms "$ours" | tr -d '()'))
	[ -z "$missing" ] || { echo "exported by $lib but not by ours:"; echo "$missing"; exit 1; }
	echo "every symbol of $lib present: $(syms "$lib" | wc -l)"
done

# No other global symbol: only fi_* functions and the version nodes.
extra=$(nm -D --defined-only "$ours" | awk '{print $3}' | grep -v -E '^(fi_[a-z_0-9]+(@@?FABRIC_1\.[0-9])?|FABRIC_1\.[0-9])$' || true)
[ -z "$extra" ] || { echo "unexpected exported symbols:"; echo "$extra"; exit 1; }

soname=$(readelf -d "$ours" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libfabric.so.1 ] || { echo "SONAME is '$soname'"; exit 1; }
for l in libfabric.so libfabric.so.1; do
	[ -L "$OXI_LIB/$l" ] || { echo "$l is not a symlink"; exit 1; }
done
echo ok

#!/usr/bin/env bash
# make install PREFIX=... installs the library, its links, the headers and
# libfabric.pc; a program built with pkg-config against that prefix runs
# on the installed library.
set -eu
prefix=$OXI_WORK/prefix-$$
make -C "$OXI_ROOT" -s install PREFIX="$prefix" >/dev/null
for f in lib/libfabric.so lib/libfabric.so.1 include/rdma/fabric.h include/rdma/fi_endpoint.h \
	include/rdma/providers/fi_log.h include/rdma/providers/fi_prov.h lib/pkgconfig/libfabric.pc; do
	[ -e "$prefix/$f" ] || { echo "missing $prefix/$f"; exit 1; }
done
cat >"$prefix/hello.c" <<'C'
#include <stdio.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
int main(void)
{
	uint32_t v = fi_version();
	printf("%u.%u %s\n", FI_MAJOR(v), FI_MINOR(v), fi_strerror(FI_ETRUNC));
	printf("%d.%d.%d %s\n", FI_MAJOR_VERSION, FI_MINOR_VERSION, FI_REVISION_VERSION,
	       fi_tostr(&v, FI_TYPE_VERSION));
	return 0;
}
C
flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs libfabric)
echo "pkg-config: $flags"
gcc -o "$prefix/hello" "$prefix/hello.c" $flags
out=$(LD_LIBRARY_PATH=$prefix/lib "$prefix/hello")
# One story: fi_version(), the installed headers, fi_tostr(FI_TYPE_VERSION)
# and pkg-config all name the same release.
api=${OXI_API_RELEASE%.*}
want="$api Truncation error
$OXI_API_RELEASE $OXI_API_RELEASE"
[ "$out" = "$want" ] || { echo "unexpected output: $out (want: $want)"; exit 1; }
pcv=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --modversion libfabric)
[ "$pcv" = "$OXI_API_RELEASE" ] || { echo "pkg-config version $pcv, want $OXI_API_RELEASE"; exit 1; }
LD_LIBRARY_PATH=$prefix/lib ldd "$prefix/hello" | grep -q "libfabric.so.1 => $prefix/lib/libfabric.so.1" ||
	{ echo "the program did not resolve the installed library"; LD_LIBRARY_PATH=$prefix/lib ldd "$prefix/hello"; exit 1; }
echo "installed and used: $(tr "\n" " " <<<"$out"); pkg-config version $pcv"
rm -rf "$prefix"

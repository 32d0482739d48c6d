#!/usr/bin/env bash
# Every ABI node's entry points accept that node's fi_info layouts (guard
# pages and valgrind catch any access past an old struct's end), and a
# program built against our headers binds the default versions
# fi_getinfo@FABRIC_1.9 and fi_fabric@FABRIC_1.1.
set -eu
exe=$OXI_WORK/compat
gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/compat.c" -ldl
LD_LIBRARY_PATH=$OXI_LIB timeout 60 "$exe"
LD_LIBRARY_PATH=$OXI_LIB timeout 300 valgrind -q --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite "$exe" >/dev/null 2>"$exe.vg" || { cat "$exe.vg"; exit 1; }
echo "valgrind: clean"

# Default versions bound by a normal build against our headers.
cat >"$exe-bind.c" <<'C'
#include <rdma/fabric.h>
int main(void)
{
	struct fi_info *i = NULL;
	struct fid_fabric *f = NULL;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &i) == 0)
		fi_freeinfo(i);
	(void) fi_fabric(NULL, &f, NULL);
	return 0;
}
C
gcc -I"$OXI_ROOT/include" -o "$exe-bind" "$exe-bind.c" -L"$OXI_LIB" -lfabric
syms=$(objdump -T "$exe-bind" | awk '/fi_getinfo|fi_fabric|fi_freeinfo/ {print $(NF-1), $NF}' | sort)
echo "$syms"
grep -Eq 'FABRIC_1\.9\)? fi_getinfo' <<<"$syms" || { echo "fi_getinfo not bound at FABRIC_1.9"; exit 1; }
grep -Eq 'FABRIC_1\.1\)? fi_fabric' <<<"$syms" || { echo "fi_fabric not bound at FABRIC_1.1"; exit 1; }

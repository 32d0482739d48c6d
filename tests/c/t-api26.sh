#!/usr/bin/env bash
# A program using what libfabric 2.2-2.6 added to the API (tests/c/api26.c)
# compiles against our headers (C11 -pedantic -Werror), links against our
# library and runs on it. No upstream 2.6 library is at hand to run it on
# (Debian 13's 2.1 lacks FABRIC_1.9, which the program binds).
set -eu
exe=$OXI_WORK/api26
gcc -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic -I"$OXI_ROOT/include" \
	-o "$exe" "$OXI_ROOT/tests/c/api26.c" -L"$OXI_LIB" -lfabric
objdump -T "$exe" | grep -q 'FABRIC_1\.9.*fi_getinfo' || { echo "not bound at FABRIC_1.9"; exit 1; }
LD_LIBRARY_PATH=$OXI_LIB timeout 60 "$exe"

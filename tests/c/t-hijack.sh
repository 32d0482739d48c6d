#!/usr/bin/env bash
# A raw local process that speaks the wire protocol by hand takes no other
# peer's traffic: forged clear-to-send frames (guessed message ids) get no
# data, and a Hello replaying a peer's address (live or not yet connected)
# receives none of that peer's messages; the legitimate peers see neither.
# See tests/c/hijack.c and the README's threat model.
set -eu
exe=$OXI_WORK/hijack
gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/hijack.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
timeout 120 "$exe"

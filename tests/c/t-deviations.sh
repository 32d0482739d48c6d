#!/usr/bin/env bash
# Smaller behaviours pinned by the man pages and upstream (tests/c/deviations.c):
# fi_connect enables an MSG endpoint implicitly; CQs, counters and AVs of
# another domain do not bind (-FI_EINVAL); fi_eq_read into a too-small
# buffer is -FI_ETOOSMALL and keeps the entry; fi_cq_strerror explains a
# truncation; a CQ of SIZE_MAX entries and an AV of count SIZE_MAX are
# refused. The bound on queued inject copies is t-unexpbound's.
set -eu
exe=$OXI_WORK/deviations
gcc -std=c11 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/deviations.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
timeout 60 "$exe" all sockets
timeout 60 "$exe" all tcp

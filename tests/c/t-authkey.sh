#!/usr/bin/env bash
# Authorization keys: only RDM endpoints holding the same key exchange
# traffic; another key or none gets error completions, never data.
set -eu
exe=$OXI_WORK/authkey
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/authkey.c" -L"$OXI_LIB" -lfabric
# Refused connections are retried for conn_timeout before sends fail;
# keep that short so the test's bound is the library's, not the retries'.
FI_SOCKETS_CONN_TIMEOUT=1000 LD_LIBRARY_PATH=$OXI_LIB timeout 120 "$exe" sockets

#!/usr/bin/env bash
# A named AV's map_addr in fabtests' fi_rdm_shared_av sequence
# (tests/c/sharedav.c): a forked child that opens the name with FI_READ
# reads the parent's fi_addr_t at map_addr[0] and sends to it; the
# writer's open replaces a stale segment a killed run left under the name
# (upstream's layout, an older build's). Under the sockets and tcp names.
set -eu
exe=$OXI_WORK/sharedav
gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/sharedav.c" -L"$OXI_LIB" -lfabric -lrt
export LD_LIBRARY_PATH=$OXI_LIB
timeout 60 "$exe" sockets
timeout 60 "$exe" tcp

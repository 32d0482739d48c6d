#!/usr/bin/env bash
# Call sequences of upstream's fabtests programs (tests/c/upstreamcalls.c):
# fi_shutdown reports on the endpoint's own EQ (fi_cm_data); an endpoint
# takes the address of the passive endpoint in info->handle
# (fi_msg_sockets); a NULL receive buffer with a length takes empty
# messages (fi_shared_ctx -e msg) and truncates others; fi_cntr_wait and
# fi_cq_sread work on FI_WAIT_NONE objects (fi_rdm_rma_trigger,
# fi_multi_mr); a target that closes right after an RMA write landed still
# acknowledges it (fi_rdm_rma_event). Under the names sockets and tcp.
set -eu
exe=$OXI_WORK/upstreamcalls
gcc -std=c11 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/upstreamcalls.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
timeout 60 "$exe" all sockets
timeout 60 "$exe" all tcp

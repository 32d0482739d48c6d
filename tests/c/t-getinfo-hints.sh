#!/usr/bin/env bash
# fi_getinfo's answers to hints as upstream's fabtests check them
# (tests/c/getinfo_hints.c): the pre-1.5 FI_MR_SCALABLE/FI_MR_BASIC echoed
# alone, mr_mode bits the provider does not need cleared (and regions then
# written at offset 0 with requested keys, as fi_multi_mr does),
# FI_NAMED_RX_CTX in tx_attr->caps, and -FI_ENODATA for a bit that is no
# capability. Run on Debian's libfabric too (no LD_LIBRARY_PATH, built
# against /usr/include, -p sockets), it passes there.
set -eu
exe=$OXI_WORK/getinfo_hints
gcc -std=c11 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/getinfo_hints.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
for p in sockets tcp 'tcp;ofi_rxm'; do
	timeout 60 "$exe" all "$p"
done

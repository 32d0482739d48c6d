#!/usr/bin/env bash
# A scalable endpoint's transmit and receive contexts bind and enable on
# their own (tests/c/sepctx.c): fabtests' fi_scalable_ep call order and
# MPICH ch4:ofi's (the receive context binds its CQ after the transmit
# context is enabled), each moving a message per context; under the
# sockets name and the tcp one; once plainly and once under valgrind
# (errors and definite leaks fail).
set -eu
. "$OXI_ROOT/tests/c/valgrind-lib.sh"
plain_and_valgrind sepctx
LD_LIBRARY_PATH=$OXI_LIB timeout 60 "$OXI_WORK/sepctx" all tcp

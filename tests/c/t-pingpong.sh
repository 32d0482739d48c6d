#!/usr/bin/env bash
# Debian's fi_pingpong (the upstream binary) runs on our library with the
# sockets provider: MSG, RDM and DGRAM over its default size sweep on
# 127.0.0.1, and RDM once over ::1. Each pair is bounded in time.
set -u
export LD_LIBRARY_PATH=$OXI_LIB
. "$OXI_ROOT/tests/c/pingpong-lib.sh"
pingpong msg msg 127.0.0.1 -p sockets
pingpong rdm rdm 127.0.0.1 -p sockets
pingpong dgram dgram 127.0.0.1 -p sockets
pingpong rdm6 rdm ::1 -p sockets -6
exit $fail

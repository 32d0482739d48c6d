#!/usr/bin/env bash
# Binding rules of shared transmit contexts and scalable endpoints
# (tests/c/ctxrules.c); once plainly and once under valgrind (errors and
# definite leaks fail).
set -eu
. "$OXI_ROOT/tests/c/valgrind-lib.sh"
plain_and_valgrind ctxrules

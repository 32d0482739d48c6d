#!/usr/bin/env bash
# Bad input never crashes: every exported function and the object vtables
# with NULL and invalid arguments return the documented codes. Runs once
# plainly and once under valgrind (errors and definite leaks fail).
set -eu
. "$OXI_ROOT/tests/c/valgrind-lib.sh"
plain_and_valgrind badinput

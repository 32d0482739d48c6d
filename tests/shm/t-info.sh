#!/usr/bin/env bash
# fi_info -p shm on our library shaped like upstream's: Debian's fi_info run
# on Debian's libfabric 1.17 (the oracle, live) and on ours, compared field
# by field (tests/shm/info_shape.py says which fields must match and why).
# Passes on Debian's libfabric (compared with itself).
set -u
python3 "$OXI_ROOT/tests/shm/info_shape.py" "$OXI_LIB" /usr/lib/x86_64-linux-gnu

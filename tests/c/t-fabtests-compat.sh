#!/usr/bin/env bash
# The fabtests-compat suite against our sockets provider.
exec "$OXI_ROOT/fabtests-compat/run" sockets

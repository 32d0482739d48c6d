#!/usr/bin/env bash
# The test-only oxi_loopback provider (providers/loopback), written on the
# engine's endpoint core, through the same fabtests-compat programs as
# sockets: the unit programs and the RDM/DGRAM functional pairs listed in
# fabtests-compat/tests.oxi_loopback.list. OXI_TEST_PROVIDERS=1 makes
# fi_getinfo list it even without hints naming it.
OXI_TEST_PROVIDERS=1 exec "$OXI_ROOT/fabtests-compat/run" oxi_loopback

#!/usr/bin/env bash
# fi_getinfo as upstream-built tools see it: FI_PROVIDER filtering (list and
# ^ exclusion), FI_PROV_ATTR_ONLY (fi_info -l), a too-new API version, and a
# warn-level log line that names why nothing matched.
set -eu
export LD_LIBRARY_PATH=$OXI_LIB
unset FI_LOG_LEVEL FI_PROVIDER || true

out=$(fi_info -l)
grep -q '^sockets:' <<<"$out" || { echo "fi_info -l lacks sockets: $out"; exit 1; }
grep -q 'version: 117.0' <<<"$out" || { echo "fi_info -l lacks the provider version"; exit 1; }

n=$(fi_info -p sockets -t FI_EP_RDM -n 127.0.0.1 | grep -c '^provider: sockets')
[ "$n" -ge 1 ] || { echo "no RDM entry for 127.0.0.1"; exit 1; }
fi_info -p sockets -t FI_EP_RDM -n 127.0.0.1 -v | grep -q 'src_addr: fi_sockaddr_in://127.0.0.1:0' ||
	{ echo "entry for 127.0.0.1 does not use the loopback interface"; exit 1; }
fi_info -p sockets -t FI_EP_MSG -n ::1 -v | grep -q 'addr_format: FI_SOCKADDR_IN6' ||
	{ echo "no IPv6 entry for ::1"; exit 1; }

# Provider filters.
FI_PROVIDER=sockets fi_info -l | grep -q '^sockets:' || { echo "FI_PROVIDER=sockets hides sockets"; exit 1; }
if FI_PROVIDER='^sockets' fi_info | grep -q '^provider: sockets$'; then
	echo "FI_PROVIDER=^sockets still lists sockets"; exit 1
fi
# Excluding every name our providers answer to leaves nothing, and says why.
none='^sockets,tcp,udp,shm'
if FI_PROVIDER=$none fi_info >/dev/null 2>&1; then
	echo "FI_PROVIDER=$none still lists something"; exit 1
fi
err=$(FI_PROVIDER=$none FI_LOG_LEVEL=warn fi_info 2>&1 || true)
grep -q 'fi_getinfo: -61' <<<"$err" || { echo "expected -61 (FI_ENODATA): $err"; exit 1; }
grep -Eq '^libfabric:[0-9]+:[0-9]+::core:core:getinfo\(\):[0-9]+<warn> fi_getinfo: sockets: excluded by FI_PROVIDER' <<<"$err" ||
	{ echo "no warn line naming the reason: $err"; exit 1; }

# A hint that rules the provider out is named in the log.
err=$(FI_LOG_LEVEL=warn fi_info -p sockets -c FI_HMEM 2>&1 || true)
grep -q 'caps: hints ask for' <<<"$err" || { echo "no log line naming caps: $err"; exit 1; }
echo ok

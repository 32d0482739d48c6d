#!/usr/bin/env bash
# Parameters (FI_<PROV>_<NAME>, types, fi_getparams) and logging (the
# FI_WARN macro, upstream's line format, FI_LOG_LEVEL/PROV/SUBSYS filters).
set -eu
exe=$OXI_WORK/params_log
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/params_log.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
unset FI_LOG_LEVEL FI_LOG_PROV FI_LOG_SUBSYS || true
"$exe" params
line='^libfabric:[0-9]+:[0-9]+::demo:core:main\(\):[0-9]+<warn> hello 42$'
err=$(FI_LOG_LEVEL=warn "$exe" log 1 2>&1 >/dev/null)
[ "$(grep -Ec "$line" <<<"$err")" -eq 1 ] && [ "$(wc -l <<<"$err")" -eq 1 ] ||
	{ echo "expected one line matching $line, got: $err"; exit 1; }
echo "log line: $err"
for env in "" "FI_LOG_LEVEL=warn FI_LOG_PROV=^demo" "FI_LOG_LEVEL=warn FI_LOG_SUBSYS=cq"; do
	err=$(env $env "$exe" log 0 2>&1 >/dev/null)
	[ -z "$err" ] || { echo "with '$env' expected no log, got: $err"; exit 1; }
done
err=$(FI_LOG_LEVEL=warn FI_LOG_PROV=demo FI_LOG_SUBSYS=core "$exe" log 1 2>&1 >/dev/null)
grep -Eq "$line" <<<"$err" || { echo "FI_LOG_PROV=demo FI_LOG_SUBSYS=core: $err"; exit 1; }
echo ok

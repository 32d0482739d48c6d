#!/usr/bin/env bash
# fabtests-compat/run PROV PREFIX runs PREFIX/bin/runfabtests.sh against our
# library: a stand-in install records how it was called and what library
# its programs would load, and its exit status must decide PASS/FAIL.
set -u
prefix=$OXI_WORK/fake-fabtests
mkdir -p "$prefix/bin"
cat >"$prefix/bin/runfabtests.sh" <<'SH'
#!/usr/bin/env bash
echo "args: $*" >"$(dirname "$0")/../called"
ldd "$(command -v fi_info)" | grep libfabric >>"$(dirname "$0")/../called"
exit "${FAKE_RC:-0}"
SH
chmod +x "$prefix/bin/runfabtests.sh"
fail=0
out=$(FT_UPSTREAM_ONLY=1 "$OXI_ROOT/fabtests-compat/run" sockets "$prefix" 2>&1)
echo "$out" | grep -q '^PASS upstream runfabtests.sh' || { echo "expected PASS: $out"; fail=1; }
grep -q "^args: -p $prefix/bin sockets 127.0.0.1 127.0.0.1" "$prefix/called" || { echo "wrong args:"; cat "$prefix/called"; fail=1; }
grep -q "$OXI_LIB/libfabric.so.1" "$prefix/called" || { echo "not run on our library:"; cat "$prefix/called"; fail=1; }
if FAKE_RC=1 FT_UPSTREAM_ONLY=1 "$OXI_ROOT/fabtests-compat/run" sockets "$prefix" >/dev/null 2>&1; then
	echo "a failing upstream suite must fail the runner"; fail=1
fi
exit $fail

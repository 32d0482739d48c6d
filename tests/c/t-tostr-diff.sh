#!/usr/bin/env bash
# fi_tostr/fi_tostr_r print what upstream's libraries print: the same
# upstream-built program runs on Debian 12's libfabric 1.17, on Debian 13's
# 2.1 (inside the Debian 13 root) and on ours, and every line of ours must
# equal Debian 12's, or Debian 13's where the two releases differ, with two
# kinds of expected difference, each checked against its own value:
#   - FI_TYPE_VERSION: the library's release, $OXI_API_RELEASE for ours;
#   - values that only releases after 2.1 name (docs/api-2.2-2.6.md), listed
#     below with the text ours prints.
set -eu
exe=$OXI_WORK/tostr_dump
gcc -std=gnu99 -Wall -Werror -o "$exe" "$OXI_ROOT/tests/c/tostr_dump.c" -lfabric
# fid values print the data's address, which differs between runs.
strip_fid() { sed 's/fid: 0x[0-9a-f]*/fid: ADDR/'; }
"$exe" | strip_fid >"$exe.deb12"
LD_LIBRARY_PATH=$OXI_LIB "$exe" | strip_fid >"$exe.ours"

root=$("$OXI_ROOT/tests/trixie/root.sh")
work=$OXI_WORK/tostr-deb13-$$
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cp "$exe" "$work/"
# Debian 13's own library: the root's /usr/lib, no LD_LIBRARY_PATH.
"$OXI_ROOT/tests/trixie/inroot.sh" "$root" "$OXI_LIB" "$work" bash -c \
	'chroot "$OXI_TRIXIE" env -i PATH=/usr/bin:/bin "$OXI_IN/work/tostr_dump"' | strip_fid >"$exe.deb13"

python3 - "$exe.deb12" "$exe.deb13" "$exe.ours" "$OXI_API_RELEASE" <<'PY'
import re
import sys


def records(path):
    """The dump as (key, text) records: a record starts at a line
    "[what/type] ..." or "[tostr_r caps N] ..." and runs to the next
    (structure dumps take several lines)."""
    out = []
    for line in open(path).read().splitlines():
        m = re.match(r'(\[(?:[^\]/]+/-?\d+|tostr_r caps \d+)\]) ?(.*)', line)
        if m:
            out.append([m.group(1), m.group(2)])
        elif out:
            out[-1][1] += '\n' + line
        else:
            sys.exit('%s: text before the first record: %r' % (path, line))
    return [tuple(r) for r in out]


deb12, deb13, ours = (records(f) for f in sys.argv[1:4])
release = sys.argv[4]
# Values named only after 2.1: line key -> the text ours prints.
after_2_1 = {
    '[17/4]': 'FI_SOCKADDR_IP',
}
if not (len(deb12) == len(deb13) == len(ours)):
    sys.exit('record counts differ: Debian 12 %d, Debian 13 %d, ours %d' % (len(deb12), len(deb13), len(ours)))
counts = {}
bad = 0
for a, b, o in zip(deb12, deb13, ours):
    key, text = o
    if not key == a[0] == b[0]:
        sys.exit('records out of step: %s / %s / %s' % (a[0], b[0], key))
    if key.startswith('[version/'):
        kind = 'version records (%s)' % release if text == release else None
    elif o == a == b:
        kind = 'identical to both'
    elif o == a:
        kind = 'as Debian 12 where Debian 13 differs'
    elif o == b:
        kind = 'as Debian 13 where Debian 12 differs'
    elif after_2_1.get(key) == text:
        kind = 'named after 2.1'
    else:
        kind = None
    if kind is None:
        bad += 1
        if bad <= 40:
            print('DIFF %s ours %r\n     Debian 12 %r\n     Debian 13 %r' % (key, text, a[1], b[1]))
        continue
    counts[kind] = counts.get(kind, 0) + 1
print('fi_tostr: %d records: %s' % (len(ours), ', '.join('%s %d' % kv for kv in sorted(counts.items()))))
if bad:
    sys.exit('%d records differ' % bad)
PY

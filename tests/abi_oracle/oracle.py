#!/usr/bin/python3
"""ABI oracle: proves that our headers and the Rust mirror in src/abi match
the libfabric 1.17 headers Debian's libfabric-dev installs.

Items are discovered from the upstream headers with libclang, so nothing can
be left out silently:
  - every struct and union: size, alignment, and every field's name, offset,
    size and canonical type (anonymous members compared structurally);
  - every enumerator's value, every typedef's canonical type;
  - every object-like macro's value (evaluated by compiling a program against
    each header set) and the presence of every function-like macro;
  - every function (exported prototypes and static inline wrappers): return
    and parameter types.
Anything missing, different, or present only in ours is a failure, except
the items docs/api-2.2-2.6.md lists as added or changed by releases after
2.1 (reported as such). It then
generates Rust assertions of the same layouts and constants against
`oxifabric::abi` and runs them, and compiles a C file that calls every inline
wrapper (C99 -pedantic -Werror) and a C++ file including every header.

Usage: oracle.py <repo-root>. Prints counts and "N passed, N failed".
"""
import os
import subprocess
import sys
import tempfile

import clang.cindex as ci

for lib in ('/usr/lib/x86_64-linux-gnu/libclang-14.so.1', '/usr/lib/llvm-14/lib/libclang.so.1'):
    if os.path.exists(lib):
        ci.Config.set_library_file(lib)
        break

HEADERS = ['fi_errno.h', 'fabric.h', 'fi_eq.h', 'fi_domain.h', 'fi_endpoint.h', 'fi_cm.h',
           'fi_tagged.h', 'fi_rma.h', 'fi_atomic.h', 'fi_trigger.h', 'fi_collective.h',
           'fi_ext.h', 'providers/fi_log.h', 'providers/fi_prov.h', 'fi_profile.h',
           'fi_ext_psm2.h', 'fi_ext_efa.h', 'providers/fi_peer.h']
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
OURS = os.path.join(ROOT, 'include')
WORK = os.path.join(ROOT, 'build', 'abi-oracle')
os.makedirs(WORK, exist_ok=True)
UPSTREAM = '/usr/include'


def src_for(incdir):
    """Includes every header the set has. Upstream 2.1's fi_profile.h uses
    container_of, which its fabric.h no longer defines: a set like that
    gets one from the including file (not from rdma/, so never compared)."""
    have = [h for h in HEADERS if os.path.exists(os.path.join(incdir, 'rdma', h))]
    pre = ''
    if 'fi_profile.h' in have and 'container_of' not in open(os.path.join(incdir, 'rdma', 'fabric.h')).read() \
            and 'container_of' in open(os.path.join(incdir, 'rdma', 'fi_profile.h')).read():
        pre = ('#include <stddef.h>\n#define container_of(p, t, f) ((t *) ((char *) (p) - offsetof(t, f)))\n')
    return pre + '\n'.join('#include <rdma/%s>' % h for h in have) + '\n'


SRC = src_for(os.path.join(ROOT, 'include'))

# Structs a newer ABI node appended fields to: per upstream set, the Rust
# expression for the size that set's layout has (src/abi/layouts.rs).
GROWN = {
    '1.17': {'struct fi_domain_attr': 'oxifabric::abi::layouts::ABI_1_3.domain',
             'struct fi_cq_err_entry': 'oxifabric::compat::cq_err_entry_size((1 << 16) | 17)'},
    '2.1': {'struct fi_domain_attr': 'oxifabric::abi::layouts::ABI_1_8.domain'},
}
# Structs whose layout changed after a set (as upstream's did), checked
# against the newer set field by field; here only their size in the older
# set, through the Rust expression for it.
SIZE_AT = {
    '1.17': {'struct fi_mr_attr': 'oxifabric::compat::mr_attr_size((1 << 16) | 17)'},
    '2.1': {},
}


def after_2_1():
    """Items of upstream releases after 2.1 (up to 2.6), which neither header
    set has: read from the table in docs/api-2.2-2.6.md, whose rows are
    `| release | kind | `NAME` | ...`. Kinds are the oracle's item kinds
    ('constants', 'enumerators', ...); 'changed' names an item whose value a
    later release changed; 'fields' rows are struct growth, checked through
    GROWN. Returns ({kind: {names}}, {changed names})."""
    added, changed = {}, set()
    for line in open(os.path.join(ROOT, 'docs', 'api-2.2-2.6.md')):
        cols = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cols) < 3 or not cols[0][:1].isdigit():
            continue
        names = [n.strip('` ') for n in cols[2].split(',') if '`' in n]
        if cols[1] == 'changed':
            changed.update(names)
        elif cols[1] != 'fields':
            added.setdefault(cols[1], set()).update(names)
    return added, changed


AFTER_2_1, CHANGED_AFTER_2_1 = after_2_1()
# The sets compared item by item (2.1 is also the newer API the 1.17
# comparison follows).
COMPARED = ('1.17', '2.1')


def upstream_sets():
    """(label, include dir) of every upstream header set, oldest first:
    Debian 12's libfabric-dev 1.17 and Debian 13's 2.1 (fetched and
    unpacked outside the checkout by upstream-2.1.sh)."""
    d = subprocess.run([os.path.join(ROOT, 'tests/abi_oracle/upstream-2.1.sh')], check=True,
                       capture_output=True, text=True).stdout.strip()
    return [('1.17', UPSTREAM), ('2.1', os.path.join(d, 'usr/include'))]

passed = 0
failed = 0
counts = {}


def ok(kind):
    global passed
    passed += 1
    counts[kind] = counts.get(kind, 0) + 1


def fail(msg):
    global failed
    failed += 1
    print('FAIL ' + msg)


def in_rdma(c, incdir):
    f = c.location.file
    return f is not None and f.name.startswith(os.path.join(incdir, 'rdma'))


def parse(incdir):
    idx = ci.Index.create()
    tu = idx.parse('all.c', args=['-x', 'c', '-std=gnu11', '-nostdinc++', '-I' + incdir],
                   unsaved_files=[('all.c', src_for(incdir))],
                   options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    errs = [d for d in tu.diagnostics if d.severity >= 3]
    for d in errs:
        print('clang error in %s: %s' % (incdir, d))
    return tu


def record_layout(t, depth=0):
    """Size, alignment and fields (recursing into anonymous members). A C11
    anonymous struct or union member (no declarator) is listed as a field
    with an empty name at the offset of its first member."""
    decl = t.get_declaration()
    children = list(decl.get_children())
    used = {f.type.get_canonical().get_declaration().hash for f in children
            if f.kind == ci.CursorKind.FIELD_DECL}
    fields = []
    for f in children:
        if f.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and f.is_anonymous() \
                and f.hash not in used:
            sub = record_layout(f.type, depth + 1)
            first = next((c.spelling for c in f.get_children() if c.kind == ci.CursorKind.FIELD_DECL), None)
            off = decl.type.get_offset(first) if first else -1
            tname = ('union' if f.kind == ci.CursorKind.UNION_DECL else 'struct') + ' <anonymous>'
            fields.append(('', off, f.type.get_size(), tname, sub))
            continue
        if f.kind != ci.CursorKind.FIELD_DECL:
            continue
        ft = f.type.get_canonical()
        sub = None
        fdecl = ft.get_declaration()
        if fdecl.kind in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and fdecl.is_anonymous():
            sub = record_layout(ft, depth + 1)
            tname = ('union' if fdecl.kind == ci.CursorKind.UNION_DECL else 'struct') + ' <anonymous>'
        else:
            tname = ft.spelling
        fields.append((f.spelling, decl.type.get_offset(f.spelling) if f.spelling else -1,
                       ft.get_size(), tname, sub))
    return (t.get_size(), t.get_align(), fields)


def collect(incdir):
    tu = parse(incdir)
    recs, enums, typedefs, funcs, macros, fnmacros = {}, {}, {}, {}, {}, set()
    for c in tu.cursor.get_children():
        if not in_rdma(c, incdir):
            continue
        k = c.kind
        if k in (ci.CursorKind.STRUCT_DECL, ci.CursorKind.UNION_DECL) and c.is_definition() and c.spelling:
            kw = 'union' if k == ci.CursorKind.UNION_DECL else 'struct'
            recs['%s %s' % (kw, c.spelling)] = record_layout(c.type)
        elif k == ci.CursorKind.ENUM_DECL:
            for e in c.get_children():
                if e.kind == ci.CursorKind.ENUM_CONSTANT_DECL:
                    enums[e.spelling] = e.enum_value
            if c.spelling and c.is_definition():
                typedefs['enum ' + c.spelling] = 'enum'
        elif k == ci.CursorKind.TYPEDEF_DECL:
            typedefs[c.spelling] = c.underlying_typedef_type.get_canonical().spelling
        elif k == ci.CursorKind.FUNCTION_DECL:
            sig = (c.result_type.get_canonical().spelling,
                   tuple(a.type.get_canonical().spelling for a in c.get_arguments()),
                   c.type.is_function_variadic())
            funcs[c.spelling] = (sig, c.is_definition())
        elif k == ci.CursorKind.MACRO_DEFINITION:
            toks = list(c.get_tokens())
            fnlike = len(toks) > 1 and toks[1].spelling == '(' and \
                toks[1].extent.start.offset == toks[0].extent.end.offset
            if c.spelling.endswith('_H') or c.spelling in ('FABRIC_H',):
                continue
            if fnlike:
                fnmacros.add(c.spelling)
            else:
                macros[c.spelling] = [t.spelling for t in toks[1:]]
    return recs, enums, typedefs, funcs, macros, fnmacros, incdir


def eval_macros(incdir, names):
    """Values of object-like macros, by compiling a printer per header set."""
    vals = {}
    good = []
    for n in names:
        prog = '#include <stdio.h>\n' + src_for(incdir) + \
            'int main(void){ (void)(%s); return 0; }\n' % n
        p = os.path.join(WORK, 'probe.c')
        open(p, 'w').write(prog)
        r = subprocess.run(['gcc', '-w', '-fsyntax-only', '-I' + incdir, p], capture_output=True)
        if r.returncode == 0:
            good.append(n)
    # Strings and integers print differently.
    body = ['#include <stdio.h>', '#include <stdint.h>', src_for(incdir), 'int main(void){']
    for n in good:
        body.append('  _Generic((%s), char *: printf("%%s S %%s\\n", "%s", (const char *)(uintptr_t)(%s)), '
                    'const char *: printf("%%s S %%s\\n", "%s", (const char *)(uintptr_t)(%s)), '
                    'default: printf("%%s I %%lld %%d\\n", "%s", (long long)(%s), (int)sizeof(%s)));'
                    % (n, n, n, n, n, n, n, n))
    body.append('  return 0; }')
    p = os.path.join(WORK, 'macros.c')
    open(p, 'w').write('\n'.join(body))
    exe = os.path.join(WORK, 'macros-%d' % abs(hash(incdir)))
    r = subprocess.run(['gcc', '-w', '-std=gnu11', '-I' + incdir, '-o', exe, p], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr[:2000])
        return vals
    out = subprocess.run([exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(' ', 2)
        if parts[1] == 'I':
            parts = line.split(' ')
        vals[parts[0]] = parts[1:]
    return vals


def compare_fields(where, a, b, grown=False):
    """Compares two layouts. With `grown`, ours may have more fields after
    upstream's (an attribute struct a newer ABI node appended to)."""
    (sa, aa, fa), (sb, ab, fb) = a, b
    good = True
    if grown:
        if sb < sa or aa != ab or len(fb) < len(fa):
            fail('%s: upstream %d B/%d fields must be a prefix of ours (%d B/%d fields)' % (where, sa, len(fa), sb, len(fb)))
            return False
        fb = fb[:len(fa)]
    elif sa != sb or aa != ab:
        fail('%s: size/align upstream %d/%d, ours %d/%d' % (where, sa, aa, sb, ab))
        good = False
    if len(fa) != len(fb):
        fail('%s: %d fields upstream, %d ours' % (where, len(fa), len(fb)))
        return False
    for x, y in zip(fa, fb):
        if x[0] and not y[0] and y[4] is not None and x[1] == y[1] and \
                any(f[0] == x[0] and f[2:4] == x[2:4] for f in y[4][2]):
            # A field a newer API wrapped in an anonymous union with an
            # alias (fi_domain_attr.data_progress / progress in 2.0).
            ok('fields now in an anonymous union (as upstream)')
            continue
        if x[:4] != y[:4]:
            fail('%s: field upstream %s, ours %s' % (where, x[:4], y[:4]))
            good = False
        else:
            ok('fields')
        if x[4] is not None and y[4] is not None:
            good &= compare_fields('%s.%s' % (where, x[0]), x[4], y[4])
    return good


def compare_set(label, up, us, newer):
    """Compares one upstream header set with ours. `newer` is the newer
    upstream set whose API ours follows (None for the newest set): an item
    of this set that the newer one dropped or changed must be as the newer
    one has it, and items ours adds must exist there. Returns the constant
    values and record layouts the Rust mirror is checked against."""
    recs_u, enums_u, td_u, fn_u, mac_u, fmac_u = up[:6]
    recs_o, enums_o, td_o, fn_o, mac_o, fmac_o = us[:6]
    recs_n, enums_n, td_n, fn_n, mac_n, fmac_n = newer[:6] if newer else (None,) * 6
    grown = GROWN[label]

    def allowed_extra(kind, name, newer_items):
        if newer_items is not None and name in newer_items:
            ok('%s newer than %s' % (kind, label))
            return True
        if name in AFTER_2_1.get(kind, ()):
            ok('%s newer than 2.1' % kind)
            return True
        return False

    def dropped(kind, name, newer_items):
        if newer_items is not None and name not in newer_items:
            ok('%s dropped after %s (as upstream)' % (kind, label))
            return True
        return False

    rust_recs = {}
    for n, lay in recs_u.items():
        if n not in recs_o:
            if not dropped('records', n, recs_n):
                fail('[%s] missing %s' % (label, n))
            continue
        if n not in grown and recs_o[n] != lay and n.split()[-1] in CHANGED_AFTER_2_1:
            # A layout a release after 2.1 changed (docs/api-2.2-2.6.md).
            ok('records changed after 2.1')
            continue
        if n not in grown and recs_o[n] != lay and newer and recs_n.get(n) == recs_o[n]:
            # Changed by the newer API as ours is: checked against that set.
            ok('records changed after %s (as upstream)' % label)
            if n in SIZE_AT[label]:
                rust_recs[n] = (lay[0], lay[1], [])
            continue
        if compare_fields('[%s] %s' % (label, n), lay, recs_o[n], n in grown):
            ok('structs/unions')
        rust_recs[n] = lay
    for n in recs_o:
        if n not in recs_u and not allowed_extra('records', n, recs_n):
            fail('[%s] extra %s (not in upstream)' % (label, n))

    rust_enums = {}
    for n, v in enums_u.items():
        if n not in enums_o:
            if not dropped('enumerators', n, enums_n):
                fail('[%s] missing enumerator %s' % (label, n))
        elif enums_o[n] != v:
            if newer and enums_n.get(n) == enums_o[n]:
                ok('enumerators changed after %s (as upstream)' % label)
            elif n in CHANGED_AFTER_2_1:
                ok('enumerators changed after 2.1')
            else:
                fail('[%s] enumerator %s: upstream %d, ours %d' % (label, n, v, enums_o[n]))
        else:
            ok('enumerators')
            rust_enums[n] = v
    for n in enums_o:
        if n not in enums_u and not allowed_extra('enumerators', n, enums_n):
            fail('[%s] extra enumerator %s' % (label, n))

    for n, v in td_u.items():
        if n not in td_o:
            if not dropped('typedefs', n, td_n):
                fail('[%s] missing typedef/enum type %s' % (label, n))
        elif td_o[n] != v:
            fail('[%s] typedef %s: upstream %s, ours %s' % (label, n, v, td_o[n]))
        else:
            ok('typedefs and enum types')
    for n in td_o:
        if n not in td_u and not allowed_extra('typedefs', n, td_n):
            fail('[%s] extra typedef %s' % (label, n))

    for n, (sig, inline) in fn_u.items():
        if n not in fn_o:
            if not dropped('functions', n, fn_n):
                fail('[%s] missing function %s' % (label, n))
            continue
        osig, oinline = fn_o[n]
        if osig != sig and newer and fn_n.get(n, (None,))[0] == osig:
            ok('functions changed after %s (as upstream)' % label)
        elif osig != sig:
            fail('[%s] function %s: upstream %s, ours %s' % (label, n, sig, osig))
        elif inline != oinline:
            fail('[%s] function %s: inline upstream %s, ours %s' % (label, n, inline, oinline))
        else:
            ok('inline wrappers' if inline else 'exported functions')
    for n in fn_o:
        if n not in fn_u and not allowed_extra('functions', n, fn_n):
            fail('[%s] extra function %s' % (label, n))

    for n in fmac_u:
        if n not in fmac_o:
            if not dropped('function-like macros', n, fmac_n):
                fail('[%s] missing function-like macro %s' % (label, n))
        else:
            ok('function-like macros')
    for n in fmac_o:
        if n not in fmac_u and not allowed_extra('function-like macros', n, fmac_n):
            fail('[%s] extra function-like macro %s' % (label, n))

    vu = eval_macros(up[6], sorted(mac_u))
    vo = eval_macros(OURS, sorted(mac_o))
    vn = eval_macros(newer[6], sorted(mac_n)) if newer else {}
    rust_vals = {}
    for n in sorted(mac_u):
        if n not in mac_o:
            if not dropped('constants', n, mac_n):
                fail('[%s] missing constant %s' % (label, n))
        elif n not in vu:
            # Not an expression (attribute macros, markers): presence only.
            ok('marker macros')
        elif vu.get(n) != vo.get(n):
            if newer and vn.get(n) == vo.get(n):
                ok('constants changed after %s (as upstream)' % label)
            elif n in CHANGED_AFTER_2_1:
                ok('constants changed after 2.1')
            else:
                fail('[%s] constant %s: upstream %s, ours %s' % (label, n, vu.get(n), vo.get(n)))
        else:
            ok('constants')
            rust_vals[n] = vu[n]
    for n in mac_o:
        if n not in mac_u and not allowed_extra('constants', n, mac_n):
            fail('[%s] extra constant %s' % (label, n))
    return rust_recs, rust_enums, rust_vals


def main():
    sets = [(label, incdir, collect(incdir)) for label, incdir in upstream_sets()]
    us = collect(OURS)
    rust = []
    for i, (label, incdir, up) in enumerate(sets):
        newer = sets[i + 1][2] if i + 1 < len(sets) else None
        if label not in COMPARED:
            continue
        recs, enums, vals = compare_set(label, up, us, newer)
        rust.append((label, recs, enums, vals))
        wrappers(label, incdir, up[3], up[0])
    rust_layout(rust, us[0])
    wrappers('ours', OURS, us[3], us[0])

    print('abi-oracle: ' + ', '.join('%s %d' % (k, v) for k, v in sorted(counts.items())))
    print('abi-oracle: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


def rust_layout(sets, ours):
    """Generates and runs Rust assertions for the mirror in src/abi: for each
    upstream set, every layout and value ours shares with it; a struct a
    newer node grew is checked against that node's size in
    src/abi/layouts.rs."""
    out = ['// Generated by tests/abi_oracle/oracle.py from the upstream headers.']
    n = 0
    for label, recs, enums, macro_vals in sets:
        mod = 'set_' + label.replace('.', '_')
        out += ['mod %s {' % mod,
                '#[allow(unused_imports)] use oxifabric::abi::*;',
                '#[allow(unused_imports)] use core::mem::{size_of, align_of, offset_of};',
                '#[test] fn layouts_match_upstream() {']
        for name, (size, align, fields) in sorted(recs.items()):
            rname = name.split(' ', 1)[1]
            size_expr = GROWN[label].get(name, SIZE_AT[label].get(name, 'size_of::<%s>()' % rname))
            out.append('    assert_eq!((%s, align_of::<%s>()), (%d, %d), "%s %s");' % (size_expr, rname, size, align, label, name))
            n += 1
            direct = {f[0] for f in ours.get(name, (0, 0, []))[2]}
            for f in fields:
                fname = f[0]
                if not fname or fname not in direct:
                    # Anonymous, or inside an anonymous member of ours (the
                    # C comparison checked its offset).
                    continue
                rf = 'r#' + fname if fname in ('type', 'fn', 'ref', 'mod', 'match', 'loop', 'move', 'impl') else fname
                out.append('    assert_eq!(offset_of!(%s, %s), %d, "%s.%s");' % (rname, rf, f[1] // 8, name, fname))
                n += 1
        out.append('}')
        out.append('#[test] fn constants_match_upstream() {')
        for name, v in sorted(enums.items()):
            out.append('    assert_eq!(%s as i128, %d_i128, "%s");' % (name, v, name))
            n += 1
        for name, v in sorted(macro_vals.items()):
            if v and v[0] == 'I':
                val = int(v[1])
                size = int(v[2])
                if size == 8 and val < 0:
                    val &= (1 << 64) - 1
                out.append('    assert_eq!(%s as i128, %d_i128, "%s");' % (name, val, name))
                n += 1
        out.append('}')
        out.append('}')
    path = os.path.join(WORK, 'layout.rs')
    open(path, 'w').write('\n'.join(out) + '\n')
    r = subprocess.run(['cargo', 'test', '-q', '-p', 'oxifabric', '--features', 'abi-oracle', '--test', 'abi_layout'],
                       cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        fail('Rust mirror differs from upstream:\n' + (r.stdout + r.stderr)[-4000:])
    else:
        for _ in range(n):
            ok('rust assertions')


def upstream_lib(label):
    """A directory with a libfabric.so of that set to link against (so the
    program binds that release's symbol versions), or None for ours."""
    if label == '1.17':
        return '/usr/lib/x86_64-linux-gnu'
    if label == '2.1':
        root = subprocess.run([os.path.join(ROOT, 'tests/trixie/root.sh')], check=True,
                              capture_output=True, text=True).stdout.strip()
        d = os.path.join(WORK, 'lib-2.1')
        os.makedirs(d, exist_ok=True)
        link = os.path.join(d, 'libfabric.so')
        if not os.path.lexists(link):
            os.symlink(os.path.join(root, 'usr/lib/x86_64-linux-gnu/libfabric.so.1'), link)
        return d
    return None


def wrappers(label, incdir, fns, recs):
    """Calls every inline wrapper and names every type, compiled -pedantic
    against one header set; then links that program against the set's own
    library (binding its symbol versions) and runs it on ours."""
    lines = ['/* Generated by tests/abi_oracle/oracle.py: every inline wrapper called, every type used. */']
    lines += ['#include <stdio.h>', '#include <string.h>']
    lines += [src_for(incdir)]
    lines.append('int oxi_use_everything(int total);')
    lines.append('int oxi_use_everything(int total)')
    lines.append('{')
    for name in sorted(recs):
        lines.append('\ttotal += (int) sizeof(%s);' % name)
    k = 0
    for name, (sig, inline) in sorted(fns.items()):
        if not inline:
            continue
        args = []
        for i, t in enumerate(sig[1]):
            v = 'a%d_%d' % (k, i)
            if '(*)' in t:
                args.append('(%s) 0' % t)
            else:
                scalar = '*' in t or t.startswith('enum') or t in (
                    'int', 'unsigned int', 'long', 'unsigned long', 'long long', 'unsigned long long',
                    'unsigned char', 'signed char', 'char', 'short', 'unsigned short', '_Bool', 'double', 'float')
                lines.append('\t%s %s = %s;' % (t, v, '0' if scalar else '{0}'))
                args.append(v)
        lines.append('\tif (total == 1) (void) %s(%s);' % (name, ', '.join(args)))
        k += 1
    lines.append('\treturn total;')
    lines.append('}')
    # At run time: the exported functions through the versions this set's
    # library binds, and fi_allocinfo/fi_freeinfo round trips.
    lines += ['int main(int argc, char **argv)', '{',
              '\tstruct fi_info *hints = fi_allocinfo(), *info = NULL;',
              '\tint rc;',
              '\t(void) argv;',
              '\tif (!hints) return 2;',
              '\thints->fabric_attr->prov_name = strdup("sockets");',
              '\trc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), "127.0.0.1", NULL, 0, hints, &info);',
              '\tif (rc) { printf("fi_getinfo: %s\\n", fi_strerror(-rc)); return 1; }',
              '\tprintf("fi_version %u.%u, first entry %s\\n", FI_MAJOR(fi_version()), FI_MINOR(fi_version()),',
              '\t       info->fabric_attr->prov_name);',
              '\tfi_freeinfo(info);',
              '\tfi_freeinfo(hints);',
              '\treturn oxi_use_everything(argc) > 0 ? 0 : 3;', '}']
    c = os.path.join(WORK, 'wrappers-%s.c' % label)
    exe = c[:-2]
    open(c, 'w').write('\n'.join(lines) + '\n')
    if incdir == OURS:
        # C11: the 2.x headers have anonymous unions, as upstream's do.
        flags = ['gcc', '-std=c11', '-Wall', '-Wextra', '-Werror', '-pedantic', '-Wno-unused-variable',
                 '-Wno-missing-field-initializers', '-Wno-deprecated-declarations', '-D_POSIX_C_SOURCE=200809L']
    else:
        # Upstream's own headers are not all -pedantic clean (2.1's
        # fi_profile.h returns void expressions): compiled as they are meant.
        flags = ['gcc', '-std=gnu11', '-w']
    flags += ['-o', exe, c, '-I' + incdir]
    lib = upstream_lib(label) or os.path.join(ROOT, 'build', 'lib')
    r = subprocess.run(flags + ['-L' + lib, '-lfabric', '-Wl,--allow-shlib-undefined'], capture_output=True, text=True)
    if r.returncode != 0:
        fail('[%s] inline wrappers do not compile (%s):\n%s' % (label, ' '.join(flags[1:6]), r.stderr[:3000]))
        return
    ok('compile of every wrapper' if incdir != OURS else 'C11 -pedantic compile of every wrapper')
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(ROOT, 'build', 'lib'), FI_SOCKETS_IFACE='lo')
    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60)
    vers = subprocess.run(['objdump', '-T', exe], capture_output=True, text=True).stdout
    bound = sorted(set(l.split()[-2] + ' ' + l.split()[-1] for l in vers.splitlines() if 'FABRIC_' in l))
    if r.returncode != 0:
        fail('[%s] the wrapper program does not run on our library (%d): %s' % (label, r.returncode, r.stdout + r.stderr))
    else:
        ok('wrapper programs run on our library')
        print('abi-oracle: [%s] wrapper program binds %s; %s' % (label, ', '.join(bound), r.stdout.strip()))
    if incdir == OURS:
        cpp = os.path.join(WORK, 'all.cpp')
        open(cpp, 'w').write(SRC + 'int main() { return 0; }\n')
        r = subprocess.run(['g++', '-Wall', '-Werror', '-fsyntax-only', '-I' + OURS, cpp], capture_output=True, text=True)
        if r.returncode != 0:
            fail('headers do not compile as C++:\n' + r.stderr[:3000])
        else:
            ok('C++ compile of every header')


if __name__ == '__main__':
    sys.exit(main())

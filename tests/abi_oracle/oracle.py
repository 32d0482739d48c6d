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
Anything missing, different, or present only in ours is a failure. It then
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
           'fi_ext.h', 'providers/fi_log.h', 'providers/fi_prov.h']
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
OURS = os.path.join(ROOT, 'include')
WORK = os.path.join(ROOT, 'build', 'abi-oracle')
os.makedirs(WORK, exist_ok=True)
UPSTREAM = '/usr/include'
SRC = '\n'.join('#include <rdma/%s>' % h for h in HEADERS) + '\n'

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
                   unsaved_files=[('all.c', SRC)],
                   options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    errs = [d for d in tu.diagnostics if d.severity >= 3]
    for d in errs:
        print('clang error in %s: %s' % (incdir, d))
    return tu


def record_layout(t, depth=0):
    """Size, alignment and fields (recursing into anonymous members)."""
    decl = t.get_declaration()
    fields = []
    for f in decl.get_children():
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
    return recs, enums, typedefs, funcs, macros, fnmacros


def eval_macros(incdir, names):
    """Values of object-like macros, by compiling a printer per header set."""
    vals = {}
    good = []
    for n in names:
        prog = '#include <stdio.h>\n' + SRC + \
            'int main(void){ (void)(%s); return 0; }\n' % n
        p = os.path.join(WORK, 'probe.c')
        open(p, 'w').write(prog)
        r = subprocess.run(['gcc', '-w', '-fsyntax-only', '-I' + incdir, p], capture_output=True)
        if r.returncode == 0:
            good.append(n)
    # Strings and integers print differently.
    body = ['#include <stdio.h>', '#include <stdint.h>', SRC, 'int main(void){']
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


def compare_fields(where, a, b):
    (sa, aa, fa), (sb, ab, fb) = a, b
    good = True
    if sa != sb or aa != ab:
        fail('%s: size/align upstream %d/%d, ours %d/%d' % (where, sa, aa, sb, ab))
        good = False
    if len(fa) != len(fb):
        fail('%s: %d fields upstream, %d ours' % (where, len(fa), len(fb)))
        return False
    for x, y in zip(fa, fb):
        if x[:4] != y[:4]:
            fail('%s: field upstream %s, ours %s' % (where, x[:4], y[:4]))
            good = False
        else:
            ok('fields')
        if x[4] is not None and y[4] is not None:
            good &= compare_fields('%s.%s' % (where, x[0]), x[4], y[4])
    return good


def main():
    up = collect(UPSTREAM)
    us = collect(OURS)
    names = ['records', 'enumerators', 'typedefs', 'functions', 'constants', 'function-like macros']
    recs_u, enums_u, td_u, fn_u, mac_u, fmac_u = up
    recs_o, enums_o, td_o, fn_o, mac_o, fmac_o = us

    for n, lay in recs_u.items():
        if n not in recs_o:
            fail('missing %s' % n)
        elif compare_fields(n, lay, recs_o[n]):
            ok('structs/unions')
    for n in recs_o:
        if n not in recs_u:
            fail('extra %s (not in upstream)' % n)

    for n, v in enums_u.items():
        if n not in enums_o:
            fail('missing enumerator %s' % n)
        elif enums_o[n] != v:
            fail('enumerator %s: upstream %d, ours %d' % (n, v, enums_o[n]))
        else:
            ok('enumerators')
    for n in enums_o:
        if n not in enums_u:
            fail('extra enumerator %s' % n)

    for n, v in td_u.items():
        if n not in td_o:
            fail('missing typedef/enum type %s' % n)
        elif td_o[n] != v:
            fail('typedef %s: upstream %s, ours %s' % (n, v, td_o[n]))
        else:
            ok('typedefs and enum types')
    for n in td_o:
        if n not in td_u:
            fail('extra typedef %s' % n)

    for n, (sig, inline) in fn_u.items():
        if n not in fn_o:
            fail('missing function %s' % n)
            continue
        osig, oinline = fn_o[n]
        if osig != sig:
            fail('function %s: upstream %s, ours %s' % (n, sig, osig))
        elif inline != oinline:
            fail('function %s: inline upstream %s, ours %s' % (n, inline, oinline))
        else:
            ok('inline wrappers' if inline else 'exported functions')
    for n in fn_o:
        if n not in fn_u:
            fail('extra function %s' % n)

    for n in fmac_u:
        if n not in fmac_o:
            fail('missing function-like macro %s' % n)
        else:
            ok('function-like macros')
    for n in fmac_o:
        if n not in fmac_u:
            fail('extra function-like macro %s' % n)

    vu = eval_macros(UPSTREAM, sorted(mac_u))
    vo = eval_macros(OURS, sorted(mac_o))
    for n in sorted(mac_u):
        if n not in mac_o:
            fail('missing constant %s' % n)
        elif n not in vu:
            # Not an expression (attribute macros, markers): presence only.
            ok('marker macros')
        elif vu.get(n) != vo.get(n):
            fail('constant %s: upstream %s, ours %s' % (n, vu.get(n), vo.get(n)))
        else:
            ok('constants')
    for n in mac_o:
        if n not in mac_u:
            fail('extra constant %s' % n)

    rust_layout(recs_u, enums_u, vu)
    wrappers(fn_u, recs_u)

    print('abi-oracle: ' + ', '.join('%s %d' % (k, v) for k, v in sorted(counts.items())))
    print('abi-oracle: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


def rust_layout(recs, enums, macro_vals):
    """Generates and runs Rust assertions for the mirror in src/abi."""
    out = ['// Generated by tests/abi_oracle/oracle.py from the upstream headers.',
           '#[allow(unused_imports)] use oxifabric::abi::*;',
           '#[allow(unused_imports)] use core::mem::{size_of, align_of, offset_of};',
           '#[test] fn layouts_match_upstream() {']
    n = 0
    for name, (size, align, fields) in sorted(recs.items()):
        rname = name.split(' ', 1)[1]
        out.append('    assert_eq!((size_of::<%s>(), align_of::<%s>()), (%d, %d), "%s");' % (rname, rname, size, align, name))
        n += 1
        for f in fields:
            fname = f[0]
            if not fname:
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
    path = os.path.join(WORK, 'layout.rs')
    open(path, 'w').write('\n'.join(out) + '\n')
    r = subprocess.run(['cargo', 'test', '-q', '-p', 'oxifabric', '--features', 'abi-oracle', '--test', 'abi_layout'],
                       cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        fail('Rust mirror differs from upstream:\n' + (r.stdout + r.stderr)[-4000:])
    else:
        for _ in range(n):
            ok('rust assertions')


def wrappers(fns, recs):
    """Calls every inline wrapper and names every type, compiled -pedantic."""
    lines = ['/* Generated by tests/abi_oracle/oracle.py: every inline wrapper called, every type used. */']
    lines += ['#include <rdma/%s>' % h for h in HEADERS]
    lines.append('int oxi_use_everything(void);')
    lines.append('int oxi_use_everything(void)')
    lines.append('{')
    lines.append('\tsize_t total = 0;')
    for name in sorted(recs):
        lines.append('\ttotal += sizeof(%s);' % name)
    k = 0
    for name, (sig, inline) in sorted(fns.items()):
        if not inline:
            continue
        args = []
        for i, t in enumerate(sig[1]):
            v = 'a%d_%d' % (k, i)
            if '(*)' in t:
                lines.append('\tvoid *%s = 0;' % v)
                args.append('(%s)%s' % (t, v))
            else:
                scalar = '*' in t or t.startswith('enum') or t in (
                    'int', 'unsigned int', 'long', 'unsigned long', 'long long', 'unsigned long long',
                    'unsigned char', 'signed char', 'char', 'short', 'unsigned short', '_Bool', 'double', 'float')
                lines.append('\t%s %s = %s;' % (t, v, '0' if scalar else '{0}'))
                args.append(v)
        lines.append('\tif (total == 1) (void) %s(%s);' % (name, ', '.join(args)))
        k += 1
    lines.append('\treturn (int) total;')
    lines.append('}')
    c = os.path.join(WORK, 'wrappers.c')
    open(c, 'w').write('\n'.join(lines) + '\n')
    flags = ['gcc', '-std=c99', '-Wall', '-Wextra', '-Werror', '-pedantic', '-Wno-unused-variable',
             '-Wno-missing-field-initializers', '-Wno-deprecated-declarations', '-c', '-o', os.devnull, c]
    r = subprocess.run(flags + ['-I' + UPSTREAM], capture_output=True, text=True)
    if r.returncode != 0:
        print('note: the generated wrapper test does not compile against upstream either:\n' + r.stderr[:1500])
    r = subprocess.run(flags + ['-I' + OURS], capture_output=True, text=True)
    if r.returncode != 0:
        fail('inline wrappers do not compile with gcc -std=c99 -Wall -Wextra -Werror -pedantic:\n' + r.stderr[:3000])
    else:
        ok('C99 -pedantic compile of every wrapper')
    cpp = os.path.join(WORK, 'all.cpp')
    open(cpp, 'w').write(SRC + 'int main() { return 0; }\n')
    r = subprocess.run(['g++', '-Wall', '-Werror', '-fsyntax-only', '-I' + OURS, cpp], capture_output=True, text=True)
    if r.returncode != 0:
        fail('headers do not compile as C++:\n' + r.stderr[:3000])
    else:
        ok('C++ compile of every header')


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""make bench: ours against upstream libfabric and the wire's limit.

Runs the SAME upstream-built binary (Debian's fi_pingpong) against both
libraries, switching only LD_LIBRARY_PATH, plus a plain TCP ping-pong
(bench/tcp_pingpong.c) as the medium's limit. Configurations are run
interleaved (A B A B ...), medians are reported with the per-pair ratio
ours/upstream, and peak RSS of each client. Writes bench/results/latest.md
and bench/results/latest.svg.

  bench/run.py [--quick] [--smoke]

--quick: fewer sizes and repeats (under 2 minutes); --smoke: one
iteration of one size per configuration (used by make check to prove the
harness works; no numbers are meaningful then).
"""
import os
import re
import threading
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OURS = os.path.join(ROOT, 'build', 'lib')
TCP = os.path.join(ROOT, 'build', 'bench', 'tcp_pingpong')

QUICK = '--quick' in sys.argv
SMOKE = '--smoke' in sys.argv
# A smoke run proves the harness works; its numbers mean nothing, so they
# never replace the published results.
OUT = os.path.join(ROOT, 'build', 'bench-smoke') if SMOKE else os.path.join(ROOT, 'bench', 'results')
SIZES = [64] if SMOKE else ([1, 64, 8192, 1 << 20] if QUICK else [1, 64, 1024, 8192, 65536, 1 << 20, 4 << 20])
REPEATS = 1 if SMOKE else (2 if QUICK else 3)

# (label, library, provider, endpoint): the jobs users pick a libfabric for.
CONFIGS = [
    ('oxifabric sockets RDM', 'ours', 'sockets', 'rdm'),
    ('upstream tcp;ofi_rxm RDM', 'upstream', 'tcp;ofi_rxm', 'rdm'),
    ('upstream sockets RDM', 'upstream', 'sockets', 'rdm'),
    ('oxifabric sockets MSG', 'ours', 'sockets', 'msg'),
    ('upstream tcp MSG', 'upstream', 'tcp', 'msg'),
    ('plain TCP (limit)', 'tcp', None, None),
]
PAIRS = [('oxifabric sockets RDM', 'upstream tcp;ofi_rxm RDM'), ('oxifabric sockets MSG', 'upstream tcp MSG')]


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


def iters_for(size):
    if SMOKE:
        return 1
    return max(10, min(2000, (64 << 20) // max(size, 1) // 8))


def wait_listen(port, udp=False):
    for _ in range(200):
        out = subprocess.run(['ss', '-ltn' if not udp else '-lun'], capture_output=True, text=True).stdout
        if ':%d ' % port in out:
            return
        time.sleep(0.02)


def run_one(cfg, size):
    label, lib, prov, ep = cfg
    env = dict(os.environ)
    env.pop('FI_PROVIDER', None)
    if lib == 'ours':
        env['LD_LIBRARY_PATH'] = OURS
    else:
        env.pop('LD_LIBRARY_PATH', None)
    port = free_port()
    n = iters_for(size)
    if lib == 'tcp':
        srv_cmd = [TCP, '-B', str(port), '-S', str(size), '-I', str(n)]
        cli_cmd = [TCP, '-P', str(port), '-S', str(size), '-I', str(n), '127.0.0.1']
    else:
        base = ['fi_pingpong', '-p', prov, '-e', ep, '-S', str(size), '-I', str(n)]
        srv_cmd = base + ['-B', str(port)]
        cli_cmd = base + ['-P', str(port), '127.0.0.1']
    srv = subprocess.Popen(srv_cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listen(port)
    cli = subprocess.Popen(cli_cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    timer = threading.Timer(120, cli.kill)
    timer.start()
    out = cli.stdout.read()
    # wait4 gives this client's own peak RSS (KiB).
    _, _, ru = os.wait4(cli.pid, 0)
    timer.cancel()
    rss = ru.ru_maxrss
    try:
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0][0].isdigit():
            return float(f[6]), float(f[5]), rss
    return None


def main():
    os.makedirs(os.path.dirname(TCP), exist_ok=True)
    subprocess.run(['gcc', '-O2', '-o', TCP, os.path.join(ROOT, 'bench', 'tcp_pingpong.c')], check=True)
    results = {}
    for size in SIZES:
        for r in range(REPEATS):
            for cfg in CONFIGS:  # interleaved: every config once per repeat
                res = run_one(cfg, size)
                if res:
                    results.setdefault((cfg[0], size), []).append(res)
    os.makedirs(OUT, exist_ok=True)
    lines = ['# oxifabric benchmark', '',
             'Same binaries (Debian fi_pingpong, bench/tcp_pingpong) on both libraries; loopback; '
             'medians of %d interleaved runs; %s.' % (REPEATS, 'smoke run' if SMOKE else ('quick' if QUICK else 'full')),
             '', '## Latency (usec per transfer, median)', '',
             '| size | ' + ' | '.join(c[0] for c in CONFIGS) + ' |', '|---' * (len(CONFIGS) + 1) + '|']
    med = {}
    for size in SIZES:
        row = [str(size)]
        for cfg in CONFIGS:
            v = results.get((cfg[0], size))
            if v:
                m = statistics.median(x[0] for x in v)
                med[(cfg[0], size)] = (m, statistics.median(x[1] for x in v), max(x[2] for x in v))
                row.append('%.2f' % m)
            else:
                row.append('n/a')
        lines.append('| ' + ' | '.join(row) + ' |')
    lines += ['', '## Bandwidth (MB/s, median)', '', '| size | ' + ' | '.join(c[0] for c in CONFIGS) + ' |',
              '|---' * (len(CONFIGS) + 1) + '|']
    for size in SIZES:
        lines.append('| %d | ' % size + ' | '.join('%.1f' % med[(c[0], size)][1] if (c[0], size) in med else 'n/a'
                                               for c in CONFIGS) + ' |')
    lines += ['', '## Ratios ours/upstream (latency: lower is better)', '']
    for a, b in PAIRS:
        for size in SIZES:
            if (a, size) in med and (b, size) in med and med[(b, size)][0] > 0:
                bw = ('%.2fx' % (med[(a, size)][1] / med[(b, size)][1])) if med[(b, size)][1] > 0 else 'n/a'
                lines.append('- %s vs %s, %d B: latency %.2fx, bandwidth %s' % (
                    a, b, size, med[(a, size)][0] / med[(b, size)][0], bw))
    lines += ['', 'Peak RSS of the client processes (KiB): ' + ', '.join(
        '%s %d' % (c[0], max(med[(c[0], s)][2] for s in SIZES if (c[0], s) in med))
        for c in CONFIGS if any((c[0], s) in med for s in SIZES))]
    open(os.path.join(OUT, 'latest.md'), 'w').write('\n'.join(lines) + '\n')
    svg(med)
    print('\n'.join(lines))


def svg(med):
    """Latency against size, log-log, one line per configuration."""
    import math
    w, h, pad = 720, 420, 60
    pts = [v[0] for v in med.values() if v[0] > 0]
    if not pts:
        return
    lo, hi = math.log10(min(pts)), math.log10(max(pts)) + 0.1
    xs = [math.log2(max(s, 1)) for s in SIZES]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    colors = ['#d62728', '#1f77b4', '#9467bd', '#ff7f0e', '#2ca02c', '#7f7f7f']
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (w, h),
           '<text x="%d" y="20">Latency (usec, log) against message size (bytes, log2)</text>' % pad]
    for i, c in enumerate(CONFIGS):
        p = []
        for s in SIZES:
            if (c[0], s) in med and med[(c[0], s)][0] > 0:
                x = pad + (math.log2(max(s, 1)) - x0) / (x1 - x0) * (w - 2 * pad)
                y = h - pad - (math.log10(med[(c[0], s)][0]) - lo) / (hi - lo) * (h - 2 * pad)
                p.append('%.1f,%.1f' % (x, y))
        if p:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colors[i % 6], ' '.join(p)))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (w - 250, 40 + 14 * i, colors[i % 6], c[0]))
    for s in SIZES:
        x = pad + (math.log2(max(s, 1)) - x0) / (x1 - x0) * (w - 2 * pad)
        out.append('<text x="%.1f" y="%d">%d</text>' % (x, h - pad + 15, s))
    out.append('</svg>')
    open(os.path.join(OUT, 'latest.svg'), 'w').write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()

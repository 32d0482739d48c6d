#!/usr/bin/env python3
"""make bench: oxifabric against upstream libfabric and the medium's limit.

Every job runs the SAME binaries on both libraries, switching only
LD_LIBRARY_PATH (ours: build/lib; upstream: Debian's libfabric.so.1):

  fi_pingpong MSG / RDM      Debian's unmodified fi_pingpong
  fi_msg_pingpong            fabtests-compat/benchmarks (built against
  fi_rdm_tagged_pingpong       Debian's headers by `make bench-progs`)
  fi_rdm_tagged_bw             (its 64-in-flight rate is also the message rate)
  fi_rma_bw -o write|read      (RMA streaming, 64 in flight; FI_RMA providers)
  fi_rdm_many_peers          one hub endpoint and 1..512 peer endpoints:
                             setup time, memory per peer, aggregate rate
                             (echo; and -U: every peer sends to the hub)
  MPI ping-pong / bandwidth  fabtests-compat/mpi/mpi_bench.c through Open MPI's
                             ofi MTL (pml cm); and Open MPI's own shared
                             memory (pml ob1, btl vader), the mark for shm
  plain TCP ping-pong/stream bench/tcp_pingpong.c: busy-polling TCP_NODELAY
                             loopback, the best a TCP-based provider can do

Ours uses our sockets provider over TCP ("oxifabric sockets", with
FI_SOCKETS_SHM=0: every process here shares one host, and the network
jobs' targets are about TCP), and for the RDM, MPI and many-peer jobs
also our shm provider (issue 25), compared with upstream's shm (and, for
MPI, with Open MPI's vader), and our sockets provider as it comes, its
same-host peers reached by shared memory ("+shm", issue 26; for MPI under
the name Open MPI picks, tcp;ofi_rxm); upstream uses its best providers
for the job on this machine (tcp for MSG; tcp;ofi_rxm, sockets,
udp;ofi_rxd and shm for RDM; a provider that fails here, ours shm
included, is skipped with a note). Each
configuration runs several times, interleaved (A B A B ...); medians,
ratios ours/upstream, the peak RSS of every process (server and client, or
each MPI rank) and the report targets (met or missed) are written to
bench/results/latest.md and latest.svg.

  bench/run.py [--quick] [--smoke]

OXI_BENCH_LIB=DIR runs another build of ours (a before/after comparison);
OXI_BENCH_BEFORE=DIR adds that build as a further contender, "oxifabric
before sockets", interleaved with the rest in the same run, so a
before/after comparison shares the machine's conditions;
OXI_BENCH_OUT=DIR writes its results there instead of bench/results.
Every run except the smoke one also counts the client's syscalls per
message under strace (ping-pong and a window of 64, ours with and without
send coalescing, upstream tcp;ofi_rxm).
OXI_BENCH_JOBS=a,b runs only the jobs whose names contain one of these
words (`OXI_BENCH_JOBS=tagged,MPI`); OXI_BENCH_REPEATS=N sets the repeats
(more of them steady the medians on a busy machine).

--quick: fewer sizes and repeats (under 2 minutes). --smoke: one iteration
of one size for every job and configuration, output under build/bench-smoke
(used by make check through `make bench-smoke`; its numbers mean nothing).
"""
import math
import os
import signal
import socket
import statistics
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# OXI_BENCH_LIB: another build of ours (a before/after comparison).
OURS = os.environ.get('OXI_BENCH_LIB') or os.path.join(ROOT, 'build', 'lib')
BIN = os.path.join(ROOT, 'build', 'bench')
# OXI_BENCH_BEFORE: an earlier build of ours run beside it in the same run.
BEFORE = os.environ.get('OXI_BENCH_BEFORE')

QUICK = '--quick' in sys.argv
SMOKE = '--smoke' in sys.argv
MODE = 'smoke' if SMOKE else ('quick' if QUICK else 'full')
OUT = os.environ.get('OXI_BENCH_OUT') or (os.path.join(ROOT, 'build', 'bench-smoke') if SMOKE else os.path.join(ROOT, 'bench', 'results'))
KI, MI = 1 << 10, 1 << 20
if SMOKE:
    SIZES, PP_SIZES, REPEATS, ITERS = [64], [64], 1, 1
elif QUICK:
    SIZES = [1, 8, 64, KI, 8 * KI, 64 * KI, MI, 4 * MI]
    PP_SIZES = [8, MI]  # fi_pingpong: one process pair per size
    REPEATS, ITERS = 3, 300
else:
    SIZES = [1, 8, 64, KI, 8 * KI, 64 * KI, MI, 4 * MI]
    PP_SIZES = [1, 8, 64, KI, 8 * KI, 64 * KI, MI, 4 * MI]
    REPEATS, ITERS = 5, 1000
if os.environ.get('OXI_BENCH_REPEATS') and not SMOKE:
    REPEATS = int(os.environ['OXI_BENCH_REPEATS'])
TIMEOUT = 30 if SMOKE else 90  # seconds for one process pair
# Many-peer job: peer endpoints served by one hub endpoint (all peers in one
# process, so every count runs two busy processes on the same cores), and
# the messages the hub exchanges with them (a window of 64 in flight).
PEER_COUNTS = [4] if SMOKE else ([1, 128, 512] if QUICK else [1, 16, 128, 512])
PEER_MSGS = 200 if SMOKE else 20000
RATE_SIZES = [s for s in SIZES if s <= 64 * KI]
# Round trips of the ping-pong jobs whose programs cap large sizes
# themselves (fabtests-compat benchmarks, mpi_bench): a sub-microsecond
# latency over a few hundred round trips is mostly the machine's noise
# (one preemption adds tenths of a microsecond to the mean).
LAT_ITERS = 1 if SMOKE else 20000
LAT, BW = 'latency', 'bandwidth'


class Cfg:
    """One library/provider configuration of a job."""

    def __init__(self, lib, prov, slow=False, oob=False, env=None, suffix=''):
        self.lib, self.prov, self.slow, self.oob = lib, prov, slow, oob
        self.env = env or {}
        self.label = 'plain TCP' if lib == 'tcp' else 'Open MPI vader' if lib == 'vader' else {
            'ours': 'oxifabric ', 'before': 'oxifabric before '}.get(lib, 'upstream ') + prov + suffix

    def iters(self, lat=False):
        # Upstream's sockets and udp;ofi_rxd take milliseconds per transfer
        # here; fewer iterations keep the run short (medians stay valid).
        if self.slow:
            return max(1, ITERS // 50)
        return max(ITERS, LAT_ITERS) if lat else ITERS


# Our sockets provider over TCP: every process here is on one host, where
# its RDM endpoints would take the same-host path (issue 26); the network
# jobs and their targets are about TCP, so that path is off for them.
TCP_ONLY = {'FI_SOCKETS_SHM': '0'}


def ours_cfgs():
    """Our build over TCP, and the earlier one when OXI_BENCH_BEFORE names it."""
    return [Cfg('ours', 'sockets', env=TCP_ONLY)] + ([Cfg('before', 'sockets', env=TCP_ONLY)] if BEFORE else [])


# Our sockets provider as it comes (issue 26): same-host peers by shared
# memory, under the names an application picks (Open MPI: tcp;ofi_rxm).
HYBRID = [Cfg('ours', 'sockets', suffix='+shm')]
HYBRID_MPI = [Cfg('ours', 'tcp;ofi_rxm', suffix='+shm')]


# Shared memory (issue 25): ours against upstream's shm. Names are made
# up when an endpoint opens, so the programs swap them over TCP (-E).
SHM_CFGS = [Cfg('ours', 'shm', oob=True), Cfg('upstream', 'shm', oob=True)]


def rdm_cfgs(with_shm=True):
    c = ours_cfgs() + [Cfg('upstream', 'tcp;ofi_rxm'), Cfg('upstream', 'sockets', slow=True),
         Cfg('upstream', 'udp;ofi_rxd', slow=True)]
    return c + (SHM_CFGS if with_shm else [])


def comparable(ours, other):
    """Whether a ratio of these two labels means something: our shm against
    shared-memory transports, our sockets against the network ones."""
    local = lambda l: 'shm' in l or 'vader' in l
    return local(ours) == local(other)


MSG_CFGS = ours_cfgs() + [Cfg('upstream', 'tcp')]
# One-sided jobs: an earlier build of ours may not have RMA at all.
RMA_CFGS = [Cfg('ours', 'sockets', env=TCP_ONLY)] + [Cfg('upstream', 'tcp;ofi_rxm'),
                                                      Cfg('upstream', 'sockets', slow=True)]
# (job name, kind, metric, program/endpoint, configurations)
JOBS = [
    ('fi_pingpong MSG', 'fipp', LAT, 'msg', MSG_CFGS),
    ('fi_pingpong RDM', 'fipp', LAT, 'rdm', rdm_cfgs()),
    ('fi_msg_pingpong', 'ft', LAT, 'fi_msg_pingpong', MSG_CFGS),
    ('fi_rdm_tagged_pingpong', 'ft', LAT, 'fi_rdm_tagged_pingpong', rdm_cfgs() + HYBRID),
    ('fi_rdm_tagged_bw', 'ft', BW, 'fi_rdm_tagged_bw', rdm_cfgs()),
    # RMA streaming (a window of 64 in flight): the providers with FI_RMA.
    ('fi_rma_bw write', 'ft', BW, 'fi_rma_bw -o write', RMA_CFGS),
    ('fi_rma_bw read', 'ft', BW, 'fi_rma_bw -o read', RMA_CFGS),
    # RMA latency: a ping-pong of fi_writedata (the target learns of a
    # write from its remote CQ data); atomic rate: FI_SUM on uint64, 64 in
    # flight.
    ('fi_rma_pingpong', 'ft', LAT, 'fi_rma_pingpong', RMA_CFGS),
    ('fi_rma_bw atomic', 'ft', BW, 'fi_rma_bw -o atomic', RMA_CFGS),
    # MPI, and Open MPI's own shared memory (pml ob1, btl vader) as the
    # mark for shared memory. No shm provider runs here: Open MPI 4.1's
    # ofi MTL asks for FI_REMOTE_COMM, which no same-host provider offers
    # (ours and upstream's alike; issue 26 is the way).
    ('MPI', 'mpi', None, None, ours_cfgs() + HYBRID_MPI + [Cfg('upstream', 'tcp;ofi_rxm')] + [Cfg('vader', 'vader')]),
    # MPI one-sided: Open MPI's osc rdma over btl ofi (put and get). Open
    # MPI 4.1 does not run it on upstream here (btl ofi finds the ranks
    # unreachable over tcp;ofi_rxm; sockets crashes): the full run tries
    # and notes that, the smoke run in make check does not.
    ('MPI one-sided', 'mpi1', None, None, [Cfg('ours', 'sockets', env=TCP_ONLY)] + ([] if SMOKE else [
        Cfg('upstream', 'tcp;ofi_rxm'), Cfg('upstream', 'sockets', slow=True)])),
    ('many peers', 'peers', None, None,
     ours_cfgs() + HYBRID + [Cfg('upstream', 'tcp;ofi_rxm'), Cfg('upstream', 'sockets', slow=True)] + SHM_CFGS),
    # Incast: every peer endpoint sends to the hub (-U), what issues 25
    # and 26 ask of 512 peers; ours only (upstream's shm refuses an AV of
    # 512, its tcp;ofi_rxm does not set up 128 peers here).
    ('many peers incast', 'peers', None, '-U', [Cfg('ours', 'sockets', env=TCP_ONLY)] + HYBRID + [SHM_CFGS[0]]),
    ('plain TCP', 'tcp', None, None, [Cfg('tcp', 'limit')]),
]
if os.environ.get('OXI_BENCH_JOBS'):
    _want = os.environ['OXI_BENCH_JOBS'].split(',')
    JOBS = [j for j in JOBS if any(w in j[0] for w in _want)]
# Jobs whose results come out of another job's run (MPI and TCP give two each).
METRIC = {'fi_pingpong MSG': LAT, 'fi_pingpong RDM': LAT, 'fi_msg_pingpong': LAT,
          'fi_rdm_tagged_pingpong': LAT, 'fi_rdm_tagged_bw': BW, 'fi_rma_bw write': BW,
          'fi_rma_bw read': BW, 'fi_rma_pingpong': LAT, 'fi_rma_bw atomic': BW, 'MPI ping-pong': LAT,
          'MPI bandwidth': BW, 'MPI put latency': LAT, 'MPI get latency': LAT, 'MPI put bandwidth': BW,
          'MPI get bandwidth': BW, 'TCP ping-pong': LAT, 'TCP stream': BW}
# mpi_bench -O result lines and the job each goes to.
MPI1_LINES = {'put_lat': 'MPI put latency', 'get_lat': 'MPI get latency', 'put_bw': 'MPI put bandwidth',
              'get_bw': 'MPI get bandwidth'}

notes = []


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


def listening(port, udp):
    """True once something is bound to port (TCP: listening)."""
    files = ['/proc/net/udp', '/proc/net/udp6'] if udp else ['/proc/net/tcp', '/proc/net/tcp6']
    want = ':%04X' % port
    for f in files:
        try:
            for line in open(f).read().splitlines()[1:]:
                p = line.split()
                if p[1].endswith(want) and (udp or p[3] == '0A'):
                    return True
        except OSError:
            pass
    return False


def env_for(lib):
    env = dict(os.environ)
    for k in ('FI_PROVIDER', 'LD_LIBRARY_PATH', 'LD_PRELOAD'):
        env.pop(k, None)
    if lib == 'ours':
        env['LD_LIBRARY_PATH'] = OURS
    elif lib == 'before':
        env['LD_LIBRARY_PATH'] = BEFORE
    # Keep every provider on loopback (both libraries honour these).
    env.update(FI_TCP_IFACE='lo', FI_SOCKETS_IFACE='lo', FI_UDP_IFACE='lo')
    return env


def spawn(cmd, env, rssfile, out):
    return subprocess.Popen([os.path.join(BIN, 'rsswrap'), rssfile] + cmd, env=env, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)


def finish(p, deadline):
    try:
        p.wait(timeout=max(0.1, deadline - time.time()))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return False
    return p.returncode == 0


def read_rss(path):
    try:
        v = int(open(path).read().strip())
        os.unlink(path)
        return v
    except (OSError, ValueError):
        return None


def run_pair(srv_cmd, cli_cmd, env, port, udp=False):
    """Server then client; returns (client output, ok, (server KiB, client KiB), server output)."""
    tmp = os.path.join(ROOT, 'build', 'bench', 'tmp')
    os.makedirs(tmp, exist_ok=True)
    rs, rc = os.path.join(tmp, 'srv.rss'), os.path.join(tmp, 'cli.rss')
    so, co = open(os.path.join(tmp, 'srv.out'), 'w+'), open(os.path.join(tmp, 'cli.out'), 'w+')
    deadline = time.time() + TIMEOUT
    srv = spawn(srv_cmd, env, rs, so)
    t0 = time.time()
    while not listening(port, udp) and time.time() - t0 < 10 and srv.poll() is None:
        time.sleep(0.005)
    cli = spawn(cli_cmd, env, rc, co)
    ok = finish(cli, deadline)
    ok = finish(srv, time.time() + (5 if ok else 1)) and ok
    so.seek(0)
    co.seek(0)
    return co.read(), ok, (read_rss(rs), read_rss(rc)), so.read()


def parse_lines(out, usec_col, mbps_col):
    """fabtests-style lines: {bytes: (usec per transfer, MB/s)}."""
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) > max(usec_col, mbps_col) and f[0][0].isdigit():
            try:
                size = int(f[0]) if f[0].isdigit() else int(f[0][:-1]) * {'k': KI, 'm': MI}[f[0][-1]]
                res[size] = (float(f[usec_col]), float(f[mbps_col]))
            except (ValueError, KeyError):
                pass
    return res


def run_cfg(job, kind, arg, cfg, size=None):
    """One run of one configuration: ({result job: {size: (usec, MB/s)}}, {process: KiB}) or None."""
    env = env_for(cfg.lib)
    env.update(cfg.env)
    port = free_port()
    n = str(cfg.iters(lat=(kind == 'ft' and job in (j[0] for j in JOBS if j[2] == LAT)) or kind == 'mpi'))
    sizes = ','.join(str(s) for s in SIZES)
    warm = ['-w', '0' if SMOKE else ('1' if cfg.slow else '10')]
    if kind == 'fipp':
        base = ['fi_pingpong', '-p', cfg.prov, '-e', arg, '-S', str(size), '-I', n]
        out, ok, rss, err = run_pair(base + ['-B', str(port)], base + ['-P', str(port), '127.0.0.1'], env, port)
        res = {job: parse_lines(out, 6, 5)} if ok else None
    elif kind == 'ft':
        # The program and its own options ('fi_rma_bw -o read').
        prog, *opts = arg.split()
        base = [os.path.join(BIN, prog), '-p', cfg.prov] + opts + ['-S', sizes, '-I', n, '-T', '20'] + warm
        if prog in ('fi_rdm_tagged_bw', 'fi_rma_bw'):
            base += ['-W', '1' if SMOKE else ('16' if cfg.slow else '64')]
        if cfg.oob:
            base.append('-E')
        srv = base + ['-B', str(port)] + ([] if cfg.oob else ['-s', '127.0.0.1'])
        udp = 'udp' in cfg.prov and not cfg.oob
        out, ok, rss, err = run_pair(srv, base + ['-P', str(port), '127.0.0.1'], env, port, udp)
        res = {job: parse_lines(out, 5, 4)} if ok else None
    elif kind == 'tcp':
        res, rss, ok, err = {}, {}, True, ''
        for mode, name in (('pingpong', 'TCP ping-pong'), ('stream', 'TCP stream')):
            port = free_port()
            base = [os.path.join(BIN, 'tcp_pingpong'), '-m', mode, '-S', sizes, '-I', n]
            out, ok1, r, e = run_pair(base + ['-B', str(port)], base + ['-P', str(port), '127.0.0.1'], env, port)
            ok, err = ok and ok1, err + e
            res[name] = parse_lines(out, 5, 4)
            rss[name] = r
        return (res, rss) if ok else fail(job, cfg, out + err)
    elif kind == 'peers':
        return run_peers(job, cfg, env, arg)
    else:  # mpi, mpi1 (one-sided through osc rdma over btl ofi)
        env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
        btl = ['--mca', 'btl', 'self'] if kind == 'mpi' else [
            '--mca', 'btl', 'ofi,self', '--mca', 'osc', 'rdma', '--mca', 'btl_ofi_provider_include', cfg.prov]
        pml = ['--mca', 'pml', 'cm', '--mca', 'mtl', 'ofi', '--mca', 'mtl_ofi_provider_include', cfg.prov] + btl
        if cfg.lib == 'vader':  # Open MPI's own shared memory, no libfabric
            pml = ['--mca', 'pml', 'ob1', '--mca', 'btl', 'vader,self']
        cmd = ['mpirun', '--oversubscribe', '-np', '2', '--host', 'localhost:2'] + pml + [
               '--mca', 'oob_tcp_if_include', 'lo']
        cmd += ['-x', 'FI_TCP_IFACE', '-x', 'FI_SOCKETS_IFACE', '-x', 'FI_UDP_IFACE']
        cmd += [a for k in cfg.env for a in ('-x', k)]
        if cfg.lib in ('ours', 'before'):
            cmd += ['-x', 'LD_LIBRARY_PATH']
        cmd += [os.path.join(BIN, 'mpi_bench'), '-S', sizes, '-I', n, '-W', '1' if SMOKE else '64']
        cmd += ['-O'] if kind == 'mpi1' else []
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2)
            out, ok = p.stdout + p.stderr, p.returncode == 0
        except subprocess.TimeoutExpired as e:
            out, ok = str(e.stdout or '') + str(e.stderr or ''), False
        pp, bw, ranks, one = {}, {}, {}, {}
        for line in out.splitlines():
            f = line.split()
            if len(f) == 5 and f[0] in ('pingpong', 'bw'):
                (pp if f[0] == 'pingpong' else bw)[int(f[1])] = (float(f[3]), float(f[4]))
            elif len(f) == 5 and f[0] in MPI1_LINES:
                one.setdefault(MPI1_LINES[f[0]], {})[int(f[1])] = (float(f[3]), float(f[4]))
            elif len(f) == 3 and f[0] == 'rss':
                ranks[int(f[1])] = int(f[2])
        if kind == 'mpi1':
            return (one, {}) if ok and one else fail(job, cfg, out)
        if not ok or not pp:
            return fail(job, cfg, out)
        return {'MPI ping-pong': pp, 'MPI bandwidth': bw}, {'MPI': (ranks.get(0), ranks.get(1))}
    if not res or not any(res.values()):
        return fail(job, cfg, out + err)
    return res, {job: rss}


PEERS_FAILED = set()


def run_peers(job, cfg, env, arg=None):
    """fi_rdm_many_peers for every peer count: {job: {n: (setup ms, msgs/s)},
    job + ' memory': {n: (bytes per connected peer, hub KiB)}}; `arg`: the
    mode's options for both sides (-U: incast)."""
    prog = os.path.join(BIN, 'fi_rdm_many_peers')
    mode = arg.split() if arg else []
    # Incast runs ten times longer: at millions of messages a second the
    # echo's count is over in milliseconds, mostly the senders' first
    # touch of 512 endpoints.
    many = PEER_MSGS * (10 if '-U' in mode and not SMOKE else 1)
    msgs = str(max(100, many // 50) if cfg.slow else many)
    timing, memory = {}, {}
    for n in PEER_COUNTS:
        if (job, cfg.label, n) in PEERS_FAILED:
            continue  # failed in an earlier repeat: noted once, not retried
        port = free_port()
        hub = [prog, '-p', cfg.prov, '-B', str(port), '-n', str(n), '-I', msgs, '-T', '30'] + mode
        hub += ['-E'] if cfg.oob else ['-s', '127.0.0.1']
        peers = [prog, '-p', cfg.prov, '-P', str(port), '-n', str(n), '-T', '30', '-I', msgs] + mode + (
            ['-E'] if cfg.oob else []) + ['127.0.0.1']
        out, ok, _rss, srv = run_pair(hub, peers, env, port)
        line = [l for l in srv.splitlines() if l.startswith('many_peers ')]
        if not ok or not line:
            PEERS_FAILED.add((job, cfg.label, n))
            fail('%s (%d peers)' % (job, n), cfg, srv + out)
            continue
        f = line[0].split()
        kv = dict(zip(f[1::2], f[2::2]))
        timing[n] = (float(kv['setup_ms']), float(kv['rate_msgs_per_s']))
        memory[n] = (float(kv['rss_per_peer_bytes']), float(kv['rss_connected_kib']))
    if not timing:
        return None
    return {job: timing, job + ' memory': memory}, {}


# Syscalls per message, counted by strace in the client process: the
# kernel crossings behind each microsecond. Counts of data syscalls do not
# depend on the machine's load (polls do: they count waiting).
SYSCALL_RUNS = [
    ('fi_rdm_tagged_pingpong', '8 B ping-pong, per round trip', ['-S', '8']),
    ('fi_rdm_tagged_bw', '8 B, 64 in flight, per message', ['-S', '8', '-W', '64']),
]
SYSCALL_CFGS = [('oxifabric sockets', 'ours', 'sockets', TCP_ONLY),
                ('oxifabric sockets, FI_SOCKETS_TX_COALESCE=0', 'ours', 'sockets',
                 dict(TCP_ONLY, FI_SOCKETS_TX_COALESCE='0')),
                ('upstream tcp;ofi_rxm', 'upstream', 'tcp;ofi_rxm', {})]
SEND_CALLS = ('sendmsg', 'sendto', 'write', 'writev', 'sendmmsg')
RECV_CALLS = ('recvmsg', 'recvfrom', 'read', 'readv', 'recvmmsg')
POLL_CALLS = ('epoll_wait', 'epoll_pwait', 'poll', 'ppoll', 'select')


def syscall_counts():
    """{(run label, cfg label): (sends, receives, polls) per message}; empty without strace."""
    if SMOKE or not shutil.which('strace'):
        return {}
    out = {}
    n = 2000
    for prog, label, extra in SYSCALL_RUNS:
        for name, lib, prov, envx in SYSCALL_CFGS:
            env = env_for(lib)
            env.update(envx)
            port = free_port()
            base = [os.path.join(BIN, prog), '-p', prov, '-I', str(n), '-w', '0', '-T', '30'] + extra
            trace = os.path.join(OUT, 'strace.%d' % os.getpid())
            os.makedirs(OUT, exist_ok=True)
            cli = ['strace', '-f', '-c', '-o', trace] + base + ['-P', str(port), '127.0.0.1']
            _out, ok, _rss, _err = run_pair(base + ['-B', str(port), '-s', '127.0.0.1'], cli, env, port)
            if not ok or not os.path.exists(trace):
                notes.append('syscall count, %s, %s: run failed' % (label, name))
                continue
            calls = {}
            for line in open(trace):
                f = line.split()
                if len(f) >= 5 and f[-1] not in ('total', 'syscall') and f[3].isdigit():
                    calls[f[-1]] = int(f[3])
            os.unlink(trace)
            per = lambda names: sum(calls.get(c, 0) for c in names) / n
            out[(label, name)] = (per(SEND_CALLS), per(RECV_CALLS), per(POLL_CALLS))
    return out


def syscall_section(counts):
    if not counts:
        return []
    L = ['## Syscalls per message (client process, strace -c)', '',
         'Sends and receives are the data-moving calls (sendmsg/sendto/write, recvfrom/recvmsg/read); '
         'polls (epoll_wait/poll) count busy-waiting, so they depend on timing.', '',
         '| run | configuration | sends | receives | polls |', '|---|---|---|---|---|']
    for (label, name), (snd, rcv, pol) in counts.items():
        L.append('| %s | %s | %.2f | %.2f | %.1f |' % (label, name, snd, rcv, pol))
    return L + ['']


def fail(job, cfg, out):
    tail = ' / '.join(l.strip() for l in out.strip().splitlines()[-3:])
    notes.append('%s, %s: run failed (%s)' % (job, cfg.label, tail[:300] or 'no output'))
    print('  FAILED: %s %s: %s' % (job, cfg.label, tail[:300]), file=sys.stderr)
    return None


def main():
    t_start = time.time()
    missing = [p for p in ('rsswrap', 'tcp_pingpong', 'mpi_bench', 'fi_msg_pingpong', 'fi_rdm_many_peers') if
               not os.path.exists(os.path.join(BIN, p))]
    if missing:
        sys.exit('bench: %s not built; run `make bench-progs`' % ', '.join(missing))
    # results[(job, label)][size] = [(usec, MB/s), ...]; rss[(job, label)] = [(server, client), ...]
    results, rss, skipped = {}, {}, set()

    def record(job, cfg, r):
        if r is None:
            skipped.add((job, cfg.label))
            return
        res, mem = r
        for name, per in res.items():
            for s, v in per.items():
                results.setdefault((name, cfg.label), {}).setdefault(s, []).append(v)
        for name, v in mem.items():
            rss.setdefault((name, cfg.label), []).append(v)

    for rep in range(REPEATS):
        for job, kind, metric, arg, cfgs in JOBS:
            t = time.time()
            live = [c for c in cfgs if (job, c.label) not in skipped]
            if kind == 'fipp':
                for size in PP_SIZES:
                    for c in live:  # interleaved: A B A B for every size
                        if (job, c.label) not in skipped:
                            record(job, c, run_cfg(job, kind, arg, c, size))
            else:
                for c in live:
                    record(job, c, run_cfg(job, kind, arg, c))
            if not SMOKE:
                print('[%s] repeat %d/%d %s: %.1f s' % (MODE, rep + 1, REPEATS, job, time.time() - t),
                      file=sys.stderr)
    elapsed = time.time() - t_start
    med = {}
    for key, per in results.items():
        for s, vals in per.items():
            med[key + (s,)] = (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
    os.makedirs(OUT, exist_ok=True)
    counts = syscall_counts()
    md = report(med, rss, elapsed, counts)
    open(os.path.join(OUT, 'latest.md'), 'w').write(md)
    svg(med, os.path.join(OUT, 'latest.svg'))
    print(md)
    # Upstream providers, an earlier build of ours and our shm provider
    # (until issue 25 lands) that fail are only noted; this build's sockets
    # provider must run.
    ours_failed = sorted('%s (%s)' % k for k in skipped
                         if k[1].startswith('oxifabric sockets') or k[1].endswith('+shm'))
    if ours_failed:
        # Upstream providers that fail here are only noted; ours must run.
        sys.exit('bench: failed: ' + ', '.join(ours_failed))


def labels_of(name):
    seen = []
    for (n, label, _s) in MED_KEYS:
        if n == name and label not in seen:
            seen.append(label)
    return seen


MED_KEYS = []


def fmt(v):
    return 'n/a' if v is None else ('%.0f' % v if v >= 100 else ('%.1f' % v if v >= 10 else '%.2f' % v))


def size_name(s):
    return '%d MiB' % (s // MI) if s >= MI else ('%d KiB' % (s // KI) if s >= KI else '%d B' % s)


def report(med, rss, elapsed, counts=None):
    MED_KEYS[:] = sorted(med, key=lambda k: k[2])
    order = ['fi_pingpong MSG', 'fi_msg_pingpong', 'fi_pingpong RDM', 'fi_rdm_tagged_pingpong',
             'fi_rdm_tagged_bw', 'fi_rma_bw write', 'fi_rma_bw read', 'fi_rma_pingpong', 'fi_rma_bw atomic',
             'MPI ping-pong', 'MPI bandwidth', 'MPI put latency', 'MPI get latency', 'MPI put bandwidth',
             'MPI get bandwidth', 'TCP ping-pong', 'TCP stream']
    L = ['# oxifabric benchmark (%s run)' % MODE, '',
         'Same binaries on both libraries (switching only `LD_LIBRARY_PATH`); loopback on a shared '
         '%d-core machine; every configuration run %d times, interleaved; medians. Latency is usec per '
         'one-way transfer (half the round trip), bandwidth MB/s (10^6 bytes). Ratios are ours/upstream: '
         'below 1 is better for latency, above 1 for bandwidth. Total run time %.0f s.'
         % (os.cpu_count() or 0, REPEATS, elapsed), '']
    tcp_lat = {s: med.get(('TCP ping-pong', 'plain TCP', s)) for s in SIZES}
    tcp_bw = {s: med.get(('TCP stream', 'plain TCP', s)) for s in SIZES}
    for name in order:
        labels = labels_of(name)
        if not labels:
            continue
        metric = METRIC[name]
        col = 0 if metric == LAT else 1
        # The earlier build of ours (OXI_BENCH_BEFORE) is a baseline too.
        ours = [l for l in labels if l.startswith('oxifabric') and 'before' not in l]
        ups = [l for l in labels if l.startswith(('upstream', 'Open MPI')) or 'before' in l]
        pairs = [(o, u) for o in ours for u in ups if comparable(o, u)]
        sizes = sorted({k[2] for k in med if k[0] == name})
        L += ['## %s: %s (%s)' % (name, metric, 'usec' if metric == LAT else 'MB/s'), '']
        head = labels + ['%s / %s' % (o.replace('oxifabric ', 'ours '),
                                      u.replace('upstream ', 'up ').replace('oxifabric ', ''))
                         for o, u in pairs]
        L += ['| size | ' + ' | '.join(head) + ' |', '|---' * (len(head) + 1) + '|']
        for s in sizes:
            row = [size_name(s)]
            for l in labels:
                v = med.get((name, l, s))
                row.append(fmt(v[col]) if v else 'n/a')
            for o, u in pairs:
                a, b = med.get((name, o, s)), med.get((name, u, s))
                row.append('%.2fx' % (a[col] / b[col]) if a and b and b[col] > 0 else 'n/a')
            L.append('| ' + ' | '.join(row) + ' |')
        L.append('')
    L += rate_section(med)
    L += atomic_section(med)
    L += syscall_section(counts or {})
    L += peers_section(med)
    L += incast_section(med)
    L += ['## Peak RSS (KiB, median over runs; each process measured on its own)', '',
          '| job | configuration | server / rank 1 | client / rank 0 |', '|---|---|---|---|']
    for (name, label), vals in sorted(rss.items()):
        srv = [v[0] for v in vals if v and v[0]]
        cli = [v[1] for v in vals if v and v[1]]
        if name == 'MPI':  # mpi_bench prints rank 0 then rank 1
            srv, cli = cli, srv
        L.append('| %s | %s | %s | %s |' % (name, label, '%d' % statistics.median(srv) if srv else 'n/a',
                                            '%d' % statistics.median(cli) if cli else 'n/a'))
    L += ['', '## Targets (reported, not asserted)', '']
    L += targets(med, tcp_lat, tcp_bw)
    if notes:
        L += ['', '## Notes', ''] + ['- ' + n for n in notes]
    return '\n'.join(L) + '\n'


def rate_table(med, job, title, sizes, ours='oxifabric sockets', base='upstream tcp;ofi_rxm'):
    """Operations per second of a windowed job (1e6 / usec per transfer), ours against base; shared
    memory and network transports each in their own table."""
    labels = [l for l in labels_of(job) if comparable(ours, l)]
    if not labels:
        return []
    L = ['## %s' % title, '',
         '| size | ' + ' | '.join(labels) + ' | %s / %s |' % (ours.replace('oxifabric ', 'ours '),
                                                             base.replace('upstream ', 'up ')),
         '|---' * (len(labels) + 2) + '|']
    for s in sizes:
        row = [size_name(s)]
        for l in labels:
            v = med.get((job, l, s))
            row.append('%.0f' % (1e6 / v[0]) if v and v[0] > 0 else 'n/a')
        a = med.get((job, ours, s))
        b = med.get((job, base, s))
        row.append('%.2fx' % (b[0] / a[0]) if a and b and a[0] > 0 else 'n/a')
        L.append('| ' + ' | '.join(row) + ' |')
    return L + ['']


def rate_section(med):
    """Message rate from fi_rdm_tagged_bw (a window of 64 sends in flight): messages/s."""
    return rate_table(med, 'fi_rdm_tagged_bw', 'Message rate (fi_rdm_tagged_bw, 64 in flight): messages/s',
                      RATE_SIZES) + rate_table(
        med, 'fi_rdm_tagged_bw', 'Shared-memory message rate (fi_rdm_tagged_bw, 64 in flight): messages/s',
        RATE_SIZES, 'oxifabric shm', 'upstream shm')


def atomic_section(med):
    """Atomic rate from fi_rma_bw -o atomic (FI_SUM on uint64, 64 in flight): operations/s."""
    return rate_table(med, 'fi_rma_bw atomic',
                      'Atomic rate (fi_rma_bw -o atomic: FI_SUM on uint64, 64 in flight): operations/s',
                      sorted({k[2] for k in med if k[0] == 'fi_rma_bw atomic'}))


def incast_section(med):
    """fi_rdm_many_peers -U: N peer endpoints sending to one hub."""
    labels = labels_of('many peers incast')
    if not labels:
        return []
    L = ['## Many senders, one receiver (fi_rdm_many_peers -U: N peer endpoints in one process send to one hub)',
         '', 'Rate: 8 B messages the hub receives, from the first to the last (messages/s); the peer process '
         'sends round-robin over its endpoints, 64 in flight.', '',
         '| peers | ' + ' | '.join(labels) + ' |', '|---' * (len(labels) + 1) + '|']
    for n in PEER_COUNTS:
        row = [str(n)]
        for l in labels:
            t = med.get(('many peers incast', l, n))
            row.append('%.0f' % t[1] if t else 'n/a')
        L.append('| ' + ' | '.join(row) + ' |')
    return L + ['']


def peers_section(med):
    """fi_rdm_many_peers: one hub endpoint and N peer endpoints."""
    labels = labels_of('many peers')
    if not labels:
        return []
    L = ['## Many peers (fi_rdm_many_peers: one RDM hub endpoint, N peer endpoints in one process)', '',
         'Setup: first hello to last ready at the hub (ms). Rate: 8 B messages the hub exchanges with '
         'its peers round-robin, 64 in flight (messages/s). Memory: the hub\'s resident growth per '
         'connected, then idle, peer (bytes).', '',
         '| peers | ' + ' | '.join('%s setup / rate / bytes per peer' % l for l in labels) + ' |',
         '|---' * (len(labels) + 1) + '|']
    for n in PEER_COUNTS:
        row = [str(n)]
        for l in labels:
            t, m = med.get(('many peers', l, n)), med.get(('many peers memory', l, n))
            row.append('%s / %s / %s' % (fmt(t[0]) if t else 'n/a', '%.0f' % t[1] if t else 'n/a',
                                         '%.0f' % m[0] if m else 'n/a'))
        L.append('| ' + ' | '.join(row) + ' |')
    return L + ['']


def best_up(med, name, s, col, exclude=('upstream shm',)):
    """Upstream's best value (lowest latency / highest bandwidth) and its label, shm excluded."""
    best = None
    for (n, l, sz), v in med.items():
        if n == name and sz == s and l.startswith('upstream') and l not in exclude:
            if best is None or (v[col] < best[0] if col == 0 else v[col] > best[0]):
                best = (v[col], l)
    return best


def targets(med, tcp_lat, tcp_bw):
    out = []
    ls = 8 if 8 in SIZES else SIZES[0]
    big = [s for s in SIZES if s >= MI]

    def line(text, ratio, goal, le):
        if ratio is None:
            out.append('- %s: not measured' % text)
            return
        met = ratio <= goal if le else ratio >= goal
        out.append('- %s: %.2fx (target %s %.1fx) %s' % (text, ratio, '<=' if le else '>=', goal,
                                                         'MET' if met else 'MISSED'))

    def ours(name, s, col):
        v = med.get((name, 'oxifabric sockets', s))
        return v[col] if v else None

    o = ours('fi_rdm_tagged_pingpong', ls, 0)
    b = best_up(med, 'fi_rdm_tagged_pingpong', ls, 0, ('upstream shm',))
    line('%d B RDM tagged latency (fi_rdm_tagged_pingpong), ours / upstream best, shm excluded (%s)'
         % (ls, b[1] if b else '-'), o / b[0] if o and b else None, 0.8, True)
    o = ours('fi_msg_pingpong', ls, 0)
    b = med.get(('fi_msg_pingpong', 'upstream tcp', ls))
    line('%d B MSG latency (fi_msg_pingpong), ours / upstream tcp' % ls, o / b[0] if o and b else None, 0.9, True)
    for s in big:
        o = ours('fi_rdm_tagged_bw', s, 1)
        b = best_up(med, 'fi_rdm_tagged_bw', s, 1)
        line('%s RDM bandwidth (fi_rdm_tagged_bw), ours / upstream best, shm excluded (%s)' % (size_name(s), b[1] if b else '-'),
             o / b[0] if o and b else None, 1.2, False)
    for s in big:
        o = ours('fi_rdm_tagged_bw', s, 1)
        t = tcp_bw.get(s)
        line('%s RDM bandwidth, ours / plain TCP stream' % size_name(s), o / t[1] if o and t else None, 0.9, False)
    # RMA (issue 10): streaming write and read against upstream's best RMA
    # provider and against the medium.
    for name in ('fi_rma_bw write', 'fi_rma_bw read'):
        for s in big:
            o = ours(name, s, 1)
            b = best_up(med, name, s, 1)
            line('%s RMA bandwidth (%s), ours / upstream best (%s)' % (size_name(s), name, b[1] if b else '-'),
                 o / b[0] if o and b else None, 1.2, False)
            t = tcp_bw.get(s)
            line('%s RMA bandwidth (%s), ours / plain TCP stream' % (size_name(s), name),
                 o / t[1] if o and t else None, 0.9, False)
    o = ours('fi_rma_pingpong', ls, 0)
    b = best_up(med, 'fi_rma_pingpong', ls, 0)
    line('%d B RMA write latency (fi_rma_pingpong, writedata), ours / upstream best (%s)' % (ls, b[1] if b else '-'),
         o / b[0] if o and b else None, 0.8, True)
    for s in (8, KI):
        o = ours('fi_rdm_tagged_bw', s, 0)
        b = med.get(('fi_rdm_tagged_bw', 'upstream tcp;ofi_rxm', s))
        line('%s message rate (fi_rdm_tagged_bw, 64 in flight), ours / upstream tcp;ofi_rxm' % size_name(s),
             b[0] / o if o and b else None, 1.5, False)
    most = max(PEER_COUNTS)
    m = med.get(('many peers memory', 'oxifabric sockets', most))
    out.append('- resident memory per idle peer (%d peers): %s (target <= 4096 bytes) %s'
               % (most, '%.0f bytes' % m[0] if m else 'not measured',
                  ('MET' if m[0] <= 4096 else 'MISSED') if m else ''))
    line('aggregate message rate with %d peers / with %d' % (most, min(PEER_COUNTS)),
         ratio_of(med, ('many peers', 'oxifabric sockets', most),
                  ('many peers', 'oxifabric sockets', min(PEER_COUNTS))), 0.8, False)
    for name in ('fi_rdm_tagged_pingpong', 'fi_msg_pingpong'):
        o = ours(name, ls, 0)
        t = tcp_lat.get(ls)
        line('%d B latency (%s), ours / plain TCP ping-pong' % (ls, name), o / t[0] if o and t else None, 1.2, True)
    o = med.get(('MPI ping-pong', 'oxifabric sockets', ls))
    b = med.get(('MPI ping-pong', 'upstream tcp;ofi_rxm', ls))
    line('%d B MPI ping-pong latency (mtl ofi), ours / upstream tcp;ofi_rxm' % ls,
         o[0] / b[0] if o and b else None, 0.8, True)
    out.extend(shm_targets(med, ls))
    out.extend(hybrid_targets(med, ls))
    return out


def ratio_of(med, a, b):
    """The message-rate ratio of two many-peer results, or None."""
    x, y = med.get(a), med.get(b)
    return x[1] / y[1] if x and y and y[1] > 0 else None


def fmt_ratio(r):
    return 'not measured' if r is None else '%.2fx' % r


def hybrid_targets(med, ls):
    """Issue 26's targets: our sockets provider with same-host peers by
    shared memory (its default), against our shm provider."""
    out = []

    def line(text, a, b, col, goal, le):
        x, y = med.get(a), med.get(b)
        if not x or not y or not x[col] or not y[col]:
            out.append('- same-host path: %s: not measured' % text)
            return
        r = x[col] / y[col] if le else x[col] / y[col]
        met = r <= goal if le else r >= goal
        out.append('- same-host path: %s: %.2fx (target %s %.1fx) %s' % (text, r, '<=' if le else '>=', goal,
                                                                         'MET' if met else 'MISSED'))
    shm = 'oxifabric shm'
    line('%d B MPI ping-pong latency, Open MPI over mtl ofi with tcp;ofi_rxm / our shm provider\'s own '
         '(fi_rdm_tagged_pingpong)' % ls, ('MPI ping-pong', 'oxifabric tcp;ofi_rxm+shm', ls),
         ('fi_rdm_tagged_pingpong', shm, ls), 0, 1.2, True)
    line('%d B tagged latency (fi_rdm_tagged_pingpong), sockets / our shm provider' % ls,
         ('fi_rdm_tagged_pingpong', 'oxifabric sockets+shm', ls), ('fi_rdm_tagged_pingpong', shm, ls), 0, 1.2, True)
    most, one = max(PEER_COUNTS), min(PEER_COUNTS)
    # The issues' target is the incast line (many peers sending to one
    # endpoint, as an MPI rank receives from the others of its host); the
    # echo figure, one process driving every peer endpoint, is reported.
    echo = ratio_of(med, ('many peers', 'oxifabric sockets+shm', most), ('many peers', 'oxifabric sockets+shm', one))
    out.append('- same-host path: aggregate message rate with %d peers / with %d (echo: one process drives %d '
               'endpoints; reported, not the target): %s' % (most, one, most, fmt_ratio(echo)))
    line('aggregate message rate with %d peers sending to one endpoint / with %d (incast)' % (most, one),
         ('many peers incast', 'oxifabric sockets+shm', most), ('many peers incast', 'oxifabric sockets+shm', one),
         1, 0.8, False)
    return out


def shm_targets(med, ls):
    """Issue 25's targets: our shm against upstream's shm, Open MPI's vader and itself."""
    out = []

    def ratio(job, a, b, col, inverse=False):
        x, y = med.get((job, a[0], a[1])), med.get((job, b[0], b[1]))
        if not x or not y or not x[col] or not y[col]:
            return None
        return y[col] / x[col] if inverse else x[col] / y[col]

    def line(text, r, goal, le):
        if r is None:
            out.append('- shm: %s: not measured' % text)
        else:
            out.append('- shm: %s: %.2fx (target %s %.1fx) %s' % (text, r, '<=' if le else '>=', goal,
                                                                   'MET' if (r <= goal if le else r >= goal)
                                                                   else 'MISSED'))
    ours, up = 'oxifabric shm', 'upstream shm'
    line('%d B tagged latency (fi_rdm_tagged_pingpong), ours / upstream shm' % ls,
         ratio('fi_rdm_tagged_pingpong', (ours, ls), (up, ls), 0), 0.8, True)
    line('%d B message rate (fi_rdm_tagged_bw, 64 in flight), ours / upstream shm' % ls,
         ratio('fi_rdm_tagged_bw', (ours, ls), (up, ls), 0, inverse=True), 1.5, False)
    for s in [s for s in SIZES if s == MI]:
        line('1 MiB bandwidth (fi_rdm_tagged_bw), ours / upstream shm',
             ratio('fi_rdm_tagged_bw', (ours, s), (up, s), 1), 1.2, False)
    # Open MPI 4.1's ofi MTL asks for FI_REMOTE_COMM, which no same-host
    # provider offers (ours and upstream's shm alike): Open MPI reaches our
    # shared memory through the sockets provider's same-host path (issue
    # 26), under the name it picks.
    line('%d B MPI ping-pong latency, ours (mtl ofi, tcp;ofi_rxm, same-host path) / Open MPI vader (pml ob1)' % ls,
         ratio('MPI ping-pong', ('oxifabric tcp;ofi_rxm+shm', ls), ('Open MPI vader', ls), 0), 1.5, True)
    most, one = max(PEER_COUNTS), min(PEER_COUNTS)
    echo = ratio_of(med, ('many peers', ours, most), ('many peers', ours, one))
    out.append('- shm: aggregate message rate with %d peers / with %d (echo: one process drives %d endpoints; '
               'reported, not the target): %s' % (most, one, most, fmt_ratio(echo)))
    line('aggregate message rate with %d peers sending to one endpoint / with %d (incast)' % (most, one),
         ratio_of(med, ('many peers incast', ours, most), ('many peers incast', ours, one)), 0.8, False)
    return out


COLORS = ['#d62728', '#1f77b4', '#9467bd', '#8c564b', '#17becf', '#ff7f0e', '#2ca02c', '#000000']


def svg(med, path):
    """Two log-log panels: latency (ping-pong jobs) and bandwidth (streaming jobs) against size."""
    lat = [('fi_rdm_tagged_pingpong', l, 'RDM ' + l) for l in labels_of('fi_rdm_tagged_pingpong')]
    lat += [('fi_msg_pingpong', l, 'MSG ' + l) for l in labels_of('fi_msg_pingpong')]
    lat += [('TCP ping-pong', 'plain TCP', 'plain TCP ping-pong (limit)')]
    bw = [('fi_rdm_tagged_bw', l, 'RDM ' + l) for l in labels_of('fi_rdm_tagged_bw')]
    bw += [('MPI bandwidth', l, 'MPI ' + l) for l in labels_of('MPI bandwidth')]
    bw += [('TCP stream', 'plain TCP', 'plain TCP stream (limit)')]
    W, H, pw, ph, ml, mt = 1100, 580, 430, 360, 70, 50
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="11">' % (W, H), '<rect width="100%" height="100%" fill="white"/>']
    style = {}
    for i, key in enumerate(sorted({(l) for _, l, _ in lat + bw})):
        style[key] = i
    for pi, (series, col, title, unit) in enumerate(((lat, 0, 'Latency (ping-pong)', 'usec'),
                                                     (bw, 1, 'Bandwidth (streaming)', 'MB/s'))):
        x0 = ml + pi * (pw + 120)
        pts = [med[(n, l, s)][col] for n, l, _ in series for s in SIZES if (n, l, s) in med and med[(n, l, s)][col] > 0]
        if not pts:
            continue
        lo, hi = math.floor(math.log10(min(pts))), math.ceil(math.log10(max(pts)))
        hi = hi if hi > lo else lo + 1
        sx = [math.log2(max(s, 1)) for s in SIZES]
        a, b = min(sx), max(sx) if max(sx) > min(sx) else min(sx) + 1

        def X(s):
            return x0 + (math.log2(max(s, 1)) - a) / (b - a) * pw

        def Y(v):
            return mt + ph - (math.log10(v) - lo) / (hi - lo) * ph
        o.append('<text x="%d" y="%d" font-size="13" font-weight="bold">%s, %s (log) against message size</text>'
                 % (x0, mt - 20, title, unit))
        o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' % (x0, mt, pw, ph))
        for e in range(lo, hi + 1):
            y = Y(10 ** e)
            o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (x0, y, x0 + pw, y))
            o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (x0 - 4, y + 4, fmt(10.0 ** e)))
        for s in SIZES:
            o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (X(s), mt, X(s), mt + ph))
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                     % (X(s), mt + ph + 14, size_name(s).replace(' ', '')))
        for li, (n, l, name) in enumerate(series):
            p = ['%.1f,%.1f' % (X(s), Y(med[(n, l, s)][col])) for s in SIZES
                 if (n, l, s) in med and med[(n, l, s)][col] > 0]
            if not p:
                continue
            c = COLORS[style[l] % len(COLORS)]
            dash = '' if n.startswith('fi_rdm') else (' stroke-dasharray="6,3"' if n.startswith(('fi_msg', 'MPI'))
                                                      else ' stroke-dasharray="2,2"')
            width = 3 if l.startswith('oxifabric') or l == 'plain TCP' else 1.5
            o.append('<polyline fill="none" stroke="%s" stroke-width="%s"%s points="%s"/>' % (c, width, dash, ' '.join(p)))
            ly = mt + ph + 34 + 13 * li
            o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>'
                     % (x0, ly - 4, x0 + 24, ly - 4, c, width, dash))
            o.append('<text x="%d" y="%d">%s</text>' % (x0 + 30, ly, name))
    o.append('</svg>')
    open(path, 'w').write('\n'.join(o) + '\n')


if __name__ == '__main__':
    main()

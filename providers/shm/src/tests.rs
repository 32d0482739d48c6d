//! Tests across processes: the test binary runs itself as the peer
//! (`child_process_entry` with a role in `OXI_SHM_CHILD`), so the region
//! really crosses a process boundary by `SCM_RIGHTS`. Every wait is
//! bounded; every child is killed and reaped when its test ends.

use crate::attach::{connect, EndpointId, Grant, Listener, Peer};
use crate::cma;
use crate::ring::tests::sender_as;
use crate::ring::tests::{check, meta, payload};
use crate::ring::{Polled, Receiver, Sender, Stall};
use oxifabric::abi::FI_EACCES;
use oxifabric::error::Error;
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "OXI_SHM_CHILD";
const HANDSHAKE: Duration = Duration::from_secs(20);
const CELLS: usize = 64;
const CELL: usize = 256;
/// Messages each way in the traffic test.
const TRAFFIC: u64 = 20_000;

/// A child process, killed and reaped when dropped.
pub(crate) struct Kid(pub(crate) Child);

impl Kid {
    pub(crate) fn spawn(role: &str, uid: Option<u32>) -> Kid {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "tests::child_process_entry",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(ROLE, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
        if let Some(uid) = uid {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(uid);
        }
        Kid(cmd.spawn().unwrap())
    }

    fn pid(&self) -> libc::pid_t {
        self.0.id() as libc::pid_t
    }

    /// The first line the child prints that starts with `prefix` (the
    /// harness prints its own lines too); EOF (a dead child) fails.
    pub(crate) fn line(&mut self, prefix: &str) -> String {
        let out = self.0.stdout.as_mut().unwrap();
        let mut r = std::io::BufReader::new(out);
        loop {
            let mut l = String::new();
            assert!(
                r.read_line(&mut l).unwrap() > 0,
                "child exited before {prefix:?}"
            );
            if let Some(rest) = l.strip_prefix(prefix) {
                return rest.trim().to_string();
            }
        }
    }

    /// Waits (bounded) for the child to exit by itself; its exit code.
    pub(crate) fn exit_code(&mut self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.0.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "child did not exit in {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A listener under a fresh id.
fn listener() -> Listener {
    Listener::bind(EndpointId::random().unwrap()).unwrap()
}

/// Retries `send` until it is not `Again`, bounded by `deadline`.
fn send_until(tx: &Sender, s: u32, i: u64, deadline: Instant) {
    let p = payload(s, i, tx.payload_capacity());
    loop {
        match tx.try_send(&meta(s, i), &[&p]) {
            Ok(()) => return,
            Err(Error::Again) => {
                assert!(Instant::now() < deadline, "ring stayed full");
                std::thread::yield_now();
            }
            Err(e) => panic!("send {i}: {e}"),
        }
    }
}

/// Receives `n` messages of sender `s`, checking each, bounded.
fn receive_checked(rx: &mut Receiver, s: u32, n: u64, deadline: Instant) {
    let cap = rx.payload_capacity();
    let mut next = vec![0u64; s as usize + 1];
    let mut buf = vec![0u8; cap];
    while next[s as usize] < n {
        match rx.poll(|m, p| (*m, p.copy_to(&mut buf))) {
            Polled::Got((m, len)) => {
                assert_eq!(check(&m, &buf[..len], &mut next, cap), s);
            }
            Polled::Empty => {
                assert!(Instant::now() < deadline, "stalled at {next:?}");
                std::thread::yield_now();
            }
            Polled::Refused(why) => panic!("refused: {why}"),
            Polled::Abandoned => panic!("nobody was reported gone"),
        }
    }
}

fn links(fd: BorrowedFd<'_>) -> u64 {
    // SAFETY: all-zero is a valid `stat`; fstat fills it.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fd is open and st is writable.
    assert_eq!(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) }, 0);
    st.st_nlink as u64
}

pub(crate) fn dev_shm() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Fails when `/dev/shm` holds entries it did not hold `before`, other
/// than other tests' `oxi-test-` files and entries that a live process
/// other than this one has open or mapped: the machine is shared, and
/// other programs (upstream's `shm` provider in a fabtests run) create
/// and remove their own there meanwhile; one left behind by us would be
/// held by nobody, our children being gone.
pub(crate) fn assert_nothing_new_in_dev_shm(before: &std::collections::BTreeSet<String>) {
    let new: Vec<_> = dev_shm()
        .difference(before)
        .filter(|n| !n.starts_with("oxi-test-"))
        .cloned()
        .collect();
    if new.is_empty() {
        return;
    }
    let held = held_elsewhere();
    let ours: Vec<_> = new
        .iter()
        .filter(|n| !held.contains(&format!("/dev/shm/{n}")))
        .collect();
    assert!(ours.is_empty(), "new entries in /dev/shm: {ours:?}");
}

/// Paths under `/dev/shm` that live processes other than this one map
/// or have open.
fn held_elsewhere() -> std::collections::BTreeSet<String> {
    let me = std::process::id().to_string();
    let mut held = std::collections::BTreeSet::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return held;
    };
    for p in procs.filter_map(|e| e.ok()) {
        let pid = p.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        held.extend(
            maps.lines()
                .filter_map(|l| l.find("/dev/shm/").map(|i| l[i..].to_string())),
        );
        if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            held.extend(
                fds.filter_map(|f| std::fs::read_link(f.ok()?.path()).ok())
                    .map(|l| l.to_string_lossy().into_owned())
                    .filter(|l| l.starts_with("/dev/shm/")),
            );
        }
    }
    held
}

/// The peer side of each test, run in a child process.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let args: Vec<&str> = role.split(':').collect();
    let parent = args.get(1).and_then(|h| EndpointId::from_hex(h));
    let deadline = Instant::now() + Duration::from_secs(60);
    let attach = |rx: &mut Receiver| {
        let me = EndpointId::random().unwrap();
        let claimer = rx.new_claimer();
        connect(&parent.unwrap(), &me, &rx.offer(claimer), HANDSHAKE)
    };
    match args[0] {
        // Sends TRAFFIC messages as sender 1, then receives as many from
        // the parent (sender 0).
        "echo" => {
            let mut rx = Receiver::create(CELLS, CELL).unwrap();
            let (_peer, grant) = attach(&mut rx).unwrap();
            let tx = Sender::from_grant(grant).unwrap();
            for i in 0..TRAFFIC {
                send_until(&tx, 1, i, deadline);
            }
            receive_checked(&mut rx, 0, TRAFFIC, deadline);
        }
        // Writes random bytes over the parent's ring and its own until
        // killed, from the moment a line comes on stdin (the parent has
        // checked our ring's header by then).
        "scribble" => {
            let mut rx = Receiver::create(CELLS, CELL).unwrap();
            let (_peer, theirs) = attach(&mut rx).unwrap();
            println!("attached");
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).unwrap();
            let tx = Sender::from_grant(theirs).unwrap();
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(std::process::id());
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let relaxed = std::sync::atomic::Ordering::Relaxed;
            for i in 0u64.. {
                // Honest messages too, so the parent copies payloads out
                // of cells being scribbled over.
                for _ in 0..4 {
                    let _ = tx.try_send(&meta(1, i), &[&[0xa5; 100]]);
                }
                for r in [tx.region(), rx.region()] {
                    for _ in 0..2 {
                        let n = r.len();
                        // Random words, and small ones that look like
                        // sequence numbers, kinds and lengths.
                        let _ = r.store_u64((next() as usize % n) & !7, next(), relaxed);
                        let _ = r.store_u64((next() as usize % n) & !7, next() >> 54, relaxed);
                        let _ =
                            r.store_u32((next() as usize % n) & !3, next() as u32 & 0x1ff, relaxed);
                    }
                }
            }
        }
        // Claims a cell of the parent's ring, stops where args[2] says,
        // waits to be killed.
        "stall" => {
            let mut rx = Receiver::create(CELLS, CELL).unwrap();
            let (_peer, grant) = attach(&mut rx).unwrap();
            let mut tx = Sender::from_grant(grant).unwrap();
            tx.stall = Some(match args[2] {
                "tail" => Stall::AfterTail,
                _ => Stall::AfterClaim,
            });
            let _ = tx.try_send(&meta(1, 0), &[b"never published"]);
            unreachable!("the stall hook returned");
        }
        // Sleeps on its ring until the parent's one message arrives; a
        // sleep that ends by its timeout fails.
        "sleeper" => {
            let mut rx = Receiver::create(CELLS, CELL).unwrap();
            let _kept = attach(&mut rx).unwrap();
            println!("ready");
            loop {
                match rx.poll(|m, _| m.meta.token) {
                    Polled::Got(t) => {
                        assert_eq!(t, 42);
                        break;
                    }
                    Polled::Empty => {
                        let woken = rx.sleep(Instant::now() + HANDSHAKE).unwrap();
                        assert!(woken, "slept to the timeout: the send did not wake us");
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        // Attaches, then waits to be killed.
        "park" => {
            let mut rx = Receiver::create(CELLS, CELL).unwrap();
            let _kept = attach(&mut rx).unwrap();
            println!("attached");
            loop {
                std::thread::park();
            }
        }
        // Holds a listener under the parent's chosen id until killed.
        "bind" => {
            let _l = Listener::bind(parent.unwrap()).unwrap();
            println!("bound");
            loop {
                std::thread::park();
            }
        }
        // Run as another user: the parent must refuse the handshake.
        "foreign" => {
            let mut rx = Receiver::create(CELLS, CELL).unwrap();
            assert!(
                attach(&mut rx).is_err(),
                "another user's endpoint let us in"
            );
        }
        // Publishes a buffer's address for cross-memory reads.
        "cma-target" => {
            let buf: Vec<u8> = (0..4096u32).map(|i| (i * 31 % 251) as u8).collect();
            println!("cma-target {} {}", buf.as_ptr() as usize, buf.len());
            loop {
                std::thread::park();
            }
        }
        // Run as another user: reading the parent must be refused.
        "cma-foreign" => {
            let pid: libc::pid_t = args[1].parse().unwrap();
            let addr: usize = args[2].parse().unwrap();
            let r = cma::probe(pid, addr, &[0u8; 8]);
            assert!(
                matches!(
                    r,
                    Err(Error::Os {
                        code: FI_EACCES,
                        ..
                    })
                ),
                "reading another user's process: {r:?}"
            );
        }
        other => {
            assert!(
                crate::transport_tests::child(other, &args) || crate::forge_tests::child(other),
                "unknown child role {other}"
            );
        }
    }
    std::process::exit(0);
}

#[test]
fn ring_traffic_both_ways_between_two_processes_leaves_nothing_behind() {
    let shm_before = dev_shm();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rx = Receiver::create(CELLS, CELL).unwrap();
    let l = listener();
    let mut kid = Kid::spawn(&format!("echo:{}", l.id().hex()), None);
    let (peer, grant) = l.accept(&rx.offer(1), HANDSHAKE).unwrap();
    assert_eq!(
        peer.pid(),
        kid.pid(),
        "the kernel's credentials name the child"
    );
    assert_eq!(
        links(grant.region.fd()),
        0,
        "the child's region has no name"
    );
    assert_eq!(links(rx.region().fd()), 0, "ours neither");
    let tx = Sender::from_grant(grant).unwrap();
    receive_checked(&mut rx, 1, TRAFFIC, deadline);
    for i in 0..TRAFFIC {
        send_until(&tx, 0, i, deadline);
    }
    assert_eq!(
        kid.exit_code(Duration::from_secs(60)),
        0,
        "the child checked our messages"
    );
    assert!(peer.wait_gone(Duration::from_secs(5)).unwrap());
    assert_nothing_new_in_dev_shm(&shm_before);
}

#[test]
fn a_peer_scribbling_over_the_shared_rings_costs_messages_not_memory_safety() {
    let mut rx = Receiver::create(CELLS, CELL).unwrap();
    let l = listener();
    let mut kid = Kid::spawn(&format!("scribble:{}", l.id().hex()), None);
    let (_peer, grant) = l.accept(&rx.offer(1), HANDSHAKE).unwrap();
    // Before the child scribbles: attaching checks the header once.
    let tx = Sender::from_grant(grant).unwrap();
    kid.line("attached");
    kid.0.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let (mut got, mut refused, mut sent) = (0u64, 0u64, 0u64);
    let mut buf = vec![0u8; rx.payload_capacity()];
    // Until both kinds of outcome were seen often, for at most 3 s.
    let until = Instant::now() + Duration::from_secs(3);
    let mut i = 0u64;
    while (got < 100 || refused < 100) && Instant::now() < until {
        i += 1;
        match rx.poll(|m, p| (m.len, p.copy_to(&mut buf))) {
            Polled::Got((len, n)) => {
                assert!(len <= buf.len() && n == len);
                got += 1;
            }
            Polled::Refused(_) => refused += 1,
            Polled::Empty => {}
            Polled::Abandoned => panic!("nobody was reported gone"),
        }
        // The child scribbles its own ring too: sending into it must
        // stay bounded and in bounds.
        if tx
            .try_send(&meta(0, i), &[&buf[..(i as usize % buf.len())]])
            .is_ok()
        {
            sent += 1;
        }
    }
    eprintln!("scribbled ring: {got} accepted, {refused} refused, {sent} sent into the scribbled peer ring");
    assert!(refused > 0, "the scribbler never reached our ring");
}

#[test]
fn a_killed_peer_is_noticed_through_its_pidfd_within_a_bound() {
    let rx = Receiver::create(CELLS, CELL).unwrap();
    let l = listener();
    let mut kid = Kid::spawn(&format!("park:{}", l.id().hex()), None);
    let (peer, _grant) = l.accept(&rx.offer(1), HANDSHAKE).unwrap();
    kid.line("attached");
    assert!(
        peer.has_pidfd(),
        "this kernel gives a pidfd (SO_PEERPIDFD or pidfd_open)"
    );
    assert!(!peer.wait_gone(Duration::ZERO).unwrap(), "alive so far");
    let t = Instant::now();
    kid.0.kill().unwrap();
    assert!(
        peer.wait_gone(Duration::from_secs(5)).unwrap(),
        "SIGKILL not noticed in 5 s"
    );
    // The pidfd alone says so too.
    let (pidfd, _) = peer.liveness_fds();
    let mut p = [libc::pollfd {
        fd: pidfd.unwrap().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: p is a valid pollfd array of length 1.
    let ready = unsafe { libc::poll(p.as_mut_ptr(), 1, 5000) };
    assert_eq!(ready, 1, "pidfd readable");
    eprintln!("killed peer noticed after {:?}", t.elapsed());
}

/// A child claims a cell of our ring and is killed before publishing
/// (`at`: before or after naming itself in the cell); once told it is
/// dead, the receiver takes the cell back and our later messages arrive.
fn killed_claimer_does_not_stall_the_ring(at: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut rx = Receiver::create(CELLS, CELL).unwrap();
    let (kid_id, my_id) = (rx.new_claimer(), rx.new_claimer());
    let l = listener();
    let mut kid = Kid::spawn(&format!("stall:{}:{at}", l.id().hex()), None);
    let (peer, _grant) = l.accept(&rx.offer(kid_id), HANDSHAKE).unwrap();
    kid.line("stalled");
    let tx = sender_as(&rx, my_id);
    for i in 0..3 {
        send_until(&tx, 0, i, deadline);
    }
    for _ in 0..100 {
        assert_eq!(rx.poll(|_, _| ()), Polled::Empty, "the claimed cell blocks");
    }
    kid.0.kill().unwrap();
    assert!(
        peer.wait_gone(Duration::from_secs(5)).unwrap(),
        "death seen"
    );
    rx.sender_gone(kid_id);
    assert_eq!(rx.poll(|_, _| ()), Polled::Abandoned, "the cell taken back");
    receive_checked(&mut rx, 0, 3, deadline);
    // And the ring keeps going round.
    for i in 3..3 + 2 * CELLS as u64 {
        send_until(&tx, 0, i, deadline);
        assert!(matches!(rx.poll(|m, _| m.meta.token), Polled::Got(t) if t == i));
    }
}

#[test]
fn a_sender_killed_after_naming_its_claim_does_not_stall_the_ring() {
    killed_claimer_does_not_stall_the_ring("claim");
}

#[test]
fn a_sender_killed_between_claim_and_naming_does_not_stall_the_ring() {
    killed_claimer_does_not_stall_the_ring("tail");
}

#[test]
fn a_receiver_sleeping_in_another_process_is_woken_by_a_send() {
    let mut rx = Receiver::create(CELLS, CELL).unwrap();
    let l = listener();
    let mut kid = Kid::spawn(&format!("sleeper:{}", l.id().hex()), None);
    let claimer = rx.new_claimer();
    let (_peer, grant) = l.accept(&rx.offer(claimer), HANDSHAKE).unwrap();
    let tx = Sender::from_grant(grant).unwrap();
    kid.line("ready");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !tx.receiver_sleeping() {
        assert!(Instant::now() < deadline, "the child never went to sleep");
        std::thread::yield_now();
    }
    let t = Instant::now();
    tx.try_send(&meta(0, 42), &[]).unwrap();
    assert_eq!(kid.exit_code(Duration::from_secs(10)), 0, "the child woke");
    eprintln!("sleeping child woken and exited after {:?}", t.elapsed());
}

#[test]
fn a_killed_processs_name_does_not_block_a_new_endpoint() {
    let id = EndpointId::random().unwrap();
    let mut kid = Kid::spawn(&format!("bind:{}", id.hex()), None);
    kid.line("bound");
    assert_eq!(
        Listener::bind(id).err(),
        Some(Error::AddrInUse),
        "a live endpoint keeps its name"
    );
    kid.0.kill().unwrap();
    kid.0.wait().unwrap();
    Listener::bind(id).expect("the killed process's name is gone with it");
}

#[test]
fn a_silent_peer_times_the_handshake_out() {
    let rx = Receiver::create(CELLS, CELL).unwrap();
    let l = listener();
    // Nobody connects.
    let t = Instant::now();
    assert_eq!(
        l.accept(&rx.offer(1), Duration::from_millis(50)).err(),
        Some(Error::TimedOut)
    );
    // A peer that connects and never says hello.
    let raw = crate::attach::tests::connect_raw(&l.id());
    assert_eq!(
        l.accept(&rx.offer(1), Duration::from_millis(200)).err(),
        Some(Error::TimedOut)
    );
    drop(raw);
    assert!(t.elapsed() < Duration::from_secs(5));
    // Nobody listening: refused at once.
    let me = EndpointId::random().unwrap();
    let nobody = EndpointId::random().unwrap();
    assert!(connect(&nobody, &me, &rx.offer(1), HANDSHAKE).is_err());
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn another_users_peer_is_refused() {
    if !root() {
        eprintln!("skipped: needs root to run a child as another user");
        return;
    }
    let rx = Receiver::create(CELLS, CELL).unwrap();
    let l = listener();
    let mut kid = Kid::spawn(&format!("foreign:{}", l.id().hex()), Some(65534));
    let r: Result<(Peer, Grant), Error> = l.accept(&rx.offer(1), HANDSHAKE);
    assert_eq!(r.err(), Some(Error::Other(FI_EACCES)));
    assert_eq!(
        kid.exit_code(Duration::from_secs(30)),
        0,
        "the child was refused too"
    );
}

#[test]
fn cross_memory_reads_from_a_child_and_refusal_for_another_user() {
    let mut kid = Kid::spawn("cma-target", None);
    let line = kid.line("cma-target ");
    let mut it = line.split(' ').map(|w| w.parse::<usize>().unwrap());
    let (addr, len) = (it.next().unwrap(), it.next().unwrap());
    let expected: Vec<u8> = (0..len as u32).map(|i| (i * 31 % 251) as u8).collect();
    cma::probe(kid.pid(), addr, &expected[..64]).unwrap();
    let mut out = vec![0u8; len];
    let iov = [
        cma::RemoteIov {
            addr: addr + 1000,
            len: len - 1000,
        },
        cma::RemoteIov { addr, len: 1000 },
    ];
    assert_eq!(cma::read(kid.pid(), &mut out, &iov).unwrap(), len);
    assert_eq!(&out[..len - 1000], &expected[1000..]);
    assert_eq!(&out[len - 1000..], &expected[..1000]);
    drop(kid);
    if root() {
        let secret = [0x5au8; 8];
        let role = format!(
            "cma-foreign:{}:{}",
            std::process::id(),
            secret.as_ptr() as usize
        );
        let mut foreign = Kid::spawn(&role, Some(65534));
        assert_eq!(
            foreign.exit_code(Duration::from_secs(30)),
            0,
            "the kernel refused the read"
        );
    }
}

/// A `Quick` without a ring to look at (its owner's path not made, or off)
/// never lets a progress call return early, and says ready to a queue's
/// probe; a busy one likewise.
#[test]
fn quick_without_a_ring_always_runs() {
    use oxifabric::service::progress::Ready;
    let q = crate::path::Quick::default();
    for _ in 0..(2 * crate::path::QUICK_FULL_EVERY) {
        assert!(!q.skip());
        assert!(q.ready());
    }
}

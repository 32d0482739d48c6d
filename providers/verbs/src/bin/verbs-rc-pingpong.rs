//! Moves data over one RC connection made with rdma-cm, through the
//! binding alone (no provider yet), to prove the data path on a real verbs
//! device (the soft-RoCE guest test runs it):
//!
//! 1. both sides register a send, a receive and an RDMA-target buffer and
//!    swap the target's address and rkey in a first message;
//! 2. the client sends `-n` messages of each of several sizes, the server
//!    checks each byte and echoes it, the client checks the echo;
//! 3. each side RDMA WRITEs a pattern into the other's target buffer with
//!    the peer's rkey, then sends a short note; the peer checks the bytes;
//! 4. the client RDMA WRITEs with a corrupted rkey and must get the
//!    device's refusal (`IBV_WC_REM_ACCESS_ERR`) as its completion;
//! 5. the client disconnects; both wait for `DISCONNECTED`.
//!
//! Server and client as in fabtests: `verbs-rc-pingpong [-s ADDR]` serves,
//! `verbs-rc-pingpong SERVER_ADDR` connects. Every wait is bounded by `-T`
//! seconds: a lost message or event is an error, never a hang. Exit status
//! 0 when every check passed.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use oxifabric_verbs::ibv::{
    ibv_qp_cap, ibv_wc, CmId, CompletionQueue, ConnParam, EventChannel, MemoryRegion, QueuePair,
    SendOp, VerbsError, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_WC_RDMA_WRITE,
    IBV_WC_RECV, IBV_WC_REM_ACCESS_ERR, IBV_WC_SEND, IBV_WC_SUCCESS, RDMA_CM_EVENT_ADDR_RESOLVED,
    RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_ROUTE_RESOLVED,
};

/// Message sizes exchanged, in bytes (up to several MTUs).
const SIZES: [usize; 4] = [1, 64, 4096, 65536];
/// The largest message, and the size of each receive slot.
const MAX_MSG: usize = 65536;
/// Receives kept posted.
const RECV_SLOTS: usize = 2;
/// The RDMA WRITE target's size.
const RMA_LEN: usize = 256 * 1024;
/// The note sent after an RDMA WRITE completes.
const WRITTEN: &[u8; 4] = b"WRTN";

const WR_SEND: u64 = 1;
const WR_WRITE: u64 = 2;
const WR_RECV: u64 = 100;

struct Opts {
    server: Option<SocketAddrV4>,
    bind: SocketAddrV4,
    iters: usize,
    timeout: Duration,
    ready: Option<String>,
}

fn usage() -> String {
    "usage: verbs-rc-pingpong [-p PORT] [-n ITERS] [-T SECS] [-s BIND_ADDR] [--ready PATH] [SERVER_ADDR]"
        .into()
}

fn parse() -> Result<Opts, String> {
    let mut port = 7471u16;
    let mut o = Opts {
        server: None,
        bind: SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
        iters: 10,
        timeout: Duration::from_secs(30),
        ready: None,
    };
    let mut server_ip = None;
    let mut bind_ip = Ipv4Addr::UNSPECIFIED;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |what: &str| args.next().ok_or(format!("{a} needs {what}\n{}", usage()));
        let bad = |e: &dyn std::fmt::Display| format!("{a}: {e}");
        match a.as_str() {
            "-p" => port = val("a port")?.parse().map_err(|e| bad(&e))?,
            "-n" => o.iters = val("a count")?.parse().map_err(|e| bad(&e))?,
            "-T" => o.timeout = Duration::from_secs(val("seconds")?.parse().map_err(|e| bad(&e))?),
            "-s" => bind_ip = val("an address")?.parse().map_err(|e| bad(&e))?,
            "--ready" => o.ready = Some(val("a path")?),
            s if !s.starts_with('-') && server_ip.is_none() => {
                server_ip = Some(s.parse::<Ipv4Addr>().map_err(|e| bad(&e))?)
            }
            _ => return Err(usage()),
        }
    }
    o.bind = SocketAddrV4::new(bind_ip, port);
    o.server = server_ip.map(|ip| SocketAddrV4::new(ip, port));
    Ok(o)
}

/// The bytes of message `seq` of `len` bytes: differ by position, size and
/// sequence, so a misplaced or stale byte shows.
fn pattern(seq: u64, len: usize) -> Vec<u8> {
    let mut x = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ len as u64 ^ 0x5851_f42d;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Where the first differing byte is, for messages.
fn diff(got: &[u8], want: &[u8]) -> String {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => format!("byte {i}: got {:#04x}, want {:#04x}", got[i], want[i]),
        None => format!("length {} instead of {}", got.len(), want.len()),
    }
}

/// One side of the connection once established.
struct Link<'a> {
    qp: &'a QueuePair<'a>,
    cq: &'a CompletionQueue<'a>,
    send: &'a MemoryRegion<'a>,
    recv: &'a MemoryRegion<'a>,
    timeout: Duration,
    /// Completions polled while waiting for another one.
    early: Vec<ibv_wc>,
}

impl Link<'_> {
    /// The next successful completion whose `wr_id` satisfies `want`,
    /// within the timeout; an error completion is an error.
    fn wait(&mut self, what: &str, want: impl Fn(u64) -> bool) -> Result<ibv_wc, String> {
        let wc = self.wait_any(what, want)?;
        if wc.status != IBV_WC_SUCCESS {
            return Err(format!(
                "{what}: completion status {} (vendor_err {:#x})",
                wc.status, wc.vendor_err
            ));
        }
        Ok(wc)
    }

    /// The next completion whose `wr_id` satisfies `want`, whatever its
    /// status, within the timeout.
    fn wait_any(&mut self, what: &str, want: impl Fn(u64) -> bool) -> Result<ibv_wc, String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(i) = self.early.iter().position(|w| want(w.wr_id)) {
                return Ok(self.early.remove(i));
            }
            let mut wc = [ibv_wc::default(); 8];
            let n = self.cq.poll(&mut wc).map_err(|e| e.to_string())?;
            if n == 0 {
                if Instant::now() >= deadline {
                    return Err(format!("{what}: no completion within {:?}", self.timeout));
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            self.early.extend_from_slice(&wc[..n]);
        }
    }

    fn post_recv(&self, slot: usize) -> Result<(), String> {
        self.qp
            .post_recv(WR_RECV + slot as u64, self.recv, slot * MAX_MSG, MAX_MSG)
            .map_err(|e| e.to_string())
    }

    /// Sends `data` and waits for its completion.
    fn send(&mut self, data: &[u8]) -> Result<(), String> {
        self.send.write(0, data);
        self.qp
            .post_send(WR_SEND, SendOp::Send, self.send, 0, data.len())
            .map_err(|e| e.to_string())?;
        let wc = self.wait("send", |id| id == WR_SEND)?;
        check_opcode("send", &wc, IBV_WC_SEND)
    }

    /// The next message, its receive reposted.
    fn recv(&mut self) -> Result<Vec<u8>, String> {
        let wc = self.wait("receive", |id| id >= WR_RECV)?;
        check_opcode("receive", &wc, IBV_WC_RECV)?;
        let slot = usize::try_from(wc.wr_id - WR_RECV).map_err(|e| e.to_string())?;
        let msg = self.recv.read(slot * MAX_MSG, wc.byte_len as usize);
        self.post_recv(slot)?;
        Ok(msg)
    }

    /// RDMA WRITE of `len` bytes of `src` to the peer's buffer.
    fn write(&mut self, src: &MemoryRegion<'_>, len: usize, peer: Target) -> Result<(), String> {
        let op = SendOp::Write {
            remote_addr: peer.addr,
            rkey: peer.rkey,
        };
        self.qp
            .post_send(WR_WRITE, op, src, 0, len)
            .map_err(|e| e.to_string())?;
        let wc = self.wait("rdma write", |id| id == WR_WRITE)?;
        check_opcode("rdma write", &wc, IBV_WC_RDMA_WRITE)
    }
}

fn check_opcode(what: &str, wc: &ibv_wc, want: u32) -> Result<(), String> {
    if wc.opcode == want {
        Ok(())
    } else {
        Err(format!(
            "{what}: completion opcode {} instead of {want}",
            wc.opcode
        ))
    }
}

/// A peer's RDMA target, as sent in the first message (little-endian
/// address, rkey, length).
#[derive(Clone, Copy)]
struct Target {
    addr: u64,
    rkey: u32,
    len: u32,
}

impl Target {
    fn encode(&self) -> Vec<u8> {
        [
            &self.addr.to_le_bytes()[..],
            &self.rkey.to_le_bytes(),
            &self.len.to_le_bytes(),
        ]
        .concat()
    }

    fn decode(b: &[u8]) -> Result<Target, String> {
        let field = |r: std::ops::Range<usize>| b.get(r).ok_or("short first message");
        if b.len() != 16 {
            return Err(format!("first message of {} bytes, not 16", b.len()));
        }
        Ok(Target {
            addr: u64::from_le_bytes(field(0..8)?.try_into().map_err(|_| "addr")?),
            rkey: u32::from_le_bytes(field(8..12)?.try_into().map_err(|_| "rkey")?),
            len: u32::from_le_bytes(field(12..16)?.try_into().map_err(|_| "len")?),
        })
    }
}

fn verbs(e: VerbsError) -> String {
    e.to_string()
}

/// The server's listening id, or the client's resolved one.
fn connect_side<'ch>(
    ch: &'ch EventChannel,
    o: &Opts,
    listener: &mut Option<CmId<'ch>>,
) -> Result<CmId<'ch>, String> {
    let t = o.timeout;
    if let Some(dst) = o.server {
        let id = ch.create_id().map_err(verbs)?;
        id.resolve_addr(dst, t).map_err(verbs)?;
        ch.next_event(t)
            .map_err(verbs)?
            .expect(RDMA_CM_EVENT_ADDR_RESOLVED)
            .map_err(verbs)?;
        id.resolve_route(t).map_err(verbs)?;
        ch.next_event(t)
            .map_err(verbs)?
            .expect(RDMA_CM_EVENT_ROUTE_RESOLVED)
            .map_err(verbs)?;
        return Ok(id);
    }
    let l = listener.insert(ch.create_id().map_err(verbs)?);
    l.bind(o.bind).map_err(verbs)?;
    l.listen(1).map_err(verbs)?;
    println!("server: listening on {}", o.bind);
    if let Some(path) = &o.ready {
        std::fs::write(path, "ready\n").map_err(|e| format!("{path}: {e}"))?;
    }
    ch.next_event(t)
        .map_err(verbs)?
        .into_request()
        .map_err(verbs)
}

fn run(o: &Opts) -> Result<(), String> {
    let role = if o.server.is_some() {
        "client"
    } else {
        "server"
    };
    let t = o.timeout;
    let ch = EventChannel::new().map_err(verbs)?;
    let mut listener = None;
    let id = connect_side(&ch, o, &mut listener)?;
    let dev = id.device().ok_or("the id has no device after resolution")?;
    let pd = dev.alloc_pd().map_err(verbs)?;
    let cq = dev.create_cq(64).map_err(verbs)?;
    let send_mr = pd
        .register(MAX_MSG, IBV_ACCESS_LOCAL_WRITE)
        .map_err(verbs)?;
    let recv_mr = pd
        .register(RECV_SLOTS * MAX_MSG, IBV_ACCESS_LOCAL_WRITE)
        .map_err(verbs)?;
    let rma_mr = pd
        .register(RMA_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
        .map_err(verbs)?;
    let cap = ibv_qp_cap {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let qp = id.create_qp(&pd, &cq, cap).map_err(verbs)?;
    let mut link = Link {
        qp: &qp,
        cq: &cq,
        send: &send_mr,
        recv: &recv_mr,
        timeout: t,
        early: Vec::new(),
    };
    for slot in 0..RECV_SLOTS {
        link.post_recv(slot)?;
    }
    let param = ConnParam {
        rd_atomic: 1,
        retry_count: 7,
        rnr_retry_count: 7,
    };
    if o.server.is_some() {
        id.connect(&param).map_err(verbs)?;
    } else {
        id.accept(&param).map_err(verbs)?;
    }
    ch.next_event(t)
        .map_err(verbs)?
        .expect(RDMA_CM_EVENT_ESTABLISHED)
        .map_err(verbs)?;
    println!("{role}: connected, qp {}", qp.qp_num());

    // 1. The RDMA targets.
    let mine = Target {
        addr: rma_mr.addr(),
        rkey: rma_mr.rkey(),
        len: u32::try_from(RMA_LEN).map_err(|e| e.to_string())?,
    };
    link.send(&mine.encode())?;
    let peer = Target::decode(&link.recv()?)?;
    if (peer.len as usize) < RMA_LEN {
        return Err(format!(
            "peer's target is {} bytes, want {RMA_LEN}",
            peer.len
        ));
    }
    println!("{role}: peer target rkey {:#x} len {}", peer.rkey, peer.len);

    // 2. Send/receive with data checks, echoed by the server.
    let mut seq = 0u64;
    for &size in &SIZES {
        for _ in 0..o.iters {
            let want = pattern(seq, size);
            if o.server.is_some() {
                link.send(&want)?;
                let echo = link.recv()?;
                if echo != want {
                    return Err(format!("echo {seq} ({size} bytes): {}", diff(&echo, &want)));
                }
            } else {
                let got = link.recv()?;
                if got != want {
                    return Err(format!(
                        "message {seq} ({size} bytes): {}",
                        diff(&got, &want)
                    ));
                }
                link.send(&got)?;
            }
            seq += 1;
        }
    }
    println!("{role}: send/recv ok: {seq} messages of {SIZES:?} bytes, every byte checked");

    // 3. RDMA WRITE each way (client first), each announced by a note sent
    //    after the write completed; RC delivers the note after the data.
    let seed = |client: bool| if client { 0xc11e_u64 } else { 0x5e77_u64 };
    let write_turn = |link: &mut Link<'_>| -> Result<(), String> {
        rma_mr.write(0, &pattern(seed(o.server.is_some()), RMA_LEN));
        link.write(&rma_mr, RMA_LEN, peer)?;
        link.send(WRITTEN)
    };
    let check_turn = |link: &mut Link<'_>| -> Result<(), String> {
        let note = link.recv()?;
        if note != WRITTEN {
            return Err(format!("expected the write note, got {} bytes", note.len()));
        }
        let want = pattern(seed(o.server.is_none()), RMA_LEN);
        let got = rma_mr.read(0, RMA_LEN);
        if got != want {
            return Err(format!("rdma write target: {}", diff(&got, &want)));
        }
        Ok(())
    };
    if o.server.is_some() {
        write_turn(&mut link)?;
        check_turn(&mut link)?;
    } else {
        check_turn(&mut link)?;
        write_turn(&mut link)?;
    }
    println!("{role}: rdma write ok: {RMA_LEN} bytes each way with the peer's rkey, checked");

    // 4. A write under a key the peer never issued: the peer's device
    //    refuses it and the error comes back as the completion (the QPs
    //    are in the error state afterwards, so this goes last).
    if o.server.is_some() {
        let bad = SendOp::Write {
            remote_addr: peer.addr,
            rkey: peer.rkey ^ 0x8000_0000,
        };
        qp.post_send(WR_WRITE, bad, &rma_mr, 0, 64).map_err(verbs)?;
        let wc = link.wait_any("rdma write with a bad rkey", |id| id == WR_WRITE)?;
        if wc.status != IBV_WC_REM_ACCESS_ERR {
            return Err(format!(
                "rdma write with a bad rkey: completion status {}, want {IBV_WC_REM_ACCESS_ERR}",
                wc.status
            ));
        }
        println!("{role}: bad rkey refused: remote access error completion");
    }

    // 5. Disconnect: the client starts it, both see DISCONNECTED.
    if o.server.is_some() {
        id.disconnect().map_err(verbs)?;
    }
    ch.next_event(t)
        .map_err(verbs)?
        .expect(RDMA_CM_EVENT_DISCONNECTED)
        .map_err(verbs)?;
    println!("{role}: disconnected");
    Ok(())
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let role = if o.server.is_some() {
        "client"
    } else {
        "server"
    };
    match run(&o) {
        Ok(()) => {
            println!("{role}: PASS");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{role}: FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

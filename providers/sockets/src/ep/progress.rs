//! Progress: reading connections (header, then payload straight into a
//! posted receive or a buffer), dispatching frames to the protocol modules,
//! writing queued sends, accepting connections; and the `Progress` hook the
//! engine's CQs, counters and auto-progress thread call.

use super::now_ms;
use super::*;

/// The most one `recv` reads straight into a destination (a posted
/// receive, a registered range). A larger read holds the socket's lock for
/// the whole copy, and the segments the sender's side delivers meanwhile
/// wait in the socket's backlog, unacknowledged, until it ends: the
/// sender's window closes and the stream stalls in bursts. 1 MiB RMA
/// writes on loopback: 4.8-5.4 GB/s reading whole payloads, 6.5-7.9 at
/// 32 KiB (6.0-6.1 at 64 KiB, no better at 16 KiB). The price is paid by
/// a lone large message, which its receiver now reads in more calls: a
/// 1 MiB ping-pong takes 205 us per transfer instead of 175.
const RECV_CHUNK: usize = 32 * 1024;
/// A pass with a lone connection still waits on epoll once in this many
/// (the listener, output readiness, a connection that arrived meanwhile).
const SOLO_EPOLL_EVERY: u32 = 16;
/// A pass of an endpoint without connections (its peers all reached by
/// shared memory) waits on epoll once in this many: only a new
/// connection can be there, and it waits a little longer. Idle passes
/// of such an endpoint are themselves one progress call in
/// `QUICK_FULL_EVERY` (`local.rs`): epoll once in 512 calls; and never
/// twice in one millisecond (`Solo::none_epoll_ms`).
const NONE_EPOLL_EVERY: u32 = 16;
/// Endpoints with more connection slots than this are not searched for a
/// lone connection (the search would cost O(connections) per epoll pass).
const SOLO_SLOTS: usize = 4;

/// The endpoint's one connection, read without asking epoll first.
///
/// A busy-polling application with one peer (a connected MSG endpoint, an
/// RDM endpoint in a ping-pong) would otherwise pay an `epoll_wait` before
/// each `recv`: reading the socket directly saves that system call on every
/// message's path, 0.25-0.3 us per one-way transfer on loopback (the TCP
/// ping-pong of `make bench` spins on `recv` the same way). One pass in
/// [`SOLO_EPOLL_EVERY`] still asks epoll, and every such pass looks for the
/// lone connection again; a new connection forgets it at once.
///
/// Only between frames, though: a `recv` that finds the socket empty takes
/// its lock all the same, and spinning on it in the middle of a large
/// payload keeps the sender's segments waiting in the socket's backlog
/// (1 MiB RMA writes: 6.3-7.7 GB/s spinning, 7.5-8.6 waiting on epoll).
/// Mid-payload, epoll says when more has arrived without that lock.
///
/// While the application drives the endpoint through a queue that polls
/// it on every read (`Progress::progress_direct`), the lone connection
/// also leaves the epoll set: a socket in an epoll set makes every
/// arriving segment run epoll's wake-up callback under the socket's lock
/// on the sender's core, which cost 0.1 us per one-way 8 B transfer on
/// loopback (`make bench` ping-pong, A/B). It is watched again as soon as
/// anything may wait on the set (its descriptor is asked for, or a nested
/// set holds it), it stops fitting (mid-payload, paused, output), or a
/// second connection arrives; and it is not dropped again until
/// [`UNWATCH_AFTER_WAIT_MS`] after the last time the descriptor was asked
/// for, which every blocked wait does at least every 100 ms.
#[derive(Default)]
pub(super) struct Solo {
    slot: Option<usize>,
    /// The last epoll pass found no connection at all (an RDM endpoint
    /// whose peers are all reached by shared memory, `local.rs`, or that
    /// has none yet): only the listener could have input, and it waits
    /// for the next epoll pass as a lone connection's neighbours do.
    none: bool,
    /// When such an endpoint last waited on epoll ([`now_ms`]): it waits
    /// at most once a millisecond.
    none_epoll_ms: u64,
    pass: u32,
    /// The lone connection's slot while it is out of the epoll set.
    unwatched: Option<usize>,
    /// A nested set holds the endpoint's epoll set: it reports everything.
    pinned: bool,
    /// When the endpoint's descriptor was last asked for ([`now_ms`]);
    /// None before the first time.
    last_wait_ms: Option<u64>,
}

/// How long after its descriptor was last asked for (a blocking wait, the
/// auto-progress thread) the lone connection stays in the epoll set.
const UNWATCH_AFTER_WAIT_MS: u64 = 250;

impl Solo {
    /// The last epoll pass found no connection at all.
    pub(super) fn is_none(&self) -> bool {
        self.none
    }

    /// A connection was added: there may be two now.
    pub(super) fn forget(&mut self) {
        self.slot = None;
        self.none = false;
    }

    /// The slot of the connection that is out of the epoll set, if any.
    pub(super) fn unwatched(&self) -> Option<usize> {
        self.unwatched
    }

    /// Connection `slot` is gone (its descriptor with it).
    pub(super) fn closed(&mut self, slot: usize) {
        if self.unwatched == Some(slot) {
            self.unwatched = None;
        }
    }

    /// Whether `slot` can be read without epoll: open, read (not paused),
    /// between frames, and not waiting for output readiness, which only
    /// epoll reports.
    fn fits(conns: &[Option<Conn>], slot: usize) -> bool {
        conns.get(slot).and_then(Option::as_ref).is_some_and(|c| {
            c.state == ConnState::Open
                && c.watching_in
                && !c.watching_out
                && matches!(c.rx, RxState::Header { .. })
        })
    }

    /// The one connection of an endpoint that has exactly one, if it fits.
    fn find(conns: &[Option<Conn>]) -> Option<usize> {
        if conns.len() > SOLO_SLOTS {
            return None;
        }
        let mut live = conns.iter().enumerate().filter(|(_, c)| c.is_some());
        match (live.next(), live.next()) {
            (Some((slot, _)), None) if Self::fits(conns, slot) => Some(slot),
            _ => None,
        }
    }
}

impl SockEp {
    /// Decides where a message's payload goes once its header is read.
    pub(super) fn on_header(&self, st: &mut EpState, slot: usize, hdr: Header) -> Option<RxState> {
        if !self.auth_admits(st, slot, &hdr) {
            return None;
        }
        // Recency matters only under a connection limit (`lru.rs`); the
        // clock read stays off the fast path otherwise.
        if st.max_conns != usize::MAX {
            if let Some(c) = st.conns[slot].as_mut() {
                c.last_used = now_ms();
            }
        }
        match hdr.op {
            Op::Msg => {
                let src = self.src_of(st, slot);
                let len = hdr.len as usize;
                prov_log!(
                    PROV,
                    FI_LOG_DEBUG,
                    FI_LOG_EP_DATA,
                    "message from {src:#x}: {len} bytes, tag {:?}",
                    hdr.tag()
                );
                if self.deliver_staged(st, slot, src, &hdr) {
                    self.ack(st, slot, &hdr);
                    return None;
                }
                match self.place(st, src, hdr.tag(), len, false) {
                    Placement::Posted { recv, region, keep } => Some(RxState::Payload {
                        hdr,
                        dest: Dest::Posted { recv, region, keep },
                        got: 0,
                    }),
                    Placement::Unexpected => {
                        if st.rxq.unexpected_room(len) {
                            Some(RxState::Payload {
                                hdr,
                                dest: Dest::Buffer(vec![0u8; len]),
                                got: 0,
                            })
                        } else {
                            Some(RxState::Paused { hdr })
                        }
                    }
                }
            }
            Op::Hello
            | Op::Verify
            | Op::ConnAccept
            | Op::ConnReject
            | Op::ConnReq
            | Op::AuthChallenge
            | Op::AuthProof => {
                if hdr.len > MAX_CONTROL {
                    self.close_conn(st, slot, Failure::code(FI_EIO), "oversized control frame");
                    return None;
                }
                Some(RxState::Payload {
                    hdr,
                    dest: Dest::Buffer(vec![0u8; hdr.len as usize]),
                    got: 0,
                })
            }
            Op::HelloAck => {
                self.on_hello_ack(st, slot);
                None
            }
            Op::HelloNack => {
                self.on_hello_nack(st, slot);
                None
            }
            Op::Bye => {
                self.on_bye(st, slot);
                None
            }
            Op::ByeAck => {
                self.on_bye_ack(st, slot);
                None
            }
            Op::ByeNack => {
                self.on_bye_nack(st, slot);
                None
            }
            Op::VerifyAck | Op::VerifyNack => {
                self.on_verified(st, slot, hdr.msg_id, hdr.op == Op::VerifyAck);
                None
            }
            Op::Ack => {
                // Only the connection the message went out on may
                // acknowledge it.
                if st.acks.get(&hdr.msg_id).is_some_and(|(s, _)| *s == slot) {
                    if let Some((_, d)) = st.acks.remove(&hdr.msg_id) {
                        st.core.sinks.tx_done(&d.tx);
                    }
                }
                None
            }
            Op::Shutdown => {
                self.close_conn(st, slot, Failure::code(FI_ECONNRESET), PEER_SHUTDOWN);
                None
            }
            Op::Rts => self.on_rts(st, slot, hdr),
            Op::Cts => {
                self.on_cts(st, slot, hdr);
                None
            }
            Op::Data => self.on_data(st, slot, hdr),
            Op::Write if self.write_staged(st, slot, &hdr) => None,
            Op::Write | Op::ReadReq => Some(self.on_rma_header(hdr)),
            Op::Atomic => {
                if hdr.len > (crate::wire::RMA_PREFIX + 2 * attrs::ATOMIC_LIMIT) as u64 {
                    self.close_conn(st, slot, Failure::code(FI_EIO), "oversized atomic frame");
                    return None;
                }
                Some(RxState::Payload {
                    hdr,
                    dest: Dest::Buffer(vec![0u8; hdr.len as usize]),
                    got: 0,
                })
            }
            Op::RmaResp => self.on_rma_resp(st, slot, hdr),
        }
    }

    /// A message whose whole payload is staged behind its header (every
    /// small message) and for which a receive of this endpoint is posted:
    /// delivered from the stage in place (`RxQueues::deliver_posted`).
    /// False, with nothing consumed, in every other case (a shared receive
    /// context, a multi-receive buffer, no receive yet, payload still to
    /// come), which the general placement handles.
    fn deliver_staged(&self, st: &mut EpState, slot: usize, src: fi_addr_t, hdr: &Header) -> bool {
        if st.srx.is_some() {
            return false;
        }
        let len = hdr.len as usize;
        let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) else {
            return false;
        };
        let Some(bytes) = c.staged().get(..len) else {
            return false;
        };
        let msg = MsgInfo {
            src,
            tag: hdr.tag(),
            data: hdr.cq_data(),
        };
        if !st.rxq.deliver_posted(msg, bytes, &st.core.sinks) {
            return false;
        }
        c.consume_staged(len);
        true
    }

    /// A whole frame was read.
    pub(super) fn on_frame(&self, st: &mut EpState, slot: usize, hdr: Header, dest: Dest) {
        // Matching the destination itself, not a tuple holding it: the
        // tuple was one more copy of the whole destination per frame.
        let op = hdr.op;
        match dest {
            Dest::Posted {
                ref recv,
                ref region,
                keep,
            } if matches!(op, Op::Msg | Op::Data) => {
                let src = self.src_of(st, slot);
                let cap: usize = region.iter().map(IoBuf::len).sum();
                let n = (hdr.len as usize).min(cap);
                let msg = MsgInfo {
                    src,
                    tag: hdr.tag(),
                    data: hdr.cq_data(),
                };
                complete_into(
                    recv,
                    region,
                    n,
                    hdr.len as usize - n,
                    msg,
                    &st.core.sinks,
                    !keep,
                );
                self.ack(st, slot, &hdr);
            }
            Dest::Buffer(payload) if matches!(op, Op::Msg) => {
                let src = self.src_of(st, slot);
                // A matching receive may have been posted while the payload
                // was arriving: deliver to it rather than queue.
                let msg = MsgInfo {
                    src,
                    tag: hdr.tag(),
                    data: hdr.cq_data(),
                };
                let from = Self::number_unnamed(st, slot, src);
                self.deliver(st, msg, from, payload);
                self.ack(st, slot, &hdr);
            }
            Dest::Prefix { b, rest } if matches!(op, Op::Write) => {
                self.on_write_prefix(st, slot, hdr, &b, rest)
            }
            Dest::Rma { mr, refused, .. } if matches!(op, Op::Write) => {
                self.on_write_done(st, slot, hdr, mr, refused)
            }
            Dest::Prefix { b, .. } if matches!(op, Op::ReadReq) => {
                self.on_read_req(st, slot, hdr, &b)
            }
            Dest::Buffer(v) if matches!(op, Op::Atomic) => self.on_atomic(st, slot, hdr, &v),
            Dest::Rma { .. } if matches!(op, Op::RmaResp) => self.on_read_done(st, hdr),
            Dest::Buffer(b) if matches!(op, Op::Hello) => self.on_hello(st, slot, hdr.msg_id, &b),
            Dest::Buffer(b) if matches!(op, Op::Verify) => self.on_verify(st, slot, hdr.msg_id, &b),
            Dest::Buffer(b) if matches!(op, Op::AuthChallenge | Op::AuthProof) => {
                self.on_auth(st, slot, op, &b)
            }
            Dest::Buffer(data) if matches!(op, Op::ConnAccept) => {
                self.on_conn_accept(st, slot, data)
            }
            Dest::Buffer(data) if matches!(op, Op::ConnReject) => {
                self.on_conn_reject(st, slot, data)
            }
            _ => self.close_conn(st, slot, Failure::code(FI_EIO), "unexpected frame"),
        }
    }

    pub(super) fn ack(&self, st: &mut EpState, slot: usize, hdr: &Header) {
        if hdr.flags & crate::wire::FLAG_ACK_REQ != 0 {
            let item = Self::control_item(Op::Ack, Vec::new(), hdr.msg_id);
            let _ = self.submit(st, slot, item);
        }
    }

    /// Reads everything a connection has.
    ///
    /// Bytes come through the connection's stage buffer, so one `recv`
    /// brings a small frame's header and payload (and often the frames
    /// behind it); a payload larger than what is staged is read straight
    /// into its destination. A read that comes back short means the socket
    /// is empty for now, and the next read would only say so: we stop
    /// there (epoll is level-triggered and reports what arrives later).
    pub(super) fn read_conn(&self, st: &mut EpState, slot: usize) {
        self.read_frames(st, slot);
        if let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) {
            c.release_stage(&mut st.stages);
        }
        self.watch(st, slot);
    }

    /// [`Self::read_conn`]'s loop: frames until the socket is empty, the
    /// connection pauses or closes.
    fn read_frames(&self, st: &mut EpState, slot: usize) {
        let mut drained = false;
        loop {
            let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) else {
                return;
            };
            let fd = c.stream.as_raw_fd();
            // Between frames (every empty poll of a busy-polling
            // application) the state stays in place: moving the whole
            // state out and back cost two copies of its ~400 bytes.
            let (mut buf, mut got) = match &c.rx {
                RxState::Header { buf, got } => (*buf, *got),
                _ => {
                    if self.read_body(st, slot, fd, &mut drained) {
                        return;
                    }
                    continue;
                }
            };
            // Until bytes are taken from the stage, `buf` and `got` equal
            // what the state holds: returning leaves it as it is.
            if c.staged().is_empty() {
                if drained || !Self::reading(c) {
                    return;
                }
                match c.fill_stage(&mut st.stages) {
                    Ok(0) => {
                        self.close_conn(
                            st,
                            slot,
                            Failure::code(FI_ECONNRESET),
                            "peer closed the connection",
                        );
                        return;
                    }
                    Ok(n) => drained = n < crate::conn::STAGE_LEN,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                    Err(e) => {
                        self.close_conn(st, slot, reset(&e), "read failed");
                        return;
                    }
                }
            }
            got += c.take_staged(&mut buf[got..]);
            if got < HEADER_LEN {
                Self::keep_header(c, buf, got);
                continue;
            }
            // A whole header: the state starts over for the next frame
            // (unless the frame replaces it), also when part of this
            // header was kept from an earlier read.
            if let RxState::Header { got, .. } = &mut c.rx {
                *got = 0;
            }
            let hdr = match Header::decode(&buf, attrs::MAX_MSG as u64) {
                Ok(h) => h,
                Err(e) => {
                    prov_log!(PROV, FI_LOG_WARN, FI_LOG_EP_DATA, "malformed frame: {e}");
                    self.close_conn(st, slot, Failure::code(FI_EIO), "malformed frame");
                    return;
                }
            };
            match self.on_header(st, slot, hdr) {
                // The whole payload came with its header (every small
                // message): it goes from the stage to its destination here,
                // without a trip through the connection's state.
                Some(RxState::Payload {
                    hdr,
                    mut dest,
                    got: 0,
                }) if st.conns[slot]
                    .as_ref()
                    .is_some_and(|c| c.staged().len() as u64 >= hdr.len) =>
                {
                    if let Some(c) = st.conns[slot].as_mut() {
                        Self::land_staged(c, &mut dest, 0, hdr.len as usize);
                    }
                    self.on_frame(st, slot, hdr, dest);
                }
                Some(s) => {
                    if let Some(c) = st.conns[slot].as_mut() {
                        st.maybe_paused |= matches!(s, RxState::Paused { .. });
                        c.rx = s;
                    }
                }
                None => {}
            }
        }
    }

    /// Moves up to `want` staged payload bytes to `dest`, at offset `got`
    /// of the payload; returns how many.
    fn land_staged(c: &mut Conn, dest: &mut Dest, got: usize, want: usize) -> usize {
        let k = c.staged().len().min(want);
        let src = &c.staged()[..k];
        if let Some(region) = dest.region() {
            // Bytes past the buffer's end are dropped (truncation).
            region.scatter(got, src);
        } else if let Some(v) = dest.buffer() {
            v[got..got + k].copy_from_slice(src)
        }
        c.consume_staged(k);
        k
    }

    /// Keeps the header bytes read so far in the connection's state
    /// (which is `RxState::Header`), without rebuilding the state.
    fn keep_header(c: &mut Conn, b: [u8; HEADER_LEN], n: usize) {
        if let RxState::Header { buf, got } = &mut c.rx {
            *buf = b;
            *got = n;
        }
    }

    /// [`Self::read_frames`] past a header: a paused header or a payload.
    /// True when reading stops (the socket is empty, the connection
    /// paused or closed).
    fn read_body(&self, st: &mut EpState, slot: usize, fd: RawFd, drained: &mut bool) -> bool {
        let Some(c) = st.conns.get_mut(slot).and_then(Option::as_mut) else {
            return true;
        };
        let rx = std::mem::replace(
            &mut c.rx,
            RxState::Header {
                buf: [0; HEADER_LEN],
                got: 0,
            },
        );
        match rx {
            // Not reached (read_frames reads headers in place); put back.
            RxState::Header { buf, got } => {
                c.rx = RxState::Header { buf, got };
            }
            RxState::Paused { hdr } => {
                // Retry placement: a receive may have been posted.
                let next = self.on_header(st, slot, hdr);
                match next {
                    Some(RxState::Paused { hdr }) => {
                        if let Some(c) = st.conns[slot].as_mut() {
                            c.rx = RxState::Paused { hdr };
                            st.maybe_paused = true;
                        }
                        return true;
                    }
                    Some(s) => {
                        if let Some(c) = st.conns[slot].as_mut() {
                            c.rx = s;
                        }
                    }
                    None => {}
                }
            }
            RxState::Payload {
                hdr,
                mut dest,
                mut got,
            } => {
                let want = (hdr.len - got) as usize;
                if want == 0 {
                    self.on_frame(st, slot, hdr, dest);
                    return false;
                }
                let n = if !c.staged().is_empty() {
                    Self::land_staged(c, &mut dest, got as usize, want)
                } else if *drained {
                    c.rx = RxState::Payload { hdr, dest, got };
                    return true;
                } else {
                    let (r, asked) = if let Some(region) = dest.region() {
                        match region.segment_at(got as usize) {
                            Some((b, off)) => {
                                let k = (b.len() - off).min(want).min(RECV_CHUNK);
                                // SAFETY: the receive (or the RMA
                                // range, checked against its
                                // registration) belongs to this
                                // connection's read state until it
                                // completes; nothing else of ours
                                // references its bytes while the read
                                // runs.
                                let target = unsafe { &mut b.as_mut_slice()[off..off + k] };
                                (sock::read(fd, target), k)
                            }
                            // Past the end of the buffer: read and drop.
                            None => c.read_discard(want, &mut st.stages),
                        }
                    } else {
                        let start = got as usize;
                        let k = want.min(RECV_CHUNK);
                        let v = dest.buffer().unwrap_or_default();
                        (sock::read(fd, &mut v[start..start + k]), k)
                    };
                    match r {
                        Ok(0) => {
                            c.rx = RxState::Payload { hdr, dest, got };
                            self.close_conn(
                                st,
                                slot,
                                Failure::code(FI_ECONNRESET),
                                "peer closed the connection mid-message",
                            );
                            return true;
                        }
                        Ok(n) => {
                            *drained = n < asked;
                            n
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            c.rx = RxState::Payload { hdr, dest, got };
                            return true;
                        }
                        Err(e) => {
                            c.rx = RxState::Payload { hdr, dest, got };
                            self.close_conn(st, slot, reset(&e), "read failed");
                            return true;
                        }
                    }
                };
                got += n as u64;
                if got == hdr.len {
                    self.on_frame(st, slot, hdr, dest);
                } else if let Some(c) = st.conns[slot].as_mut() {
                    c.rx = RxState::Payload { hdr, dest, got };
                }
            }
        }
        false
    }

    pub(super) fn on_writable(&self, st: &mut EpState, slot: usize) {
        let Some(c) = st.conns[slot].as_mut() else {
            return;
        };
        if c.state == ConnState::Connecting {
            if let Some(e) = sock::take_error(&c.stream) {
                let f = Failure {
                    cause: "connect failed",
                    ..Failure::os(FI_ECONNREFUSED, &e)
                };
                self.close_conn(st, slot, f, "connect failed");
                return;
            }
            c.state = ConnState::Open;
            self.start_auth(st, slot);
        }
        self.flush(st, slot);
    }

    pub(super) fn accept_all(&self, st: &mut EpState) {
        loop {
            if self.at_conn_limit(st) {
                return;
            }
            let Some(l) = &st.listener else { return };
            match l.accept() {
                Ok((s, _)) => {
                    let conn = Conn::new(s, ConnState::Open, None);
                    let slot = self.add_conn(st, conn, false);
                    self.start_auth(st, slot);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    let fd = l.as_raw_fd();
                    let paused = st
                        .accept_backoff
                        .failed(&self.epoll, fd, TOKEN_LISTENER, &e);
                    prov_log!(
                        PROV,
                        FI_LOG_WARN,
                        FI_LOG_EP_CTRL,
                        "accept failed: {e}{}",
                        if paused { "; accepting pauses" } else { "" }
                    );
                    return;
                }
            }
        }
    }

    pub(super) fn progress_locked(&self, st: &mut EpState) {
        self.progress_pass(st, false);
    }

    /// A full pass; `direct` when a queue that drives the endpoint on
    /// every read runs it (the lone connection may then leave the epoll
    /// set, see [`Solo`]).
    fn progress_pass(&self, st: &mut EpState, direct: bool) {
        self.housekeeping(st);
        self.local_progress(st);
        self.progress_io(st, direct);
        self.retry_due(st);
        self.quick.busy(!Self::quiet(st));
    }

    /// What progress does without waiting on a descriptor: held sends,
    /// the connection limit's queues, a paused listener's backoff.
    fn housekeeping(&self, st: &mut EpState) {
        self.flush_deferred(st);
        if st.over_limit || st.accept_paused || st.slot_waiting {
            self.bound_conns(st, usize::MAX);
            self.dial_waiting(st);
            self.resume_accepting(st);
        }
        if let Some(l) = &st.listener {
            st.accept_backoff
                .resume_due(&self.epoll, l.as_raw_fd(), TOKEN_LISTENER);
        }
    }

    /// Reads, writes and accepts what is ready.
    fn progress_io(&self, st: &mut EpState, direct: bool) {
        st.solo.pass = st.solo.pass.wrapping_add(1);
        let every = if st.solo.none {
            NONE_EPOLL_EVERY
        } else {
            SOLO_EPOLL_EVERY
        };
        let mut epoll_pass = st.solo.pass.is_multiple_of(every);
        if epoll_pass && st.solo.none {
            // Only the listener can have input: a peer connecting by TCP
            // waits a millisecond more at most, and a ping-pong over the
            // same-host path, a progress pass or two per message, pays
            // no `epoll_wait` every few messages.
            let now = now_ms();
            epoll_pass = now != st.solo.none_epoll_ms;
            st.solo.none_epoll_ms = now;
        }
        let solo = st.solo.slot.filter(|&s| Solo::fits(&st.conns, s));
        if let Some(slot) = solo {
            // An unwatched connection is read on every pass: epoll would
            // not report it.
            if !epoll_pass || st.solo.unwatched == Some(slot) {
                self.read_conn(st, slot);
            }
        }
        // Out of the set only while it is the lone connection and fits.
        if let Some(u) = st.solo.unwatched {
            if st.solo.slot != Some(u) || !Solo::fits(&st.conns, u) {
                self.rewatch(st);
            }
        }
        if (solo.is_some() || st.solo.none) && !epoll_pass {
            return;
        }
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 32];
        let n = self.epoll.wait(&mut evs, 0);
        for ev in &evs[..n] {
            let (token, bits) = (ev.u64, ev.events);
            match token {
                TOKEN_LISTENER => self.accept_all(st),
                TOKEN_UDP => self.read_udp(st),
                // Looked at on every pass (`progress_pass`).
                local::TOKEN_SHM => {}
                t => {
                    let slot = (t - TOKEN_CONN) as usize;
                    if bits & libc::EPOLLOUT as u32 != 0 {
                        self.on_writable(st, slot);
                    }
                    if bits
                        & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR)
                            as u32
                        != 0
                    {
                        let Some(c) = st.conns.get(slot).and_then(Option::as_ref) else {
                            continue;
                        };
                        if c.state == ConnState::Connecting {
                            self.on_writable(st, slot);
                        } else if !c.watching_in {
                            // Not read for now. An error or hang-up (epoll
                            // reports those regardless) means it is dead,
                            // and would be reported again and again.
                            if bits & (libc::EPOLLERR | libc::EPOLLHUP) as u32 == 0 {
                                continue;
                            }
                            self.close_conn(
                                st,
                                slot,
                                Failure::code(FI_ECONNRESET),
                                "connection reset while paused",
                            );
                            continue;
                        }
                        self.read_conn(st, slot);
                    }
                }
            }
        }
        st.solo.slot = Solo::find(&st.conns);
        st.solo.none = st.conns.len() <= SOLO_SLOTS
            && st.conns.iter().all(Option::is_none)
            && st.udp.is_none()
            && self.ep_type == FI_EP_RDM;
        if direct {
            self.maybe_unwatch(st);
        }
    }

    /// Takes the lone connection out of the epoll set (during a queue's
    /// direct poll) unless a nested set holds the endpoint or something
    /// asked for the set lately (see [`Solo`]).
    fn maybe_unwatch(&self, st: &mut EpState) {
        let solo = &st.solo;
        if solo.pinned || solo.unwatched.is_some() {
            return;
        }
        let Some(slot) = solo.slot.filter(|&s| Solo::fits(&st.conns, s)) else {
            return;
        };
        if solo
            .last_wait_ms
            .is_some_and(|t| now_ms().saturating_sub(t) < UNWATCH_AFTER_WAIT_MS)
        {
            return;
        }
        if let Some(c) = st.conns[slot].as_ref() {
            self.epoll.remove(c.stream.as_raw_fd());
            st.solo.unwatched = Some(slot);
        }
    }

    /// Puts the unwatched connection (if any) back in the epoll set. Its
    /// interest is what it had when it left (input only: `Solo::fits`);
    /// `watch`, the only place that changes it, calls this first.
    pub(super) fn rewatch(&self, st: &mut EpState) {
        let Some(slot) = st.solo.unwatched.take() else {
            return;
        };
        let Some(c) = st.conns.get(slot).and_then(Option::as_ref) else {
            return;
        };
        if let Err(e) = self
            .epoll
            .add(c.stream.as_raw_fd(), TOKEN_CONN + slot as u64, false)
        {
            // Still read on every pass; only waits would miss it.
            prov_log!(
                PROV,
                FI_LOG_WARN,
                FI_LOG_EP_DATA,
                "cannot watch a connection again (epoll_ctl: {e}); it is polled only"
            );
            st.solo.unwatched = Some(slot);
        }
    }

    /// Retries connections paused for lack of unexpected-message room.
    pub(super) fn resume_paused(&self, st: &mut EpState) {
        // Every receive posted calls this: with many connections and none
        // paused (the usual case) the scan below would cost O(connections)
        // per receive.
        if !st.maybe_paused {
            return;
        }
        let paused: Vec<usize> = st
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.as_ref()
                    .is_some_and(|c| matches!(c.rx, RxState::Paused { .. }))
            })
            .map(|(i, _)| i)
            .collect();
        st.maybe_paused = !paused.is_empty();
        for s in paused {
            self.read_conn(st, s);
        }
    }
}

impl SockEp {
    /// A pass the application drives (through a queue): counted for the
    /// auto-progress thread; with `io` a full pass, else what a sweep
    /// needs (the queue's nested set reports this endpoint's I/O).
    fn app_call(&self, io: bool, direct: bool) {
        self.app_polls.note();
        if io && self.quick.skip() {
            return;
        }
        let Some(mut st) = self.st.try_lock() else {
            return;
        };
        self.app_pass(&mut st, io, direct);
    }

    /// [`Self::app_call`]'s pass, the endpoint's state locked.
    fn app_pass(&self, st: &mut EpState, io: bool, direct: bool) {
        st.app_pass = true;
        if io {
            self.progress_pass(st, direct);
        } else {
            self.housekeeping(st);
            self.retry_due(st);
        }
    }
}

impl Progress for SockEp {
    fn progress(&self) {
        self.app_call(true, false);
    }

    fn progress_direct(&self) {
        self.app_call(true, true);
    }

    fn progress_settled(&self) {
        self.app_polls.note();
        let mut st = self.lock();
        self.app_pass(&mut st, true, false);
        // The caller sleeps on our set next if nothing came.
        self.local_arm(&mut st);
    }

    fn wait_fd(&self) -> Option<RawFd> {
        let mut st = self.lock();
        self.local_arm(&mut st);
        self.rewatch(&mut st);
        st.solo.last_wait_ms = Some(now_ms());
        Some(self.epoll.raw())
    }

    fn pin_watch(&self) {
        let mut st = self.lock();
        st.solo.pinned = true;
        self.rewatch(&mut st);
    }

    fn tick(&self) {
        self.app_call(false, false);
    }

    /// With a same-host path: its ring is cheap to look at and its
    /// descriptor reports arrivals only while armed (`local.rs`).
    fn probe(&self) -> Option<Arc<dyn oxifabric::service::progress::Ready>> {
        self.local_wanted.then(|| self.quick.clone() as _)
    }

    /// Whether the application drove this endpoint's progress itself in
    /// the last 10 ms: the auto-progress thread then stays away (the
    /// application sees its data sooner, and two threads spinning on two
    /// cores only slow both).
    fn app_polling(&self) -> bool {
        let idle = self.app_polls.idle_ms();
        // Coalesced sends wait at most about a millisecond for the
        // application's next progress call; then the thread writes them.
        idle < 10 && !(self.flush_pending() && idle >= 1)
    }

    fn flush_pending(&self) -> bool {
        self.deferred_pending
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Progress from the auto-progress thread, unless the application is
    /// polling (see `app_polling`). Returns false when skipped.
    fn progress_background(&self) -> bool {
        if self.app_polling() {
            return false;
        }
        // Busy: the application is inside the endpoint (posting, or in a
        // long flush) and progresses it on its way out. Counting that as
        // work made the thread poll again at once, and an epoll set with
        // data the application is about to read stays readable: a spin
        // on the core the application's sends need (16% of a core while
        // a peer streamed 1 MiB RMA writes).
        let Some(mut st) = self.st.try_lock() else {
            return false;
        };
        st.app_pass = false;
        self.rewatch(&mut st);
        self.progress_locked(&mut st);
        true
    }
}

//! Rendezvous for large messages on the RDM endpoint: the receiver pulls
//! the bytes with RDMA READ from the sender's buffers straight into the
//! receive they matched (no copy on either side).
//!
//! - **Sender.** A send longer than the rendezvous limit
//!   ([`RdmEp::rndv_limit`], upstream's `FI_OFI_RXM_SAR_LIMIT`) whose
//!   buffers the domain's registration cache registers for remote reads
//!   sends one [`wire::Op::Rts`] naming them (address, length, remote key
//!   each) instead of its bytes, and completes when the receiver answers
//!   [`wire::Op::Delivered`] (the same wait as `FI_DELIVERY_COMPLETE`,
//!   `rdm/delivery.rs`; so these sends are delivery complete whatever was
//!   asked). The remote keys are those of the registrations the
//!   application's descriptors name, where each holds its buffer and lets
//!   peers read it (an RDM domain registers send buffers so); otherwise
//!   the domain's registration cache registers the buffers, held until
//!   the send completes. Injected sends, and buffers with neither (under
//!   `FI_MR_LOCAL` without such descriptors, or the cache failing), go as
//!   segmented eager pieces: a send never fails for want of a
//!   registration.
//! - **Receiver.** The announcement is a message like any other for the
//!   engine's receive queue: it matches a posted receive
//!   (`RxQueues::place_last`), or waits as a deferred unexpected message
//!   (`push_deferred`) that `FI_PEEK`/`FI_CLAIM`/`FI_DISCARD` and later
//!   receives find; a discarded one is answered at once. Once matched,
//!   the part that fits the receive (truncation is reported as for any
//!   message) is registered through the cache and read in work requests
//!   of at most [`CHUNK`] bytes (under the port's `max_msg_sz`) and one
//!   sender buffer each, [`READS`] at a time, each holding a transmit slot
//!   like every work request of the endpoint (so the send queue never
//!   overflows); when the last one completes the receive completes and
//!   `Delivered` goes back. The reads go on the connection the
//!   announcement came in on (RC: either direction reaches the sender's
//!   memory).
//! - **Faults.** A forged announcement (a count, length or address that
//!   does not add up) closes that connection (`wire::parse_rts`). A read
//!   the sender's device refuses, or a connection that fails, fails the
//!   receive with the connection's error and the sender's send with it
//!   (its `Delivered` never comes: `conn_failed`); registrations are
//!   dropped with the state that holds them. A receive buffer the cache
//!   cannot register fails the receive and answers `Delivered` with the
//!   error, which the sender reports.

use super::rma::{keyed_window, CHUNK};
use super::wire::{self, Remote, HDR};
use super::{verbs_err, Key, Phase, Post, RdmEp, State, TxWr, PIECE, SLOT};
use crate::ibv::owned::{Op, MAX_SGE};
use crate::ibv::{VerbsError, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ};
use crate::info::NAME;
use crate::mr_cache::Hold;
use oxifabric::abi::*;
use oxifabric::ops::{IoBuf, IoVec};
use oxifabric::service::ep_core::Failure;
use oxifabric::service::rxq::{complete_into, DeferredMatch, MsgInfo, Placement, Posted};
use std::sync::OnceLock;

/// Reads in flight for one message.
const READS: usize = 8;

/// The rendezvous limit when `FI_OFI_RXM_SAR_LIMIT` is unset: messages
/// longer than one eager piece (measured in the soft-RoCE guest: see the
/// README's verbs section).
const DEFAULT_LIMIT: usize = PIECE;

/// An announced message no receive has matched yet (the receive queue
/// holds it as deferred under the same key).
pub(super) struct Announced {
    msg: MsgInfo,
    remote: Vec<Remote>,
}

/// An announced message being read into the receive it matched.
pub(super) struct Pull {
    msg: MsgInfo,
    /// The message's length (what was not read was truncated).
    len: usize,
    remote: Vec<Remote>,
    recv: Posted,
    region: IoVec,
    keep: bool,
    /// The first `n` bytes of the region and their local keys.
    dest: IoVec,
    keys: [u32; MAX_SGE],
    _holds: Vec<Hold>,
    n: usize,
    /// Bytes whose reads are posted.
    off: usize,
    /// Reads posted and not completed.
    reading: usize,
}

/// `FI_OFI_RXM_SAR_LIMIT` (upstream's ofi_rxm: messages longer than it
/// go by rendezvous), read once.
fn limit_param() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| super::rxm_param("sar_limit").unwrap_or(DEFAULT_LIMIT))
}

impl RdmEp {
    /// Messages longer than this go by rendezvous.
    pub(super) fn rndv_limit() -> usize {
        limit_param()
    }

    /// The body of the announcement of a send of `len` bytes from `iov`
    /// (with descriptors `desc`, empty when none) and the registrations it
    /// holds until the receiver has read it; None when the send goes as
    /// eager pieces (short, too many buffers, or no remote key for a
    /// buffer).
    ///
    /// A buffer's remote key is its descriptor's registration's when the
    /// application gave descriptors and each names a registration that
    /// holds its buffer and lets peers read it (an RDM domain's send
    /// buffers do: `domain::with_rendezvous`); nothing is held then, the
    /// application keeps its registration until the send completes.
    /// Otherwise, except under `FI_MR_LOCAL`, the domain's registration
    /// cache registers the buffers for remote reads.
    pub(super) fn announce(
        &self,
        iov: &[IoBuf],
        desc: &[usize],
        len: usize,
    ) -> Option<(Vec<u8>, Vec<Hold>)> {
        if len <= Self::rndv_limit()
            || iov.len() > wire::RTS_BUFS
            || iov.iter().any(|b| u32::try_from(b.len()).is_err())
        {
            return None;
        }
        let eager = |why: &str| {
            oxifabric::prov_log!(
                NAME,
                FI_LOG_INFO,
                FI_LOG_EP_DATA,
                "send of {len} bytes goes as eager pieces: {why}"
            );
            None
        };
        let remote = |b: &IoBuf, rkey: u32| Remote {
            addr: b.addr() as u64,
            len: b.len() as u32,
            rkey,
        };
        if let Some(desc) = desc.get(..iov.len()) {
            let named: Option<Vec<Remote>> = iov
                .iter()
                .zip(desc)
                .filter(|(b, _)| !b.is_empty())
                .map(|(b, &d)| {
                    let lkey = u32::try_from(d).ok()?;
                    Some(remote(b, self.lkeys.readable(lkey, *b)?))
                })
                .collect();
            if let Some(bufs) = named {
                return Some((wire::rts_body(&bufs), Vec::new()));
            }
        }
        if self.info.domain.mr_mode & FI_MR_LOCAL != 0 {
            return eager("FI_MR_LOCAL and no descriptor peers may read through");
        }
        let mut holds = Vec::with_capacity(iov.len());
        let mut bufs = Vec::with_capacity(iov.len());
        for b in iov.iter().filter(|b| !b.is_empty()) {
            match self.cache.get(*b, IBV_ACCESS_REMOTE_READ) {
                Ok(h) => {
                    bufs.push(remote(b, h.rkey()));
                    holds.push(h);
                }
                Err(e) => return eager(&format!("the buffer could not be registered: {e}")),
            }
        }
        Some((wire::rts_body(&bufs), holds))
    }

    /// An [`wire::Op::Rts`] arrived on connection `cn` (`from` numbers a
    /// sender the AV did not name): it goes to the
    /// receive it matches, or waits as a deferred unexpected message; why
    /// it is refused otherwise.
    pub(super) fn on_rts(
        &self,
        st: &mut State,
        cn: u32,
        h: &wire::Header,
        body: &[u8],
        msg: MsgInfo,
        from: u32,
    ) -> Option<&'static str> {
        let remote = match wire::parse_rts(body, h.len) {
            Ok(r) => r,
            Err(why) => return Some(why),
        };
        let key = (cn, h.seq);
        if st.partial.contains(&key)
            || st.announced.contains_key(&key)
            || st.pulls.contains_key(&key)
        {
            return Some("a message number in use");
        }
        let len = h.len as usize;
        match st.rxq.place_last(msg.src, msg.tag, len) {
            Placement::Posted { recv, region, keep } => {
                let m = DeferredMatch {
                    from: oxifabric::service::rxq::Deferred { token: key, len },
                    src: msg.src,
                    recv,
                    region,
                    keep,
                    discard: false,
                };
                self.start_pull(st, m, Announced { msg, remote });
            }
            Placement::Unexpected => {
                st.rxq.push_deferred_from(msg, from, key, len);
                st.announced.insert(key, Announced { msg, remote });
            }
        }
        None
    }

    /// A receive matched deferred message `m` (from `RxQueues::post`): an
    /// announced one is read (or, discarded, answered at once); any other
    /// is a message coming in pieces (`service::reassembly`).
    pub(super) fn matched(&self, st: &mut State, m: DeferredMatch<Key>) {
        match st.announced.remove(&m.from.token) {
            Some(a) => self.start_pull(st, m, a),
            None => st.partial.matched(m, &st.core.sinks),
        }
    }

    /// Starts reading announced message `a` into the receive of `m`.
    fn start_pull(&self, st: &mut State, m: DeferredMatch<Key>, a: Announced) {
        let key = m.from.token;
        if m.discard {
            // The receive queue reported the receive; the sender's buffer
            // is released.
            return Self::answer(st, key, None);
        }
        let len = m.from.len;
        let n = len.min(m.region.total_len());
        let dest = m.region.window(0, n);
        let mut keys = [0u32; MAX_SGE];
        let mut holds = Vec::with_capacity(dest.len());
        for (i, b) in dest.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
            match self.cache.get(*b, IBV_ACCESS_LOCAL_WRITE) {
                Ok(h) => {
                    keys[i] = h.lkey();
                    holds.push(h);
                }
                Err(e) => {
                    verbs_err("registering a receive buffer for a rendezvous", e);
                    let f = Failure::cause(FI_EIO, "the receive buffer could not be registered");
                    st.core.sinks.rx_err(&m.recv, f, 0, 0);
                    return Self::answer(st, key, Some(FI_EIO));
                }
            }
        }
        oxifabric::prov_log!(
            NAME,
            FI_LOG_INFO,
            FI_LOG_EP_DATA,
            "rendezvous: reading {n} of {len} bytes announced as message {}",
            key.1
        );
        let p = Pull {
            // The source the queue held at the match: a sender the AV
            // named after the announcement arrived completes under that
            // name.
            msg: MsgInfo {
                src: m.src,
                ..a.msg
            },
            len,
            remote: a.remote,
            recv: m.recv,
            region: m.region,
            keep: m.keep,
            dest,
            keys,
            _holds: holds,
            n,
            off: 0,
            reading: 0,
        };
        st.pulls.insert(key, p);
        self.pull_more(st, key);
    }

    /// Posts the next reads of message `key` while transmit slots last,
    /// or completes it once every read has.
    fn pull_more(&self, st: &mut State, key: Key) {
        let (cn, _) = key;
        let State {
            pulls,
            conns,
            tx_free,
            wrs,
            ..
        } = &mut *st;
        let Some(p) = pulls.get_mut(&key) else { return };
        let Some(c) = conns.get(&cn).filter(|c| c.phase == Phase::Up) else {
            return;
        };
        let mut failed = None;
        while p.off < p.n && p.reading < READS {
            let Some(slot) = tx_free.pop() else { break };
            let (addr, rkey, left) = remote_at(&p.remote, p.off);
            let seg = CHUNK.min(left).min(p.n - p.off);
            let (v, k) = keyed_window(&p.dest, &p.keys, p.off, seg);
            let wr = wrs.next_id();
            if let Err(e) =
                c.id.post_send(wr, Op::Read { addr, rkey }, &v, &k[..v.len()], false)
            {
                tx_free.push(slot);
                verbs_err("ibv_post_send (rendezvous read)", e);
                failed = Some(Failure::cause(FI_EIO, "could not post a rendezvous read"));
                break;
            }
            let read = TxWr {
                pull: Some(key),
                ..TxWr::new(slot, u64::MAX, cn)
            };
            wrs.insert_as(wr, read);
            p.off += seg;
            p.reading += 1;
        }
        let done = p.off >= p.n && p.reading == 0;
        if let Some(f) = failed {
            return self.conn_failed(st, cn, f);
        }
        if done {
            self.finish_pull(st, key);
        }
    }

    /// A read of message `key` completed (its slot is free again; a
    /// failed one takes its connection down instead).
    pub(super) fn read_done(&self, st: &mut State, key: Key) {
        if let Some(p) = st.pulls.get_mut(&key) {
            p.reading -= 1;
        }
        self.pull_more(st, key);
    }

    /// Posts the announcement of message `seq` (`len` bytes, tag and
    /// data as given) whose buffers `desc` names, from the slot `p` holds.
    pub(super) fn post_rts(
        p: &Post<'_>,
        seq: u32,
        tag: Option<u64>,
        data: Option<u64>,
        len: usize,
        desc: &[u8],
    ) -> std::result::Result<(), VerbsError> {
        let h = wire::Header {
            op: wire::Op::Rts,
            seq,
            tag,
            data,
            len: len as u64,
            ack: false,
        };
        let b = p.txbuf.buf(p.slot * SLOT, HDR + desc.len());
        b.write_at(0, &h.encode());
        b.write_at(HDR, desc);
        let inline = HDR + desc.len() <= p.inline;
        p.id.post_send(p.wr, Op::Send(None), &[b], &[p.txbuf.lkey()], inline)
    }

    /// Every byte of message `key` that fits is in its receive: the
    /// receive completes, the sender hears it.
    fn finish_pull(&self, st: &mut State, key: Key) {
        let Some(p) = st.pulls.remove(&key) else {
            return;
        };
        complete_into(
            &p.recv,
            &p.region,
            p.n,
            p.len - p.n,
            p.msg,
            &st.core.sinks,
            !p.keep,
        );
        Self::answer(st, key, None);
    }

    /// Connection `cn` failed with `f`: the messages it announced fail
    /// their receives (or are forgotten, unmatched), their registrations
    /// released.
    pub(super) fn drop_pulls(st: &mut State, cn: u32, f: Failure) {
        st.announced.retain(|k, _| k.0 != cn);
        let gone: Vec<Key> = st.pulls.keys().filter(|k| k.0 == cn).copied().collect();
        for k in gone {
            if let Some(p) = st.pulls.remove(&k) {
                st.core.sinks.rx_err(&p.recv, f, 0, 0);
            }
        }
    }

    /// After transmit slots were freed: announced messages waiting for
    /// them read on.
    pub(super) fn pulls_waiting(&self, st: &mut State) {
        if st.pulls.is_empty() || st.tx_free.is_empty() {
            return;
        }
        let keys: Vec<Key> = st
            .pulls
            .iter()
            .filter(|(_, p)| p.off < p.n && p.reading < READS)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            self.pull_more(st, k);
        }
    }
}

/// The sender's address and key for byte `off` of an announced message,
/// and how many bytes of that buffer follow it.
fn remote_at(remote: &[Remote], mut off: usize) -> (u64, u32, usize) {
    for r in remote {
        let l = r.len as usize;
        if off < l {
            return (r.addr + off as u64, r.rkey, l - off);
        }
        off -= l;
    }
    (0, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_each_sender_buffer() {
        let r = [
            Remote {
                addr: 0x1000,
                len: 100,
                rkey: 1,
            },
            Remote {
                addr: 0x9000,
                len: 50,
                rkey: 2,
            },
        ];
        assert_eq!(remote_at(&r, 0), (0x1000, 1, 100));
        assert_eq!(remote_at(&r, 99), (0x1000 + 99, 1, 1));
        assert_eq!(remote_at(&r, 100), (0x9000, 2, 50));
        assert_eq!(remote_at(&r, 149), (0x9000 + 49, 2, 1));
        assert_eq!(remote_at(&r, 150).2, 0, "past the message");
    }
}

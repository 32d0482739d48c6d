//! Messages that arrive in pieces: a transport learns a message's length
//! from its first piece, then gets the rest in order (fragments of a
//! datagram socket, continuation cells of a shared-memory ring). Each
//! piece is copied straight into the receive the message matched; while
//! none matches, the pieces are held and the receive queue lists the
//! message as deferred (so `FI_PEEK` sees it from its first piece on), and
//! a receive posted later takes what came so far and the rest follows.
//!
//! One copy of this for every provider: `K` is the provider's key for a
//! message in flight (its sender and the sender's number for it), also
//! the token of the deferred entry in [`RxQueues`].

use super::ep_core::{Failure, Sinks};
use super::keyhash::KeyedU64;
use super::rxq::{complete_into, DeferredMatch, MsgInfo, Placement, Posted, Region, RxQueues};
use std::collections::HashMap;
use std::hash::Hash;

/// Why a piece was not taken: the peer sent what it never announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No message under that key has started.
    Unknown,
    /// The piece runs past the length the first piece announced (the
    /// bytes that fit were taken).
    TooLong,
}

/// Messages being received in pieces.
pub struct Reassembly<K> {
    parts: HashMap<K, Partial, KeyedU64>,
    /// Bytes held for receives not posted yet (all `Dest::Held`).
    held: usize,
}

impl<K> Default for Reassembly<K> {
    fn default() -> Reassembly<K> {
        Reassembly {
            parts: HashMap::default(),
            held: 0,
        }
    }
}

struct Partial {
    msg: MsgInfo,
    len: usize,
    got: usize,
    dest: Dest,
}

#[allow(clippy::large_enum_variant)] // one per message in flight
enum Dest {
    /// Into a matched receive.
    Posted {
        recv: Posted,
        region: Region,
        keep: bool,
    },
    /// Held for a receive not posted yet.
    Held(Vec<u8>),
    /// Matched by `FI_DISCARD`: the rest is dropped.
    Discard,
}

impl<K: Copy + Eq + Hash> Reassembly<K> {
    /// Bytes held for receives not posted yet: a transport that bounds
    /// unexpected data counts them with the receive queue's.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Whether a message is in flight under `key`.
    pub fn contains(&self, key: &K) -> bool {
        self.parts.contains_key(key)
    }

    /// Whether every byte of message `key` has arrived (it completed, or
    /// is held whole for a receive not posted yet): what a sender asking
    /// for `FI_DELIVERY_COMPLETE` waits for. Also true for a key never
    /// started.
    pub fn arrived(&self, key: &K) -> bool {
        self.parts.get(key).is_none_or(|p| p.got >= p.len)
    }

    /// Whether a message under a key `sel` selects has not wholly
    /// arrived yet (a transport asks before it closes a connection whose
    /// messages these are: an idle one has none).
    pub fn arriving(&self, sel: impl Fn(&K) -> bool) -> bool {
        self.parts.iter().any(|(k, p)| p.got < p.len && sel(k))
    }

    /// Whether message `key` is being held for a receive not posted yet
    /// (its next pieces add to [`Reassembly::held`]).
    pub fn holds(&self, key: &K) -> bool {
        self.parts
            .get(key)
            .is_some_and(|p| matches!(p.dest, Dest::Held(_)))
    }

    /// Messages in flight.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// A message of `len` bytes starts under `key` (its pieces follow
    /// through [`Reassembly::append`]): it goes to the receive it matches,
    /// or is listed as deferred until one is posted.
    pub fn start(&mut self, rxq: &mut RxQueues<K>, key: K, msg: MsgInfo, len: usize) {
        self.start_from(rxq, key, msg, 0, len);
    }

    /// [`Reassembly::start`] of a message from a sender the transport
    /// numbers `from` (`rxq::Unexpected::from`).
    pub fn start_from(
        &mut self,
        rxq: &mut RxQueues<K>,
        key: K,
        msg: MsgInfo,
        from: u32,
        len: usize,
    ) {
        let dest = match rxq.place_last(msg.src, msg.tag, len) {
            Placement::Posted { recv, region, keep } => Dest::Posted { recv, region, keep },
            Placement::Unexpected => {
                rxq.push_deferred_from(msg, from, key, len);
                Dest::Held(Vec::new())
            }
        };
        self.insert(key, msg, len, dest);
    }

    fn insert(&mut self, key: K, msg: MsgInfo, len: usize, dest: Dest) {
        let p = Partial {
            msg,
            len,
            got: 0,
            dest,
        };
        self.parts.insert(key, p);
    }

    /// A message of `len` bytes starts under `key` for a receive already
    /// matched (a rendezvous whose bytes come in pieces after all).
    pub fn start_into(
        &mut self,
        key: K,
        msg: MsgInfo,
        len: usize,
        recv: Posted,
        region: Region,
        keep: bool,
    ) {
        self.insert(key, msg, len, Dest::Posted { recv, region, keep });
    }

    /// The next bytes of message `key`; the message completes when all
    /// of it is here and it has a receive. Bytes past the announced
    /// length are dropped (`TooLong`).
    pub fn append(&mut self, key: K, body: &[u8], sinks: &Sinks) -> Result<(), Refused> {
        let p = self.parts.get_mut(&key).ok_or(Refused::Unknown)?;
        let sent = body.len();
        let fits = sent.min(p.len - p.got);
        let body = &body[..fits];
        match &mut p.dest {
            Dest::Posted { region, .. } => {
                region.scatter(p.got, body);
            }
            Dest::Held(v) => {
                v.extend_from_slice(body);
                self.held += body.len();
            }
            Dest::Discard => {}
        }
        p.got += body.len();
        self.finish(key, sinks);
        if fits < sent {
            return Err(Refused::TooLong);
        }
        Ok(())
    }

    /// As [`Reassembly::append`] for the next `n` bytes of message `key`,
    /// which `fill` copies straight to where they go, a piece at a time
    /// and in order (a transport whose bytes sit in shared memory copies
    /// them once, not through a buffer of its own).
    pub fn append_with(
        &mut self,
        key: K,
        n: usize,
        mut fill: impl FnMut(&mut [u8]),
        sinks: &Sinks,
    ) -> Result<(), Refused> {
        let p = self.parts.get_mut(&key).ok_or(Refused::Unknown)?;
        let fits = n.min(p.len - p.got);
        match &mut p.dest {
            Dest::Posted { region, .. } => {
                region.fill_at(p.got, fits, &mut fill);
            }
            Dest::Held(v) => {
                let start = v.len();
                v.resize(start + fits, 0);
                fill(&mut v[start..]);
                self.held += fits;
            }
            Dest::Discard => {}
        }
        p.got += fits;
        self.finish(key, sinks);
        if fits < n {
            return Err(Refused::TooLong);
        }
        Ok(())
    }

    /// Completes message `key` once all of it is here and it has a
    /// receive (or was discarded).
    fn finish(&mut self, key: K, sinks: &Sinks) {
        let done = self
            .parts
            .get(&key)
            .is_some_and(|p| p.got >= p.len && !matches!(p.dest, Dest::Held(_)));
        if !done {
            return;
        }
        if let Some(Partial {
            dest: Dest::Posted { recv, region, keep },
            msg,
            len,
            ..
        }) = self.parts.remove(&key)
        {
            let n = len.min(region.total_len());
            complete_into(&recv, &region, n, len - n, msg, sinks, !keep);
        }
    }

    /// A receive matched a deferred message of ours (from
    /// [`RxQueues::post`]): what came so far moves into it, the rest
    /// follows there; with `discard`, the rest is dropped.
    pub fn matched(&mut self, m: DeferredMatch<K>, sinks: &Sinks) {
        let key = m.from.token;
        let Some(p) = self.parts.get_mut(&key) else {
            return;
        };
        // Its sender may have been named since it arrived.
        p.msg.src = m.src;
        let held = std::mem::replace(&mut p.dest, Dest::Discard);
        if let Dest::Held(v) = &held {
            self.held -= v.len();
        }
        if !m.discard {
            if let Dest::Held(v) = &held {
                m.region.scatter(0, v);
            }
            p.dest = Dest::Posted {
                recv: m.recv,
                region: m.region,
                keep: m.keep,
            };
        }
        if p.got >= p.len {
            self.finish(key, sinks);
        }
    }

    /// Drops every message whose key `gone` selects (its sender is
    /// gone): receives they were going into fail with `f`, held ones
    /// leave the receive queue.
    pub fn drop_where(
        &mut self,
        rxq: &mut RxQueues<K>,
        gone: impl Fn(&K) -> bool,
        f: Failure,
        sinks: &Sinks,
    ) {
        let keys: Vec<K> = self.parts.keys().filter(|k| gone(k)).copied().collect();
        for k in keys {
            if let Some(p) = self.parts.remove(&k) {
                match p.dest {
                    Dest::Posted { recv, .. } => sinks.rx_err(&recv, f, p.got, 0),
                    Dest::Held(v) => self.held -= v.len(),
                    Dest::Discard => {}
                }
            }
        }
        rxq.drop_deferred(|k| gone(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::FI_ADDR_NOTAVAIL;

    #[test]
    fn arriving_names_only_incomplete_messages() {
        let (sinks, mut r) = started(10);
        assert!(r.arriving(|k| *k == 1), "none of its bytes yet");
        assert!(!r.arriving(|k| *k == 2), "another key");
        r.append(1, &[0; 10], &sinks).unwrap();
        assert!(!r.arriving(|k| *k == 1), "held whole: arrived");
    }

    /// A message of `len` bytes started under key 1, no receive posted.
    fn started(len: usize) -> (Sinks, Reassembly<u32>) {
        let mut rxq = RxQueues::<u32>::default();
        let mut r = Reassembly::<u32>::default();
        let msg = MsgInfo {
            src: FI_ADDR_NOTAVAIL,
            tag: None,
            data: None,
        };
        r.start(&mut rxq, 1, msg, len);
        (Sinks::default(), r)
    }

    #[test]
    fn holds_names_messages_waiting_for_a_receive() {
        let (sinks, mut r) = started(10);
        assert!(r.holds(&1), "no receive posted: held");
        assert!(!r.holds(&2), "a key never started");
        r.append(1, &[0; 4], &sinks).unwrap();
        assert_eq!(r.held(), 4);
        assert!(r.holds(&1));
    }

    #[test]
    fn a_message_has_arrived_once_all_its_bytes_are_here_even_unmatched() {
        let (sinks, mut r) = started(10);
        assert!(!r.arrived(&1), "nothing of it yet");
        r.append(1, &[0; 6], &sinks).unwrap();
        assert!(!r.arrived(&1), "6 of 10 bytes");
        r.append(1, &[0; 4], &sinks).unwrap();
        assert!(r.contains(&1), "held: no receive is posted");
        assert!(r.arrived(&1), "held whole counts as arrived");
        assert!(r.arrived(&2), "a key never started");
    }

    #[test]
    fn bytes_filled_in_place_are_held_and_cut_at_the_announced_length() {
        let (sinks, mut r) = started(5);
        r.append_with(1, 3, |d| d.copy_from_slice(&[1, 2, 3]), &sinks)
            .unwrap();
        assert_eq!(r.held(), 3);
        let got = r.append_with(1, 4, |d| d.copy_from_slice(&[4, 5]), &sinks);
        assert_eq!(got, Err(Refused::TooLong), "2 of its 4 bytes fit");
        assert!(r.arrived(&1));
        assert_eq!(r.held(), 5);
        assert_eq!(r.append_with(2, 1, |_| {}, &sinks), Err(Refused::Unknown));
    }
}

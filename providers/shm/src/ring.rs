//! A receiver's queue in shared memory: a bounded array of fixed-size
//! cells that many senders (threads of many processes) append to without
//! locks, and one receiver drains. A full ring refuses a message (the user
//! answers `-FI_EAGAIN`); nothing is ever overwritten.
//!
//! # Layout (native byte order; both sides run this library)
//!
//! ```text
//! 0    magic u64 | version u32 | cells u32 | cell size u32 | owner pid u32 |
//!      bounce chunks u32 | bounce chunk size u32 | split slots u32
//! 64   tail u64: the next position a sender claims    (own cache line)
//! 128  sleeping u32: the receiver's "about to sleep" word (own line)
//! 192  room u64: senders waiting for room, bit `claimer % 64` each
//!      (own line)
//! 256  cells[cells], each `cell size` bytes:
//!        seq u64 | kind u32 | len u32 | sender u32 | flags u32 |
//!        tag u64 | data u64 | token u64 | claim u64 | payload (from
//!        byte 56, so that 8 bytes share the header's line; the cell's
//!        last 8 bytes unused)
//! end of the cells: the owner's bounce area (`bounce`), chunks of
//!      `bounce chunk size` bytes that only the owner writes; then its
//!      split slots (`slots`), 64 bytes each
//! ```
//!
//! # Ordering (a bounded queue with a sequence number per cell, after
//! Dmitry Vyukov's array queue)
//!
//! Cell `i` starts with `seq = i`. A sender loads `tail` (position `p`),
//! then the cell `p % cells`: `seq == p` means free, and the sender claims
//! it by moving `tail` from `p` to `p + 1` (compare-and-swap); `seq < p`
//! means the receiver has not drained it yet (full); `seq > p` means
//! another sender got there first (reload `tail`). The winner fills the
//! cell and publishes it with `seq = p + 1` (release). The receiver keeps
//! its position `h` in private memory; `seq == h + 1` (acquire) means the
//! cell is ready. It copies the cell out, then hands it back with
//! `seq = h + cells` (release), which is the value the sender of position
//! `h + cells` waits for. Each sender's messages keep their order.
//!
//! # A sender that dies holding a cell
//!
//! Between its claim and its publication a cell belongs to one sender; if
//! that sender is killed there, the receiver would wait at that cell for
//! ever. So a claim has a second step that names the claimer: each cell's
//! `claim` word holds the cell's lap (`position / cells`, 32 bits) and a
//! claimer id (32 bits, never 0; the ring's owner hands one to each
//! sender). The receiver sets it to "lap `L`, nobody" before it hands the
//! cell out for lap `L`; the winner of `tail` then moves it to "lap `L`,
//! me" with a compare-and-swap, and only then writes the cell. When the
//! receiver's user learns that a sender died ([`Receiver::sender_gone`],
//! from its pidfd or hang-up), the receiver remembers the id and the
//! `tail` of that moment (the dead sender's claims all lie below it). A
//! claimed, unpublished cell below that mark whose `claim` names the dead
//! id, or nobody (the sender died between its two steps), is taken back
//! with a compare-and-swap of `claim` to the next lap and handed on
//! ([`Polled::Abandoned`]). A live sender caught between its two steps
//! loses that compare-and-swap, never writes the cell, and claims another
//! position; a sender past its second step is never taken back while its
//! id is not reported dead. The cost on the fast path is one uncontended
//! compare-and-swap on a cache line the sender writes next anyway, and on
//! the receiver one store when it hands a cell back.
//!
//! # Sleeping without spinning
//!
//! The receiver creates a [`Doorbell`] (an eventfd) that every sender
//! gets at attach. To sleep, the receiver empties the doorbell, sets the
//! `sleeping` word, issues a `SeqCst` fence, looks at its next cell once
//! more, and only if nothing is there waits on the doorbell (bounded by
//! its caller's timeout). A sender, after publishing, issues a `SeqCst`
//! fence and loads `sleeping`; only if it is set does it clear it (a
//! compare-and-swap, so one sender of many rings) and ring. The two
//! fences make a lost wake-up impossible: this is the store-buffering
//! pattern (each side stores one word, then loads the other's), and with
//! a `SeqCst` fence between each side's store and load, the fences are
//! ordered one way or the other, so either the receiver's second look
//! sees the published cell, or the sender's load sees `sleeping` set.
//! Without them both loads could see old values (each store still in
//! its CPU's store buffer) and the receiver would sleep past a message.
//! A sender that finds `sleeping` clear, the polling case, pays the
//! fence and one load of a line that stays shared: no system call.
//!
//! # Waking a sender when room appears
//!
//! The other direction of the same pattern. A sender that has messages
//! waiting for a full ring and is about to sleep sets its bit (`claimer %
//! 64`) in the `room` word ([`Sender::want_room`]), issues a `SeqCst`
//! fence and looks at the cell at `tail` once more: free means room came
//! meanwhile (do not sleep). The receiver, after handing cells back
//! (release stores of their sequence), issues a `SeqCst` fence and loads
//! `room`; only if it is not 0 does it swap it to 0
//! ([`Receiver::room_wanted`]) and ring the doorbell of each sender whose
//! bit is set: the sender's own receive doorbell, which the receiver
//! holds anyway as a sender to that peer's ring, so no second eventfd is
//! exchanged. Store, fence, load on both sides again: either the sender
//! sees the handed-back cell or the receiver sees the bit. Senders whose
//! ids share a bit are all woken (a spurious wake-up costs a look at the
//! ring). A polling sender never sets its bit, and a receiver whose
//! senders poll pays a fence and one load per drain, no system call.
//!
//! The word is read once (a swap) and only used as a mask over the
//! receiver's own list of peers: a peer that sets every bit makes the
//! receiver ring each of its peers once per drain (spurious wake-ups, as
//! any sender can cause by ringing), one that clears bits makes a sender
//! wait for its own safety timer. Neither reaches memory outside the
//! region.
//!
//! # What is validated
//!
//! The receiver trusts nothing in the region but its own copy of the
//! geometry (taken at creation) and its private position. A cell's header
//! is copied out once; a length above the payload capacity or an unknown
//! kind refuses the message ([`Polled::Refused`]); a sequence number that
//! no honest sender writes (neither "free" nor "ready") is refused and the
//! cell handed back, so scribbled memory costs messages, never an access
//! outside the region or a panic. A sender validates the header once when
//! it attaches (magic, version, power-of-two cell count, cell size, all
//! inside the region it mapped) and then uses only that copy; its claim
//! loop is bounded, so a `tail` another process scribbles over gives
//! `Again`, never a hang.
//!
//! Senders are not authenticated to each other: every sender can write
//! every cell, so `sender` is what the writing process claims. Peers of
//! the same user (the only ones `attach` admits) could `ptrace` each
//! other anyway; the guarantee here is memory safety, not secrecy.

use crate::bounce::BounceArea;
use crate::doorbell::Doorbell;
use crate::region::{Fixed, Region};
use crate::slots::SlotArea;
use oxifabric::error::{Error, Result};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{fence, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

const MAGIC: u64 = u64::from_le_bytes(*b"oxiring1");
/// Version 2 added the `room` word; version 3 the bounce area; version
/// 4 moved the payload into the header's last word.
const VERSION: u32 = 4;

const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_CELLS: usize = 12;
const H_CELL_SIZE: usize = 16;
const H_OWNER: usize = 20;
const H_CHUNKS: usize = 24;
const H_CHUNK_SIZE: usize = 28;
const H_SLOTS: usize = 32;
const TAIL: usize = 64;
/// The receiver's "about to sleep" word (u32, 1: sleeping).
const SLEEPING: usize = 128;
/// Senders waiting for room: bit `claimer % 64` of each (u64).
const ROOM: usize = 192;
/// Where the cells start.
const CELLS: usize = 256;

const C_SEQ: usize = 0;
const C_KIND: usize = 8;
const C_LEN: usize = 12;
const C_SENDER: usize = 16;
const C_FLAGS: usize = 20;
const C_TAG: usize = 24;
const C_DATA: usize = 32;
const C_TOKEN: usize = 40;
/// The claim word: lap (high 32 bits) and claimer id (low 32, 0: nobody).
const C_CLAIM: usize = 48;
/// Bytes of a cell before its payload, as cell sizes count them.
pub const CELL_HEADER: usize = 64;
/// Where the payload starts: in the header's last word (the cell's last
/// 8 bytes stay unused instead), so that a message of up to 8 bytes (an
/// MPI rank's small message, a tagged ping-pong) travels in the cache
/// line its sequence number publishes, and its receiver waits for one
/// line's transfer, not two.
const C_PAYLOAD: usize = 56;
const _: () = assert!(C_CLAIM + 8 == C_PAYLOAD && C_PAYLOAD + 8 == CELL_HEADER);

/// A cell's header, checked once per cell (its words need no check each).
type CellHead<'a> = Fixed<'a, CELL_HEADER>;
/// The ring's header (up to the cells), checked once per send.
type RingHead<'a> = Fixed<'a, CELLS>;

/// The smallest cell (64 bytes of payload).
pub const MIN_CELL: usize = 128;
/// The largest cell.
pub const MAX_CELL: usize = 64 << 10;
/// The most cells a ring has.
pub const MAX_CELLS: usize = 1 << 16;

/// How many times a sender retries a claim another sender won before
/// answering `Again` (bounds the loop when `tail` is scribbled over).
const CLAIM_TRIES: usize = 4096;

/// What a cell carries; the transport's user gives it meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// A whole message, its payload inline in the cell.
    Inline = 1,
    /// The start of a large message whose data stays at the sender; the
    /// payload describes where (for cross-memory attach), `token` names it.
    Rendezvous = 2,
    /// A transport-level notice (acknowledgement, goodbye), payload its own.
    Control = 3,
}

impl Kind {
    fn from_u32(v: u32) -> Option<Kind> {
        match v {
            1 => Some(Kind::Inline),
            2 => Some(Kind::Rendezvous),
            3 => Some(Kind::Control),
            _ => None,
        }
    }
}

/// A cell's header, without the payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// What the cell carries.
    pub kind: Kind,
    /// The sender's id as it claims it (see the module's note on trust).
    pub sender: u32,
    /// The user's flags (e.g. whether `tag` and `data` are meaningful).
    pub flags: u32,
    /// The message tag.
    pub tag: u64,
    /// Remote CQ data.
    pub data: u64,
    /// The user's token or sequence number for this message.
    pub token: u64,
}

/// A message taken off the ring: its header, copied out and validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// The header.
    pub meta: Meta,
    /// Payload bytes (at most the ring's payload capacity).
    pub len: usize,
}

/// The payload of the cell being received, still in shared memory: copy
/// it to where it is going (once).
pub struct Payload<'a> {
    region: &'a Region,
    off: usize,
    len: usize,
}

impl Payload<'_> {
    /// Payload bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies the first `dst.len()` bytes (at most the payload) into
    /// `dst`; returns how many.
    pub fn copy_to(&self, dst: &mut [u8]) -> usize {
        let n = dst.len().min(self.len);
        // The range was checked against the ring's geometry; an error
        // would mean a bug, and copies nothing.
        match self.region.copy_out(self.off, &mut dst[..n]) {
            Ok(()) => n,
            Err(_) => 0,
        }
    }

    /// The payload as a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0; self.len];
        let n = self.copy_to(&mut v);
        v.truncate(n);
        v
    }
}

/// What one poll of the ring found.
#[derive(Debug, PartialEq, Eq)]
pub enum Polled<R> {
    /// Nothing is ready.
    Empty,
    /// A message, and what the caller's function returned for it.
    Got(R),
    /// A cell that no honest sender writes; skipped, and why.
    Refused(&'static str),
    /// A cell claimed by a sender reported gone and never published;
    /// taken back so that the ring goes on (see the module's note).
    Abandoned,
}

/// The ring's shape, checked once, kept privately by each side.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    cells: usize,
    cell_size: usize,
}

impl Geometry {
    fn new(cells: usize, cell_size: usize) -> Result<Geometry> {
        let cells_ok = cells.is_power_of_two() && (2..=MAX_CELLS).contains(&cells);
        let size_ok = (MIN_CELL..=MAX_CELL).contains(&cell_size) && cell_size & 63 == 0;
        if !cells_ok || !size_ok {
            return Err(Error::Inval);
        }
        Ok(Geometry { cells, cell_size })
    }

    /// Region bytes the ring needs.
    fn bytes(self) -> usize {
        CELLS + self.cells * self.cell_size
    }

    /// The offset of the cell for position `pos`.
    fn cell(self, pos: u64) -> usize {
        CELLS + (pos as usize & (self.cells - 1)) * self.cell_size
    }

    /// As if the payload started after the whole header (it starts 8
    /// bytes earlier, and the cell's last 8 bytes go unused): what a
    /// cell carries stays `cell size - CELL_HEADER`, the size the layers
    /// above build their cells around.
    fn payload_capacity(self) -> usize {
        self.cell_size - CELL_HEADER
    }

    /// The claim word of position `pos` while nobody holds it: its lap in
    /// the high 32 bits (wrapping), claimer 0.
    fn unclaimed(self, pos: u64) -> u64 {
        (pos >> self.cells.trailing_zeros()) << 32
    }
}

/// Whether a ring may hold something to drain, seen from outside its
/// receiver (another thread, without the owner's lock): the cell at the
/// receiver's position is published. That is the line the receiver reads
/// next anyway (looking at `tail` instead cost a second transfer of a
/// line the sender had just written, on every message's path). Relaxed:
/// a cell published a moment ago may be seen on the next look only; a
/// cell whose sender died before publishing it is taken back by the
/// receiver's own passes (which its owner runs now and then regardless);
/// a scribbled sequence number only ever says "maybe".
#[derive(Clone)]
pub struct Peek {
    region: Arc<Region>,
    seen: Arc<AtomicU64>,
    geo: Geometry,
}

impl Peek {
    /// False when the next cell to drain is not published.
    pub fn maybe_ready(&self) -> bool {
        let pos = self.seen.load(Relaxed);
        match self.region.load_u64(self.geo.cell(pos) + C_SEQ, Relaxed) {
            Ok(seq) => seq != pos,
            Err(_) => true,
        }
    }
}

/// The receiving side: owns the region, drains the ring.
pub struct Receiver {
    /// Shared with [`Peek`]s.
    region: Arc<Region>,
    geo: Geometry,
    /// The next position to drain; private, so no peer can move it.
    head: u64,
    /// `head` as [`Peek`]s see it (stored as it moves).
    seen: Arc<AtomicU64>,
    /// Senders reported gone: their claimer id, and `tail` when the
    /// report came (every cell they claimed lies below it).
    gone: Vec<(u32, u64)>,
    /// The last claimer id handed out.
    last_claimer: u32,
    /// What senders ring when this receiver sleeps.
    doorbell: Doorbell,
    /// The owner's bounce area after the cells.
    bounce: BounceArea,
    /// The split slots after it.
    slots: SlotArea,
    /// This process's life page, offered with the ring.
    life: &'static crate::region::LifePage,
}

impl Receiver {
    /// Creates a ring of `cells` cells (a power of two) of `cell_size`
    /// bytes (a multiple of 64, header included) in a new region.
    pub fn create(cells: usize, cell_size: usize) -> Result<Receiver> {
        Receiver::with_bounce(cells, cell_size, 0, 0, 0)
    }

    /// [`Receiver::create`] with a bounce area of `chunks` chunks of
    /// `chunk_size` bytes after the cells (`bounce::BounceArea::new`'s
    /// limits; 0 chunks: none), then `slots` split slots.
    pub fn with_bounce(
        cells: usize,
        cell_size: usize,
        chunks: usize,
        chunk_size: usize,
        slots: usize,
    ) -> Result<Receiver> {
        let geo = Geometry::new(cells, cell_size)?;
        let bounce = BounceArea::new(geo.bytes(), chunks, chunk_size)?;
        let start = bounce.end().max(geo.bytes());
        let slots = SlotArea::new(start, slots)?;
        let region = Region::create(slots.end())?;
        for i in 0..cells as u64 {
            region.store_u64(geo.cell(i) + C_SEQ, i, Relaxed)?;
        }
        region.store_u32(H_VERSION, VERSION, Relaxed)?;
        region.store_u32(H_CELLS, cells as u32, Relaxed)?;
        region.store_u32(H_CELL_SIZE, cell_size as u32, Relaxed)?;
        region.store_u32(H_OWNER, std::process::id(), Relaxed)?;
        region.store_u32(H_CHUNKS, bounce.chunks() as u32, Relaxed)?;
        region.store_u32(H_CHUNK_SIZE, bounce.size() as u32, Relaxed)?;
        region.store_u32(H_SLOTS, slots.count() as u32, Relaxed)?;
        // Published last: a sender that sees the magic sees the rest.
        region.store_u64(H_MAGIC, MAGIC, Release)?;
        Ok(Receiver {
            region: Arc::new(region),
            geo,
            head: 0,
            seen: Arc::new(AtomicU64::new(0)),
            gone: Vec::new(),
            last_claimer: 0,
            doorbell: Doorbell::new()?,
            bounce,
            slots,
            life: crate::alive::own_page()?,
        })
    }

    /// This ring's split slots (used on [`Receiver::region`]).
    pub fn slots(&self) -> SlotArea {
        self.slots
    }

    /// This ring's bounce area (empty unless made
    /// [`Receiver::with_bounce`]).
    pub fn bounce(&self) -> BounceArea {
        self.bounce
    }

    /// Copies `parts` into chunk `k` of this ring's bounce area (see
    /// `bounce::BounceArea::write`).
    pub fn bounce_write(&self, k: usize, parts: &[&[u8]]) -> Result<usize> {
        self.bounce.write(&self.region, k, parts)
    }

    /// A look at this ring that needs neither the receiver nor its
    /// owner's lock.
    pub fn peek(&self) -> Peek {
        Peek {
            region: self.region.clone(),
            seen: self.seen.clone(),
            geo: self.geo,
        }
    }

    /// What to hand a new sender at attach: this ring's region and
    /// doorbell, and `claimer` (from [`Receiver::new_claimer`]).
    pub fn offer(&self, claimer: u32) -> crate::attach::Offer<'_> {
        crate::attach::Offer {
            region: &self.region,
            doorbell: &self.doorbell,
            life: self.life,
            claimer,
            name: &[],
        }
    }

    /// The doorbell senders ring when this receiver sleeps (each sender
    /// gets a descriptor of it at attach).
    pub fn doorbell(&self) -> &Doorbell {
        &self.doorbell
    }

    /// Sleeps until a sender publishes a cell or `deadline` passes,
    /// without spinning (see the module's note on sleeping); returns at
    /// once when the next cell is already there. Whether something may be
    /// ready (a wake-up, or a cell found before sleeping); `false` means
    /// the deadline passed in silence. Wake-ups can be spurious: the
    /// caller polls either way.
    pub fn sleep(&mut self, deadline: Instant) -> Result<bool> {
        let woken = self.prepare_sleep()? || self.doorbell.wait(deadline);
        self.after_sleep()?;
        Ok(woken)
    }

    /// The first half of [`Receiver::sleep`], for a caller that waits on
    /// more descriptors than the doorbell: empties the doorbell, says
    /// "about to sleep" to senders and looks at the next cell once more.
    /// `true` means a cell is there (do not wait); else wait for the
    /// doorbell's descriptor (among others). Either way call
    /// [`Receiver::after_sleep`] next.
    pub fn prepare_sleep(&mut self) -> Result<bool> {
        // Rings from earlier rounds would end this sleep at once.
        self.doorbell.take()?;
        let r = &self.region;
        r.store_u32(SLEEPING, 1, Relaxed)?;
        // Orders the store above before the look below (pairs with the
        // sender's fence after publishing; see the module's note).
        fence(SeqCst);
        let head = self.geo.cell(self.head);
        Ok(r.load_u64(head + C_SEQ, Acquire)? != self.head)
    }

    /// The second half of [`Receiver::sleep`]: senders stop ringing.
    pub fn after_sleep(&mut self) -> Result<()> {
        self.region.store_u32(SLEEPING, 0, Relaxed)
    }

    /// Which senders wait for room, to be called after draining (after
    /// [`Receiver::poll`] handed cells back): the `room` word's bits
    /// (`claimer % 64` of each sender that set one, see the module's
    /// note), now cleared; 0 when none (then without a write). The
    /// caller rings the doorbell of each sender whose claimer id's bit
    /// is set. What a peer wrote there is only a mask, used once.
    pub fn room_wanted(&mut self) -> u64 {
        // Orders the hand-backs before the load (pairs with the fence in
        // `Sender::want_room`).
        fence(SeqCst);
        match self.region.load_u64(ROOM, Relaxed) {
            Ok(0) | Err(_) => 0,
            Ok(_) => self.region.swap_u64(ROOM, 0, Relaxed).unwrap_or(0),
        }
    }

    /// A claimer id for a new sender on this ring (never 0); the sender
    /// passes it to [`Sender::attach`], and the receiver's user names it
    /// in [`Receiver::sender_gone`] once that sender is dead.
    pub fn new_claimer(&mut self) -> u32 {
        self.last_claimer = self.last_claimer.checked_add(1).unwrap_or(1);
        self.last_claimer
    }

    /// Tells the receiver that the sender with claimer id `claimer` is
    /// dead (its pidfd became readable or its connection hung up), so
    /// that cells it claimed and never published are taken back instead
    /// of stopping the ring. Reporting a live sender costs it (and
    /// whoever shares its id) messages, never memory safety.
    pub fn sender_gone(&mut self, claimer: u32) {
        // Every claim of the dead sender happened before its death was
        // reported, so before this load.
        if let Ok(tail) = self.region.load_u64(TAIL, Acquire) {
            self.gone.push((claimer, tail));
        }
    }

    /// The region, whose descriptor senders map.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The most payload bytes a cell carries.
    pub fn payload_capacity(&self) -> usize {
        self.geo.payload_capacity()
    }

    /// Takes the next message if one is ready and gives it to `f` (which
    /// copies the payload where it belongs); the cell goes back to the
    /// senders when `f` returns.
    pub fn poll<R>(&mut self, f: impl FnOnce(&Received, Payload<'_>) -> R) -> Polled<R> {
        match self.poll_inner(f) {
            Ok(p) => p,
            // Offsets come from the private geometry; not reached.
            Err(_) => Polled::Refused("cell outside the region"),
        }
    }

    fn poll_inner<R>(&mut self, f: impl FnOnce(&Received, Payload<'_>) -> R) -> Result<Polled<R>> {
        let pos = self.head;
        let cell = self.geo.cell(pos);
        let c: CellHead<'_> = self.region.fixed(cell)?;
        let seq = c.load_u64::<C_SEQ>(Acquire);
        if seq == pos {
            if self.gone.is_empty() {
                return Ok(Polled::Empty);
            }
            return self.take_back(pos, cell);
        }
        let verdict = if seq == pos.wrapping_add(1) {
            match Self::header(c, self.geo) {
                Ok(rx) => {
                    let payload = Payload {
                        region: &self.region,
                        off: cell + C_PAYLOAD,
                        len: rx.len,
                    };
                    Polled::Got(f(&rx, payload))
                }
                Err(why) => Polled::Refused(why),
            }
        } else {
            Polled::Refused("cell sequence number out of step")
        };
        Self::hand_back(self.geo, pos, c);
        self.advance(pos);
        Ok(verdict)
    }

    /// Hands the cell to the sender of position `pos + cells`: unclaimed
    /// for that lap, then free (release, so that sender sees the claim
    /// word reset).
    fn hand_back(geo: Geometry, pos: u64, c: CellHead<'_>) {
        let next = pos.wrapping_add(geo.cells as u64);
        c.store_u64::<C_CLAIM>(geo.unclaimed(next), Relaxed);
        c.store_u64::<C_SEQ>(next, Release);
    }

    /// Moves past the cell at `pos` (handed back).
    fn advance(&mut self, pos: u64) {
        self.head = pos.wrapping_add(1);
        self.seen.store(self.head, Relaxed);
    }

    /// The cell at `pos` is not published: takes it back if a sender
    /// reported gone may hold it (see the module's note), else `Empty`.
    #[cold]
    fn take_back<R>(&mut self, pos: u64, cell: usize) -> Result<Polled<R>> {
        let ahead = |mark: u64| mark.wrapping_sub(pos) as i64 > 0;
        // Reports whose mark we passed can hold no cell any more.
        self.gone.retain(|&(_, mark)| ahead(mark));
        if self.gone.is_empty() || !ahead(self.region.load_u64(TAIL, Acquire)?) {
            // Nobody reported gone can hold it, or nobody claimed it yet.
            return Ok(Polled::Empty);
        }
        let claim = self.region.load_u64(cell + C_CLAIM, Acquire)?;
        let unclaimed = self.geo.unclaimed(pos);
        let who = claim as u32;
        let dead = who == 0 || self.gone.iter().any(|&(id, _)| id == who);
        if claim & !u64::from(u32::MAX) != unclaimed || !dead {
            // A live sender still writing it (or garbage: the ring waits,
            // as it would for a hostile sender that never publishes).
            return Ok(Polled::Empty);
        }
        // Losing this race means the claimer named itself just now: a
        // live sender; look again at the next poll.
        let next = self.geo.unclaimed(pos.wrapping_add(self.geo.cells as u64));
        if self
            .region
            .compare_exchange_u64(cell + C_CLAIM, claim, next, Relaxed, Relaxed)?
            .is_err()
        {
            return Ok(Polled::Empty);
        }
        Self::hand_back(self.geo, pos, self.region.fixed(cell)?);
        self.advance(pos);
        Ok(Polled::Abandoned)
    }

    /// The header of a ready cell, copied out once and validated.
    fn header(c: CellHead<'_>, geo: Geometry) -> core::result::Result<Received, &'static str> {
        let kind = c.load_u32::<C_KIND>(Relaxed);
        let len = c.load_u32::<C_LEN>(Relaxed) as usize;
        let meta = Meta {
            kind: Kind::Inline,
            sender: c.load_u32::<C_SENDER>(Relaxed),
            flags: c.load_u32::<C_FLAGS>(Relaxed),
            tag: c.load_u64::<C_TAG>(Relaxed),
            data: c.load_u64::<C_DATA>(Relaxed),
            token: c.load_u64::<C_TOKEN>(Relaxed),
        };
        let Some(kind) = Kind::from_u32(kind) else {
            return Err("unknown cell kind");
        };
        if len > geo.payload_capacity() {
            return Err("payload length beyond the cell");
        }
        Ok(Received {
            meta: Meta { kind, ..meta },
            len,
        })
    }
}

/// The sending side: a peer's ring, mapped from its descriptor. Shared by
/// the threads of a process (`&Sender` is enough to send).
pub struct Sender {
    region: Arc<Region>,
    geo: Geometry,
    /// The ring owner's bounce area, as checked at attach.
    bounce: BounceArea,
    /// The ring owner's split slots, as checked at attach.
    slots: SlotArea,
    /// The id this sender names itself by in cells it claims.
    claimer: u32,
    /// The receiver's doorbell, rung when it sleeps.
    doorbell: Doorbell,
    /// Test hook: where `try_send` stops for ever (to be killed there).
    #[cfg(test)]
    pub(crate) stall: Option<Stall>,
}

/// Where a test makes a sender stop between its claim and publication.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stall {
    /// After winning `tail`, before naming itself in the cell.
    AfterTail,
    /// After naming itself, before publishing.
    AfterClaim,
}

impl Sender {
    /// Checks the ring's header once (`Inval` when it is not a ring of
    /// this layout that fits the region) and keeps the geometry.
    /// `claimer` is the id the ring's owner gave this sender
    /// ([`Receiver::new_claimer`]; not 0); `doorbell` is the receiver's.
    pub fn attach(
        region: impl Into<Arc<Region>>,
        claimer: u32,
        doorbell: Doorbell,
    ) -> Result<Sender> {
        let region = region.into();
        if claimer == 0
            || region.load_u64(H_MAGIC, Acquire)? != MAGIC
            || region.load_u32(H_VERSION, Relaxed)? != VERSION
        {
            return Err(Error::Inval);
        }
        let cells = region.load_u32(H_CELLS, Relaxed)? as usize;
        let cell_size = region.load_u32(H_CELL_SIZE, Relaxed)? as usize;
        let geo = Geometry::new(cells, cell_size)?;
        let chunks = region.load_u32(H_CHUNKS, Relaxed)? as usize;
        let chunk_size = region.load_u32(H_CHUNK_SIZE, Relaxed)? as usize;
        let bounce = BounceArea::new(geo.bytes(), chunks, chunk_size)?;
        let count = region.load_u32(H_SLOTS, Relaxed)? as usize;
        let slots = SlotArea::new(bounce.end().max(geo.bytes()), count)?;
        if geo.bytes() > region.len() || slots.end() > region.len() {
            return Err(Error::Inval);
        }
        Ok(Sender {
            region,
            geo,
            bounce,
            slots,
            claimer,
            doorbell,
            #[cfg(test)]
            stall: None,
        })
    }

    /// [`Sender::attach`] to the ring a peer granted at attach.
    pub fn from_grant(grant: crate::attach::Grant) -> Result<Sender> {
        Sender::attach(grant.region, grant.claimer, grant.doorbell)
    }

    /// Test hook: announces the stop on stdout and parks for ever.
    #[cfg(test)]
    fn stall_at(&self, at: Stall) {
        if self.stall == Some(at) {
            println!("stalled {at:?}");
            loop {
                std::thread::park();
            }
        }
    }

    /// The most payload bytes a cell carries.
    pub fn payload_capacity(&self) -> usize {
        self.geo.payload_capacity()
    }

    /// The claimer id this sender names itself by (given by the ring's
    /// owner).
    pub fn claimer(&self) -> u32 {
        self.claimer
    }

    /// The peer's region this sender writes into.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// Copies `dst.len()` bytes of chunk `k` of the ring owner's bounce
    /// area, from byte `off` of the chunk on, into `dst` (`Inval` for a
    /// chunk it does not have or bytes past a chunk's end: both come from
    /// the owner's cells, so they are checked here against the geometry
    /// read at attach).
    pub fn bounce_read_at(&self, k: usize, off: usize, dst: &mut [u8]) -> Result<()> {
        self.bounce.read_at(&self.region, k, off, dst)
    }

    /// The ring owner's bounce area, as checked at attach.
    pub fn bounce(&self) -> BounceArea {
        self.bounce
    }

    /// The ring owner's split slots (used on [`Sender::region`]).
    pub fn slots(&self) -> SlotArea {
        self.slots
    }

    /// Appends a message whose payload is the concatenation of `payload`:
    /// `MsgSize` when it does not fit a cell, `Again` when the ring is
    /// full (or contended beyond the claim bound).
    pub fn try_send(&self, meta: &Meta, payload: &[&[u8]]) -> Result<()> {
        let len: usize = payload.iter().map(|p| p.len()).sum();
        if len > self.geo.payload_capacity() {
            return Err(Error::MsgSize);
        }
        let r = &self.region;
        let h: RingHead<'_> = r.fixed(0)?;
        let mut pos = h.load_u64::<TAIL>(Relaxed);
        let mut claimed = None;
        for _ in 0..CLAIM_TRIES {
            let cell = self.geo.cell(pos);
            let c: CellHead<'_> = r.fixed(cell)?;
            c.prefetch_for_write();
            let seq = c.load_u64::<C_SEQ>(Acquire);
            match (seq.wrapping_sub(pos) as i64).signum() {
                0 => {
                    match h.compare_exchange_u64::<TAIL>(pos, pos.wrapping_add(1), Relaxed, Relaxed)
                    {
                        Ok(_) => {
                            #[cfg(test)]
                            self.stall_at(Stall::AfterTail);
                            // Name ourselves; failing means the receiver took
                            // the position back (it believed its claimer
                            // dead): leave the cell alone, claim another.
                            let free = self.geo.unclaimed(pos);
                            let mine = free | u64::from(self.claimer);
                            if c.compare_exchange_u64::<C_CLAIM>(free, mine, Acquire, Relaxed)
                                .is_ok()
                            {
                                claimed = Some((pos, cell, c));
                                break;
                            }
                            pos = h.load_u64::<TAIL>(Relaxed);
                        }
                        Err(now) => pos = now,
                    }
                }
                -1 => return Err(Error::Again),
                _ => pos = h.load_u64::<TAIL>(Relaxed),
            }
        }
        let Some((pos, cell, c)) = claimed else {
            return Err(Error::Again);
        };
        #[cfg(test)]
        self.stall_at(Stall::AfterClaim);
        c.store_u32::<C_KIND>(meta.kind as u32, Relaxed);
        c.store_u32::<C_LEN>(len as u32, Relaxed);
        c.store_u32::<C_SENDER>(meta.sender, Relaxed);
        c.store_u32::<C_FLAGS>(meta.flags, Relaxed);
        c.store_u64::<C_TAG>(meta.tag, Relaxed);
        c.store_u64::<C_DATA>(meta.data, Relaxed);
        c.store_u64::<C_TOKEN>(meta.token, Relaxed);
        let mut off = cell + C_PAYLOAD;
        for p in payload {
            r.copy_in(off, p)?;
            off += p.len();
        }
        // Publish: the receiver's acquire load of seq sees all of the above.
        c.store_u64::<C_SEQ>(pos.wrapping_add(1), Release);
        // Orders the publication before the load of `sleeping` (pairs with
        // the receiver's fence in `Receiver::sleep`).
        fence(SeqCst);
        if h.load_u32::<SLEEPING>(Relaxed) != 0
            && h.compare_exchange_u32::<SLEEPING>(1, 0, Relaxed, Relaxed)
                .is_ok()
        {
            self.doorbell.ring();
        }
        Ok(())
    }

    /// Says this sender waits for room (sets its bit in the ring's `room`
    /// word, see the module's note) and looks once more: `true` when the
    /// next cell is free now (do not sleep: send again), `false` when the
    /// ring is still full, and then the receiver rings this sender's
    /// doorbell (the one it gave the receiver) once it hands cells back.
    /// Call it only when about to sleep, after emptying that doorbell, so
    /// the ring is not lost. A `tail` scribbled so that neither answer
    /// comes within the claim bound counts as full.
    pub fn want_room(&self) -> Result<bool> {
        let r = &self.region;
        r.fetch_or_u64(ROOM, 1 << (self.claimer % 64), Relaxed)?;
        // Orders the bit before the look below (pairs with the fence in
        // `Receiver::room_wanted`).
        fence(SeqCst);
        let mut pos = r.load_u64(TAIL, Relaxed)?;
        for _ in 0..CLAIM_TRIES {
            let seq = r.load_u64(self.geo.cell(pos) + C_SEQ, Acquire)?;
            match (seq.wrapping_sub(pos) as i64).signum() {
                0 => return Ok(true),
                -1 => return Ok(false),
                // Another sender claimed it: look at the new tail.
                _ => pos = r.load_u64(TAIL, Relaxed)?,
            }
        }
        Ok(false)
    }

    /// Rings the ring owner's doorbell whether or not it sleeps: for a
    /// receiver telling this peer (as a sender waiting for room in the
    /// receiver's own ring) that room came.
    pub fn ring_doorbell(&self) {
        self.doorbell.ring();
    }

    /// Whether the receiver said it is about to sleep (for tests and
    /// diagnostics).
    pub fn receiver_sleeping(&self) -> bool {
        self.region
            .load_u32(SLEEPING, Relaxed)
            .is_ok_and(|v| v != 0)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// A sender on the same ring through a second mapping, as a peer
    /// process would have.
    pub(crate) fn sender_of(rx: &Receiver) -> Sender {
        sender_as(rx, 1)
    }

    /// As [`sender_of`], naming itself `claimer` in the cells it claims.
    pub(crate) fn sender_as(rx: &Receiver, claimer: u32) -> Sender {
        let fd = rx.region().fd().try_clone_to_owned().unwrap();
        let bell = rx.doorbell().try_clone().unwrap();
        Sender::attach(Region::from_fd(fd, usize::MAX).unwrap(), claimer, bell).unwrap()
    }

    pub(crate) fn meta(sender: u32, token: u64) -> Meta {
        Meta {
            kind: Kind::Inline,
            sender,
            flags: 0,
            tag: token ^ 0xabcd,
            data: u64::from(sender) << 32,
            token,
        }
    }

    /// The payload sender `s` puts in its message `i`: its length and
    /// bytes both depend on (s, i), so a mixed-up cell shows.
    pub(crate) fn payload(s: u32, i: u64, cap: usize) -> Vec<u8> {
        let n = (i as usize * 7 + s as usize) % (cap + 1);
        (0..n)
            .map(|k| (k as u64 ^ i ^ u64::from(s) << 3) as u8)
            .collect()
    }

    /// Checks a received message against what its sender must have sent
    /// next; returns the sender.
    pub(crate) fn check(rx: &Received, bytes: &[u8], next: &mut [u64], cap: usize) -> u32 {
        let s = rx.meta.sender;
        let i = next[s as usize];
        assert_eq!(rx.meta, meta(s, i), "sender {s}: message {i} in order");
        assert_eq!(bytes, payload(s, i, cap), "sender {s}: message {i} payload");
        next[s as usize] += 1;
        s
    }

    #[test]
    fn messages_arrive_whole_and_in_order_and_a_full_ring_refuses() {
        let mut rx = Receiver::create(8, 256).unwrap();
        let tx = sender_of(&rx);
        let cap = tx.payload_capacity();
        assert_eq!(cap, 192);
        for i in 0..8 {
            let p = payload(0, i, cap);
            tx.try_send(&meta(0, i), &[&p[..p.len() / 2], &p[p.len() / 2..]])
                .unwrap();
        }
        assert_eq!(tx.try_send(&meta(0, 8), &[]), Err(Error::Again), "full");
        assert_eq!(tx.try_send(&meta(0, 8), &[&[0; 193]]), Err(Error::MsgSize));
        let mut next = [0u64];
        for _ in 0..8 {
            let got = rx.poll(|m, p| (*m, p.to_vec()));
            let Polled::Got((m, bytes)) = got else {
                panic!("expected a message, got {got:?}")
            };
            check(&m, &bytes, &mut next, cap);
            // Each drained cell makes room for exactly one more.
            tx.try_send(&meta(0, next[0] + 7), &[&payload(0, next[0] + 7, cap)])
                .unwrap();
            assert_eq!(tx.try_send(&meta(0, 99), &[]), Err(Error::Again));
        }
        assert_eq!(next[0], 8);
    }

    #[test]
    fn many_threads_send_concurrently_without_loss_or_mixing() {
        const SENDERS: u32 = 4;
        const EACH: u64 = 20_000;
        let mut rx = Receiver::create(64, 128).unwrap();
        let cap = rx.payload_capacity();
        let senders: Vec<_> = (0..SENDERS)
            .map(|s| {
                let tx = sender_of(&rx);
                std::thread::spawn(move || {
                    let mut i = 0;
                    while i < EACH {
                        match tx.try_send(&meta(s, i), &[&payload(s, i, cap)]) {
                            Ok(()) => i += 1,
                            Err(Error::Again) => std::thread::yield_now(),
                            Err(e) => panic!("send: {e}"),
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u64; SENDERS as usize];
        let total = u64::from(SENDERS) * EACH;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut got = 0;
        let mut buf = [0u8; 128];
        while got < total {
            match rx.poll(|m, p| (*m, p.copy_to(&mut buf))) {
                Polled::Got((m, n)) => {
                    check(&m, &buf[..n], &mut next, cap);
                    got += 1;
                }
                Polled::Empty => {
                    assert!(std::time::Instant::now() < deadline, "stalled at {got}");
                    std::thread::yield_now();
                }
                Polled::Refused(why) => panic!("refused: {why}"),
                Polled::Abandoned => panic!("nobody was reported gone"),
            }
        }
        for t in senders {
            t.join().unwrap();
        }
        assert_eq!(rx.poll(|_, _| ()), Polled::Empty);
    }

    #[test]
    fn garbage_headers_are_refused_and_the_ring_goes_on() {
        let mut rx = Receiver::create(4, 128).unwrap();
        let tx = sender_of(&rx);
        let raw = &tx.region;
        // A ready cell with an unknown kind, then one with a length
        // beyond the cell, then one whose sequence is out of step.
        tx.try_send(&meta(0, 0), &[]).unwrap();
        raw.store_u32(CELLS + C_KIND, 77, Ordering::Relaxed)
            .unwrap();
        tx.try_send(&meta(0, 1), &[]).unwrap();
        raw.store_u32(CELLS + 128 + C_LEN, u32::MAX, Ordering::Relaxed)
            .unwrap();
        raw.store_u64(CELLS + 256 + C_SEQ, 12345, Ordering::Relaxed)
            .unwrap();
        assert_eq!(rx.poll(|_, _| ()), Polled::Refused("unknown cell kind"));
        assert_eq!(
            rx.poll(|_, _| ()),
            Polled::Refused("payload length beyond the cell")
        );
        assert_eq!(
            rx.poll(|_, _| ()),
            Polled::Refused("cell sequence number out of step")
        );
        assert_eq!(rx.poll(|_, _| ()), Polled::Empty);
        // Garbage in the header makes a sender refuse to attach.
        let fd = rx.region().fd().try_clone_to_owned().unwrap();
        let other = Region::from_fd(fd, usize::MAX).unwrap();
        other.store_u32(H_CELLS, 3, Ordering::Relaxed).unwrap();
        let fd = rx.region().fd().try_clone_to_owned().unwrap();
        let again = Region::from_fd(fd, usize::MAX).unwrap();
        let bell = || rx.doorbell().try_clone().unwrap();
        assert!(
            Sender::attach(again, 1, bell()).is_err(),
            "3 cells is no ring"
        );
        other
            .store_u32(H_CELLS, 1 << 15, Ordering::Relaxed)
            .unwrap();
        let fd = rx.region().fd().try_clone_to_owned().unwrap();
        let again = Region::from_fd(fd, usize::MAX).unwrap();
        assert!(
            Sender::attach(again, 1, bell()).is_err(),
            "more cells than the region holds"
        );
    }

    #[test]
    fn a_scribbled_tail_gives_again_not_a_hang() {
        let rx = Receiver::create(4, 128).unwrap();
        let tx = sender_of(&rx);
        // Far ahead of every cell: "full"; just behind: "someone else
        // claimed it" forever, bounded by the claim loop.
        tx.region
            .store_u64(TAIL, 1 << 40, Ordering::Relaxed)
            .unwrap();
        assert_eq!(tx.try_send(&meta(0, 0), &[]), Err(Error::Again));
        tx.region
            .store_u64(TAIL, u64::MAX - 1, Ordering::Relaxed)
            .unwrap();
        assert_eq!(tx.try_send(&meta(0, 0), &[]), Err(Error::Again));
    }

    /// Claims the next position by hand, as a sender would, naming
    /// `claimer` in the cell unless it is 0 (then it "died" between its
    /// two steps); never publishes.
    fn claim_by_hand(tx: &Sender, claimer: u32) -> u64 {
        let r = &tx.region;
        let pos = r.load_u64(TAIL, Ordering::Relaxed).unwrap();
        r.store_u64(TAIL, pos + 1, Ordering::Relaxed).unwrap();
        if claimer != 0 {
            let cell = tx.geo.cell(pos);
            let free = tx.geo.unclaimed(pos);
            let cas = r.compare_exchange_u64(
                cell + C_CLAIM,
                free,
                free | u64::from(claimer),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            assert_eq!(cas.unwrap(), Ok(free), "the cell was unclaimed");
        }
        pos
    }

    #[test]
    fn cells_a_dead_sender_claimed_are_taken_back_and_a_live_ones_are_not() {
        let mut rx = Receiver::create(4, 128).unwrap();
        let (dead, live, other) = (rx.new_claimer(), rx.new_claimer(), rx.new_claimer());
        let tx = sender_as(&rx, live);
        // Laps 0 and 1 and the wrap of the claim words: twice round.
        for lap in 0..2u64 {
            // The dead sender holds two cells: one named, one not yet.
            claim_by_hand(&tx, dead);
            claim_by_hand(&tx, 0);
            tx.try_send(&meta(0, lap), &[]).unwrap();
            assert_eq!(rx.poll(|_, _| ()), Polled::Empty, "stuck before the report");
            rx.sender_gone(dead);
            assert_eq!(rx.poll(|_, _| ()), Polled::Abandoned, "named cell");
            assert_eq!(rx.poll(|_, _| ()), Polled::Abandoned, "unnamed cell");
            assert_eq!(rx.poll(|m, _| m.meta.token), Polled::Got(lap));
            assert_eq!(rx.poll(|_, _| ()), Polled::Empty);
            // A live sender's claimed cell is waited for even while a
            // report is pending, and arrives once published.
            let pos = claim_by_hand(&tx, other);
            rx.sender_gone(dead);
            assert_eq!(rx.poll(|_, _| ()), Polled::Empty, "live claimer waited for");
            let cell = tx.geo.cell(pos);
            tx.region
                .store_u32(cell + C_KIND, Kind::Inline as u32, Ordering::Relaxed)
                .unwrap();
            tx.region
                .store_u32(cell + C_LEN, 0, Ordering::Relaxed)
                .unwrap();
            tx.region
                .store_u64(cell + C_SEQ, pos + 1, Ordering::Release)
                .unwrap();
            assert!(matches!(rx.poll(|_, _| ()), Polled::Got(())));
            assert_eq!(rx.poll(|_, _| ()), Polled::Empty);
        }
        // Reports whose cells were all passed are forgotten: a new
        // sender's unnamed claim is waited for, not taken back.
        let pos = claim_by_hand(&tx, 0);
        assert_eq!(rx.poll(|_, _| ()), Polled::Empty);
        assert!(rx.gone.is_empty(), "stale reports dropped");
        // A sender whose position was taken back claims another one.
        rx.sender_gone(dead);
        assert_eq!(rx.poll(|_, _| ()), Polled::Abandoned);
        let cell = tx.geo.cell(pos);
        let free = tx.geo.unclaimed(pos);
        let late = tx.region.compare_exchange_u64(
            cell + C_CLAIM,
            free,
            free | 9,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        assert!(late.unwrap().is_err(), "a late claimer loses the cell");
        tx.try_send(&meta(0, 7), &[&[1, 2, 3]]).unwrap();
        assert_eq!(
            rx.poll(|m, p| (m.meta.token, p.to_vec())),
            Polled::Got((7, vec![1, 2, 3]))
        );
    }

    #[test]
    fn a_sender_rings_the_doorbell_only_when_the_receiver_sleeps() {
        let mut rx = Receiver::create(8, 128).unwrap();
        let tx = sender_of(&rx);
        // The polling fast path: no ring at all.
        for i in 0..1000 {
            tx.try_send(&meta(0, i), &[]).unwrap();
            assert!(matches!(rx.poll(|m, _| m.meta.token), Polled::Got(t) if t == i));
        }
        assert_eq!(rx.doorbell().take().unwrap(), 0, "rung while nobody slept");
        // A receiver asleep: of several sends, one rings.
        let sleeper = std::thread::spawn(move || {
            let woken = rx.sleep(Instant::now() + std::time::Duration::from_secs(20));
            (woken.unwrap(), rx)
        });
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        while !tx.receiver_sleeping() {
            assert!(Instant::now() < deadline, "the receiver never slept");
            std::thread::yield_now();
        }
        for i in 0..3 {
            tx.try_send(&meta(0, i), &[]).unwrap();
        }
        let (woken, mut rx) = sleeper.join().unwrap();
        assert!(woken, "the sleep ended by its timeout");
        assert!(!tx.receiver_sleeping());
        // The sleep leaves the ring in the descriptor; at most one.
        assert!(rx.doorbell().take().unwrap() <= 1, "rung more than once");
        // A ready cell means no sleep at all.
        assert!(rx.sleep(Instant::now()).unwrap());
    }

    #[test]
    fn no_wake_up_is_lost_over_many_sleep_and_send_rounds() {
        use std::sync::atomic::AtomicU64;
        use std::sync::Arc;
        const ROUNDS: u64 = 3000;
        let round = std::time::Duration::from_secs(10);
        let mut rx = Receiver::create(4, 128).unwrap();
        let tx = sender_of(&rx);
        let done = Arc::new(AtomicU64::new(0));
        let seen = done.clone();
        // Each message goes out right after the receiver took the last
        // one, racing its way into the next sleep.
        let sender = std::thread::spawn(move || {
            for i in 0..ROUNDS {
                let deadline = Instant::now() + round;
                while seen.load(Ordering::Acquire) < i {
                    assert!(Instant::now() < deadline, "round {i}: receiver stuck");
                    std::thread::yield_now();
                }
                tx.try_send(&meta(0, i), &[]).unwrap();
            }
        });
        for i in 0..ROUNDS {
            loop {
                match rx.poll(|m, _| m.meta.token) {
                    Polled::Got(t) => {
                        assert_eq!(t, i);
                        break;
                    }
                    Polled::Empty => {
                        let woken = rx.sleep(Instant::now() + round).unwrap();
                        assert!(woken, "round {i}: lost wake-up (slept to the timeout)");
                    }
                    other => panic!("{other:?}"),
                }
            }
            done.store(i + 1, Ordering::Release);
        }
        sender.join().unwrap();
    }

    #[test]
    fn a_sender_waiting_for_room_is_named_once_cells_are_handed_back() {
        let mut rx = Receiver::create(4, 128).unwrap();
        let tx = sender_as(&rx, 70);
        assert_eq!(rx.room_wanted(), 0, "nobody asked");
        for i in 0..4 {
            tx.try_send(&meta(0, i), &[]).unwrap();
        }
        assert!(!tx.want_room().unwrap(), "full");
        assert!(matches!(rx.poll(|_, _| ()), Polled::Got(())));
        assert_eq!(rx.room_wanted(), 1 << (70 % 64), "the waiting sender's bit");
        assert_eq!(rx.room_wanted(), 0, "cleared");
        assert!(tx.want_room().unwrap(), "room now");
        // Garbage in the word is only a mask.
        rx.region()
            .store_u64(ROOM, u64::MAX, Ordering::Relaxed)
            .unwrap();
        assert_eq!(rx.room_wanted(), u64::MAX);
    }

    #[test]
    fn no_room_wake_up_is_lost_over_many_full_ring_rounds() {
        const MESSAGES: u64 = 5000;
        let round = std::time::Duration::from_secs(10);
        let mut rx = Receiver::create(2, 128).unwrap();
        let tx = sender_as(&rx, 3);
        // The sender's own receive doorbell, which the receiver rings.
        let bell = Doorbell::new().unwrap();
        let ring_it = bell.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            let (mut waits, mut i) = (0u64, 0);
            while i < MESSAGES {
                match tx.try_send(&meta(0, i), &[]) {
                    Ok(()) => i += 1,
                    Err(Error::Again) => {
                        // About to sleep: empty the doorbell, then ask.
                        bell.take().unwrap();
                        if !tx.want_room().unwrap() {
                            let woken = bell.wait(Instant::now() + round);
                            assert!(woken, "message {i}: lost room wake-up");
                            waits += 1;
                        }
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            waits
        });
        let deadline = Instant::now() + round * 6;
        let mut next = 0;
        while next < MESSAGES {
            match rx.poll(|m, _| m.meta.token) {
                Polled::Got(t) => {
                    assert_eq!(t, next);
                    next += 1;
                    if rx.room_wanted() & (1 << 3) != 0 {
                        ring_it.ring();
                    }
                }
                Polled::Empty => {
                    assert!(Instant::now() < deadline, "stalled at {next}");
                    std::thread::yield_now();
                }
                other => panic!("{other:?}"),
            }
        }
        let waits = sender.join().unwrap();
        eprintln!("room: the sender slept {waits} times, woken each time");
    }

    #[test]
    fn bad_geometry_is_refused() {
        assert!(Receiver::create(3, 128).is_err());
        assert!(Receiver::create(4, 100).is_err());
        assert!(Receiver::create(4, 64).is_err());
        assert!(Receiver::create(MAX_CELLS * 2, 128).is_err());
        assert!(Receiver::create(1, 128).is_err());
        assert!(Receiver::with_bounce(4, 128, 65, 4096, 0).is_err());
        assert!(Receiver::with_bounce(4, 128, 0, 0, 65).is_err());
    }

    #[test]
    fn a_sender_reads_the_owners_bounce_area_within_its_geometry() {
        let rx = Receiver::with_bounce(4, 128, 2, 4096, 1).unwrap();
        assert_eq!(sender_of(&rx).slots().count(), 1);
        assert_eq!(rx.bounce().chunks(), 2);
        let tx = sender_of(&rx);
        rx.bounce_write(1, &[b"hello"]).unwrap();
        let mut out = [0u8; 5];
        tx.bounce_read_at(1, 0, &mut out).unwrap();
        assert_eq!(&out, b"hello");
        assert_eq!(tx.bounce_read_at(2, 0, &mut out), Err(Error::Inval));
        // A header claiming an area past the region's end is refused at
        // attach.
        rx.region().store_u32(H_CHUNKS, 64, Relaxed).unwrap();
        let dup = Region::from_fd(
            rx.region().fd().try_clone_to_owned().unwrap(),
            crate::region::MAX_LEN,
        )
        .unwrap();
        assert!(Sender::attach(dup, 1, Doorbell::new().unwrap()).is_err());
        // No area: nothing to read.
        let plain = Receiver::create(4, 128).unwrap();
        assert_eq!(
            sender_of(&plain).bounce_read_at(0, 0, &mut out),
            Err(Error::Inval)
        );
    }
}

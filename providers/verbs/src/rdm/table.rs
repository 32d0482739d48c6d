//! The RDM endpoint's operations and work requests in flight, under ids
//! that name their slot.
//!
//! - **Why.** Every message costs an insert, a few lookups and a removal
//!   in the table of sends and in the table of work requests; as hash
//!   maps those were about 450 of an 8-byte send's instructions in the
//!   soft-RoCE guest's count (each lookup hashes the id and probes). Here
//!   a lookup is an index and a compare.
//! - **Ids.** An id is its slot's index (the low [`INDEX_BITS`] bits) and
//!   the number of the insert that filled the slot above them. A slot is
//!   reused as soon as it is freed, but an id kept after its value was
//!   dropped never finds the slot's next value: its number differs. That
//!   matters for work requests, whose completions may still come out of
//!   the CQ after their queue pair was destroyed and its requests
//!   forgotten (`RdmEp::release_wrs`), and it keeps a stale send id
//!   harmless. Ids stay below bit 63, which receive work requests carry.

/// Bits of an id that hold the slot's index ([`Table::new`]).
const INDEX_BITS: u32 = 24;
/// Ids stay below bit 63 ([`Table::new`]).
const ID_BITS: u32 = 63;

/// Values in reusable slots, found by id.
pub(super) struct Table<T> {
    items: Vec<Option<(u64, T)>>,
    /// Indexes of empty slots.
    free: Vec<u32>,
    live: usize,
    /// The number the next insert gives.
    number: u64,
    index_bits: u32,
    index_mask: u64,
    /// Insert numbers wrap within this, so ids fit their width.
    number_mask: u64,
}

impl<T> Table<T> {
    /// A table of up to 2^24 values, ids below bit 63.
    pub(super) fn new() -> Table<T> {
        Table::with_bits(INDEX_BITS, ID_BITS)
    }

    /// A table of up to 2^`index_bits` values whose ids fit in `id_bits`
    /// bits.
    pub(super) fn with_bits(index_bits: u32, id_bits: u32) -> Table<T> {
        assert!(index_bits < id_bits && id_bits <= 63);
        Table {
            items: Vec::new(),
            free: Vec::new(),
            live: 0,
            number: 0,
            index_bits,
            index_mask: (1 << index_bits) - 1,
            number_mask: (1 << (id_bits - index_bits)) - 1,
        }
    }

    /// The id the next [`Table::insert`] returns (work requests are posted
    /// under it before they are recorded).
    #[inline]
    pub(super) fn next_id(&self) -> u64 {
        let i = match self.free.last() {
            Some(&i) => i as usize,
            None => self.items.len(),
        };
        (self.number << self.index_bits) | i as u64
    }

    /// Keeps `v`; returns its id.
    #[inline]
    pub(super) fn insert(&mut self, v: T) -> u64 {
        let id = self.next_id();
        let i = (id & self.index_mask) as usize;
        if i == self.items.len() {
            assert!(i as u64 <= self.index_mask, "more values than ids");
            self.items.push(Some((id, v)));
        } else {
            self.free.pop();
            self.items[i] = Some((id, v));
        }
        self.number = (self.number + 1) & self.number_mask;
        self.live += 1;
        id
    }

    /// Keeps `v` under `id`, which [`Table::next_id`] gave just before
    /// (a work request is posted under its id before it is kept).
    #[inline]
    pub(super) fn insert_as(&mut self, id: u64, v: T) {
        let got = self.insert(v);
        assert_eq!(got, id, "an id not given by next_id");
    }

    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<&T> {
        match self.items.get((id & self.index_mask) as usize) {
            Some(Some((k, v))) if *k == id => Some(v),
            _ => None,
        }
    }

    #[inline]
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        match self.items.get_mut((id & self.index_mask) as usize) {
            Some(Some((k, v))) if *k == id => Some(v),
            _ => None,
        }
    }

    /// Takes the value of `id` out; None when it holds none.
    #[inline]
    pub(super) fn take(&mut self, id: u64) -> Option<T> {
        let i = (id & self.index_mask) as usize;
        match self.items.get(i) {
            Some(Some((k, _))) if *k == id => {}
            _ => return None,
        }
        let (_, v) = self.items[i].take()?;
        self.free.push(i as u32);
        self.live -= 1;
        Some(v)
    }

    /// How many values are held.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// The values held, with their ids.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        self.items.iter().flatten().map(|(k, v)| (*k, v))
    }

    /// The values held.
    pub(super) fn values(&self) -> impl Iterator<Item = &T> {
        self.items.iter().flatten().map(|(_, v)| v)
    }

    /// Drops every value.
    pub(super) fn clear(&mut self) {
        self.items.clear();
        self.free.clear();
        self.live = 0;
    }
}

/// Connections by number: a [`Table`] whose ids fit the 32 bits a
/// receive work request's id gives its connection (`rx_wr`), for up to
/// 4096 connections (an endpoint keeps at most `sizes::max_conns()`,
/// 1020 with the fewest receive buffers). Every piece
/// received looks its connection up a few times; with a hash map that
/// was about a fifth of the receiving side's instructions per piece.
pub(super) struct ConnTable<T>(Table<T>);

impl<T> ConnTable<T> {
    pub(super) fn new() -> ConnTable<T> {
        ConnTable(Table::with_bits(12, 32))
    }

    /// The number the next [`ConnTable::insert`] must give (a queue
    /// pair's receives are posted under it before it is kept).
    pub(super) fn next_key(&self) -> u32 {
        self.0.next_id() as u32
    }

    /// Keeps `v` under `cn`, which [`ConnTable::next_key`] gave just
    /// before.
    pub(super) fn insert(&mut self, cn: u32, v: T) {
        self.0.insert_as(u64::from(cn), v);
    }

    #[inline]
    pub(super) fn get(&self, cn: &u32) -> Option<&T> {
        self.0.get(u64::from(*cn))
    }

    #[inline]
    pub(super) fn get_mut(&mut self, cn: &u32) -> Option<&mut T> {
        self.0.get_mut(u64::from(*cn))
    }

    pub(super) fn remove(&mut self, cn: &u32) -> Option<T> {
        self.0.take(u64::from(*cn))
    }

    pub(super) fn contains_key(&self, cn: &u32) -> bool {
        self.get(cn).is_some()
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    /// The connections with their numbers.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.0.iter().map(|(k, v)| (k as u32, v))
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &T> {
        self.0.values()
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_find_their_value_until_it_is_taken_and_never_after() {
        let mut t = Table::new();
        let a = t.insert("a");
        let b = t.insert("b");
        assert_ne!(a, b);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(a), Some(&"a"));
        *t.get_mut(b).unwrap() = "B";
        assert_eq!(t.take(b), Some("B"));
        assert_eq!(t.take(b), None, "taken once");
        assert_eq!(t.len(), 1);
        // The slot is reused at once, under a new id that the old one
        // does not find.
        let next = t.next_id();
        let c = t.insert("c");
        assert_eq!(c, next);
        assert_eq!(c & 0xff_ffff, b & 0xff_ffff);
        assert_ne!(c, b);
        assert_eq!(t.get(b), None);
        assert_eq!(t.get_mut(b), None);
        assert_eq!(t.take(b), None);
        assert_eq!(t.get(c), Some(&"c"));
        let mut seen: Vec<_> = t.iter().map(|(k, v)| (k, *v)).collect();
        seen.sort();
        assert_eq!(seen, vec![(a, "a"), (c, "c")]);
        assert!(t.iter().all(|(k, _)| k & (1 << 63) == 0));
        assert_eq!(t.get(u64::MAX), None);
        t.clear();
        assert_eq!(t.len(), 0);
        assert_eq!(t.get(a), None);
    }

    #[test]
    fn narrow_ids_wrap_within_their_width() {
        let mut t = Table::with_bits(2, 4);
        let mut seen = Vec::new();
        for i in 0..10 {
            let id = t.insert(i);
            assert!(id < 16, "{id}");
            assert_eq!(t.take(id), Some(i));
            seen.push(id);
        }
        // One slot, reused: its numbers run 0..4 and start again.
        assert_eq!(&seen[..5], &[0, 4, 8, 12, 0]);
    }

    #[test]
    fn connection_numbers_come_from_next_key() {
        let mut t = ConnTable::new();
        let a = t.next_key();
        t.insert(a, "a");
        let b = t.next_key();
        t.insert(b, "b");
        assert_eq!(t.get(&a), Some(&"a"));
        assert_eq!(t.remove(&a), Some("a"));
        assert!(!t.contains_key(&a));
        let c = t.next_key();
        t.insert(c, "c");
        assert_ne!(c, a, "a reused slot, a new number");
        assert_eq!(t.len(), 2);
        let mut all: Vec<_> = t.iter().collect();
        all.sort();
        assert_eq!(all, vec![(b, &"b"), (c, &"c")]);
    }

    #[test]
    #[should_panic(expected = "next_id")]
    fn a_number_not_from_next_key_is_refused() {
        let mut t = ConnTable::new();
        t.insert(7, "x");
    }
}

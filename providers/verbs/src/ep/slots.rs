//! Work requests in flight, by slot: the work request id a completion
//! carries back names its slot directly, so finding the request costs an
//! index instead of a hash lookup (an insert and a removal per operation
//! were a tenth of a small send's instructions); a request is moved once,
//! into its slot, and read and dropped there.

/// Values kept in reusable slots; an id is `tag` plus the slot's index,
/// so the ids of different tables (sends, receives, a shared receive
/// context's) never collide.
pub(crate) struct Slots<T> {
    items: Vec<Option<T>>,
    /// Indexes of empty slots.
    free: Vec<u32>,
    live: usize,
    tag: u64,
}

/// The bits of an id that hold its slot's index.
const INDEX_MASK: u64 = (1 << 32) - 1;

impl<T> Slots<T> {
    /// An empty table whose ids carry `tag` (above bit 31).
    pub(crate) fn new(tag: u64) -> Slots<T> {
        debug_assert_eq!(tag & INDEX_MASK, 0);
        Slots {
            items: Vec::new(),
            free: Vec::new(),
            live: 0,
            tag,
        }
    }

    /// Keeps `v` and returns its id.
    pub(crate) fn insert(&mut self, v: T) -> u64 {
        self.insert_with(|| v)
    }

    /// Keeps what `make` returns and returns its id; `make` runs once
    /// the slot is chosen, so a large value can be built in place.
    #[inline]
    pub(crate) fn insert_with(&mut self, make: impl FnOnce() -> T) -> u64 {
        let i = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.items.push(None);
                self.items.len() - 1
            }
        };
        // A free slot holds None: nothing to drop, so the value can be
        // written straight into it.
        self.items[i].get_or_insert_with(make);
        self.live += 1;
        self.tag | i as u64
    }

    /// The value of `id`, if it is this table's and still held.
    pub(crate) fn get(&self, id: u64) -> Option<&T> {
        let i = self.index(id)?;
        self.items[i].as_ref()
    }

    /// Drops the value of `id` where it lies; whether there was one.
    pub(crate) fn free(&mut self, id: u64) -> bool {
        match self.index(id) {
            Some(i) if self.items[i].is_some() => {
                self.items[i] = None;
                self.free.push(i as u32);
                self.live -= 1;
                true
            }
            _ => false,
        }
    }

    /// How many values are held.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Drops every value.
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.free.clear();
        self.live = 0;
    }

    fn index(&self, id: u64) -> Option<usize> {
        if id & !INDEX_MASK != self.tag {
            return None;
        }
        let i = (id & INDEX_MASK) as usize;
        (i < self.items.len()).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_their_slot_and_only_their_table() {
        let mut a = Slots::new(1 << 40);
        let mut b = Slots::new(2 << 40);
        let x = a.insert("x");
        let y = a.insert("y");
        let z = b.insert("z");
        assert_ne!(x, y);
        assert_eq!(a.len(), 2);
        assert_eq!(a.get(x), Some(&"x"));
        assert!(!a.free(z), "another table's id");
        assert!(!b.free(x), "another table's id");
        assert_eq!(b.get(x), None, "another table's id");
        assert!(a.free(x));
        assert!(!a.free(x), "freed once");
        assert_eq!(a.get(x), None);
        assert_eq!(a.len(), 1);
        // The freed slot is reused under the same id.
        assert_eq!(a.insert("w"), x);
        assert_eq!(a.get(y), Some(&"y"));
        assert!(b.free(z));
        assert_eq!(b.len(), 0);
        a.clear();
        assert_eq!(a.len(), 0);
        assert_eq!(a.get(y), None);
    }
}

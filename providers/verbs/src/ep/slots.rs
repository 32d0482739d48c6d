//! Work requests in flight, by slot: the work request id a completion
//! carries back names its slot directly, so finding the request costs an
//! index instead of a hash lookup (an insert and a removal per operation
//! were a tenth of a small send's instructions), and a request is moved
//! once into its slot and once out.

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
        let i = match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(v);
                i as usize
            }
            None => {
                self.items.push(Some(v));
                self.items.len() - 1
            }
        };
        self.live += 1;
        self.tag | i as u64
    }

    /// The value of `id`, if it is this table's and still held.
    pub(crate) fn get(&self, id: u64) -> Option<&T> {
        let i = self.index(id)?;
        self.items[i].as_ref()
    }

    /// Takes the value of `id` out, if it is this table's and held.
    pub(crate) fn remove(&mut self, id: u64) -> Option<T> {
        let i = self.index(id)?;
        let v = self.items[i].take()?;
        self.free.push(i as u32);
        self.live -= 1;
        Some(v)
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
        assert_eq!(a.remove(z), None, "another table's id");
        assert_eq!(b.remove(x), None, "another table's id");
        assert_eq!(a.remove(x), Some("x"));
        assert_eq!(a.remove(x), None, "taken once");
        assert_eq!(a.len(), 1);
        // The freed slot is reused under the same id.
        assert_eq!(a.insert("w"), x);
        assert_eq!(a.get(y), Some(&"y"));
        assert_eq!(b.remove(z), Some("z"));
        a.clear();
        assert_eq!(a.len(), 0);
        assert_eq!(a.get(y), None);
    }
}

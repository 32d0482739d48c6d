//! Whether a peer's process still lives, learned with one memory load.
//!
//! A send must not complete as delivered into the ring of a peer that
//! is already dead (its receiver will never read it), yet asking the
//! kernel (`poll` on the peer's pidfd and connection) costs a system call,
//! several times a small message's whole cost. So each process keeps one
//! life page ([`LifePage`]) whose first word the kernel rewrites when the
//! thread holding it ends, `SIGKILL` included, before anyone can see the
//! process exited; every peer maps it read-only at attach. A sender reads
//! the word: it names a live thread, so the process lives and the send
//! goes on; or it does not (that thread ended, or the process), and the
//! sender asks the kernel before sending.
//!
//! The holder is the thread that opened this process's first endpoint.
//! If that thread ends while the process goes on, peers see a dead word
//! and take the slow way until this process opens another endpoint, whose
//! thread then takes the page over ([`own_page`]).

use crate::region::LifePage;
use oxifabric::error::Result;
use std::sync::Mutex;

/// The kernel's mark for a robust futex whose owner ended
/// (`FUTEX_OWNER_DIED`), and the bits holding the owner's thread id
/// (`FUTEX_TID_MASK`), from `linux/futex.h`.
const OWNER_DIED: u32 = 0x4000_0000;
const TID_MASK: u32 = 0x3fff_ffff;

/// This process's page and the pid it was made for.
static PAGE: Mutex<Option<(u32, &'static LifePage)>> = Mutex::new(None);

/// This process's life page: made on first use (again in a child after
/// `fork`, which must not pass for its parent), and taken over by the
/// calling thread when the thread that held it has ended.
pub fn own_page() -> Result<&'static LifePage> {
    let pid = std::process::id();
    let mut page = PAGE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, p)) = *page {
        if owner == pid {
            p.reclaim();
            return Ok(p);
        }
    }
    let p = LifePage::create()?;
    *page = Some((pid, p));
    Ok(p)
}

/// The word of this process's page as peers read it, without taking the
/// page over (0 when there is none yet).
#[cfg(test)]
pub fn own_word() -> u32 {
    let page = PAGE.lock().unwrap_or_else(|e| e.into_inner());
    page.map_or(0, |(_, p)| p.owner_word())
}

/// Whether a life page's word names a live holder (so its process
/// certainly lives); false when the holder ended, nobody holds it, or the
/// word is garbage.
pub fn surely_alive(word: u32) -> bool {
    word & TID_MASK != 0 && word & OWNER_DIED == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_reads_alive_only_with_a_live_holder() {
        assert!(surely_alive(1234));
        assert!(!surely_alive(0));
        assert!(!surely_alive(OWNER_DIED));
        assert!(!surely_alive(OWNER_DIED | 1234));
        let p = own_page().unwrap();
        assert!(std::ptr::eq(p, own_page().unwrap()), "one page per process");
        if cfg!(target_env = "gnu") {
            assert!(surely_alive(p.owner_word()));
        }
    }

    #[test]
    fn a_thread_that_ends_leaves_the_word_dead_until_another_takes_over() {
        if !cfg!(target_env = "gnu") {
            return;
        }
        // A page of this test's own, held by a thread that ends.
        let page = std::thread::spawn(|| LifePage::create().unwrap())
            .join()
            .unwrap();
        assert!(!surely_alive(page.owner_word()), "holder ended");
        assert!(page.reclaim());
        assert!(surely_alive(page.owner_word()), "taken over");
    }
}

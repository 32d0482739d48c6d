//! The C handle of every object, and how the C boundary finds the Rust
//! object behind a `struct fid *`.
//!
//! Each object is one heap allocation laid out as `Handle<C, T>`: the C
//! struct the application sees (`fid_ep`, `fid_cq`, ...) first, so a
//! pointer to the handle is a pointer to the C struct, then a magic number
//! and the Rust side. [`Handle::from_fid`] checks the class and the magic
//! before trusting a pointer; a fid of the wrong class or a foreign pointer
//! with the right class but no magic is refused with `-FI_EINVAL` instead of
//! being used.

use crate::abi::*;
use core::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Marks memory as one of our handles: "oxifabri" in ASCII.
pub const MAGIC: u64 = 0x6f78_6966_6162_7269;

/// A C object and the Rust object behind it.
#[repr(C)]
pub struct Handle<C, T> {
    /// What the application sees; starts with `struct fid`.
    pub c: C,
    magic: u64,
    /// `FI_CLASS_*` of this object.
    pub class: c_int,
    /// How many other objects are bound to this one; `fi_close` is refused
    /// with `-FI_EBUSY` while it is not zero.
    pub binds: Arc<AtomicUsize>,
    /// The Rust object.
    pub inner: T,
}

impl<C, T> Handle<C, T> {
    /// Moves a new handle to the heap and returns the C pointer to it. The
    /// C struct's embedded `fid` must already carry `class`.
    pub fn boxed(c: C, class: c_int, inner: T) -> *mut C {
        let h = Box::new(Handle {
            c,
            magic: MAGIC,
            class,
            binds: Arc::new(AtomicUsize::new(0)),
            inner,
        });
        Box::into_raw(h) as *mut C
    }

    /// Finds the handle behind a fid of the expected class.
    ///
    /// # Safety
    /// `fid` is NULL or points to at least a `struct fid`; when its class is
    /// `class` it must be a handle created by [`Handle::boxed`] with these
    /// type parameters (one Rust type per class keeps that true).
    pub unsafe fn from_fid<'a>(fid: *const fid, class: c_int) -> Option<&'a Handle<C, T>> {
        // SAFETY: NULL or a readable struct fid, by the caller's promise.
        let f = unsafe { fid.as_ref() }?;
        if f.fclass as c_int != class {
            return None;
        }
        let h = fid as *const Handle<C, T>;
        // SAFETY: a fid of this class is, by the caller's promise, one of
        // our handles with these type parameters, so its magic and class
        // fields are readable; they are read in place, without a reference
        // to the whole handle, so that an object of the same class from
        // elsewhere that is at least that large is refused, not used.
        let (magic, cls) = unsafe {
            (
                ptr::addr_of!((*h).magic).read(),
                ptr::addr_of!((*h).class).read(),
            )
        };
        if magic != MAGIC || cls != class {
            return None;
        }
        // SAFETY: the magic says it is a live handle made by boxed.
        Some(unsafe { &*h })
    }

    /// Frees a handle (after `fi_close` decided it may go).
    ///
    /// # Safety
    /// `h` came from [`Handle::boxed`] and no reference to it remains.
    pub unsafe fn free(h: *const Handle<C, T>) {
        // SAFETY: h came from Box::into_raw in boxed and is freed once.
        let mut b = unsafe { Box::from_raw(h as *mut Handle<C, T>) };
        b.magic = 0;
        drop(b);
    }

    /// Whether other objects are still bound to this one.
    pub fn busy(&self) -> bool {
        self.binds.load(Ordering::Acquire) > 0
    }

    /// The embedded `struct fid`.
    pub fn fid_ptr(&self) -> *mut fid {
        &self.c as *const C as *mut fid
    }
}

/// Records that one object is bound to another; dropping it releases the
/// bind, so an endpoint that is closed unbinds everything it held.
pub struct BindRef(Arc<AtomicUsize>);

impl BindRef {
    /// Takes one bind on `binds`.
    pub fn new(binds: &Arc<AtomicUsize>) -> BindRef {
        binds.fetch_add(1, Ordering::AcqRel);
        BindRef(binds.clone())
    }

    /// Another bind on the same object.
    pub fn again(&self) -> BindRef {
        BindRef::new(&self.0)
    }

    /// Whether `other` binds the same object (e.g. two objects opened on
    /// one domain).
    pub fn same_object(&self, other: &BindRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Drop for BindRef {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

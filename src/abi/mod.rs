//! The `#[repr(C)]` mirror of libfabric 2.x's public C headers (the API of
//! 2.6, the newest release; what 2.2–2.6 added to Debian 13's 2.1 is listed
//! in `docs/api-2.2-2.6.md`); the older nodes' layouts are in [`layouts`].
//!
//! This module is the single source of truth for every public type, constant
//! and vtable layout: `tools/hdrgen` reads these files and writes
//! `include/rdma/*.h` from them, and the oracle test (`tests/abi_oracle.py`)
//! proves that both agree with the headers Debian's `libfabric-dev` installs.
//! One Rust module per upstream header, items in the header's order.
//!
//! Conventions the header generator relies on:
//! - a named C enum is written with `c_enum!`: a `c_uint` (or `c_int`) type
//!   alias plus one constant per enumerator, every value explicit;
//! - an anonymous C enum is written with `c_anon_enum!`: constants only;
//! - a struct or union whose name starts with `__anon_` is emitted inline,
//!   anonymously, at the one place that uses it;
//! - an array of length 0 is a C flexible array member;
//! - a struct whose only field is `_opaque` is an incomplete type in C
//!   (declared, never defined);
//! - integer constants become `#define`s, with a `ULL` suffix on `u64` ones.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]
#![allow(clippy::upper_case_acronyms, clippy::type_complexity)]

/// Declares a named C enum: a C integer type alias and one constant per
/// enumerator. Rust never gets a Rust `enum` for a C enum, so an out-of-range
/// value coming from C is an ordinary integer to validate, not UB.
macro_rules! c_enum {
    ($(#[$m:meta])* pub enum $name:ident : $ty:ty {
        $($(#[$vm:meta])* $var:ident = $val:expr),* $(,)?
    }) => {
        $(#[$m])*
        pub type $name = $ty;
        $($(#[$vm])* pub const $var: $name = $val;)*
    };
}

/// Declares an anonymous C enum: constants of the given type only. The name is
/// for readers of the Rust source; C sees `enum { ... };`.
macro_rules! c_anon_enum {
    ($(#[$m:meta])* pub enum $name:ident : $ty:ty {
        $($(#[$vm:meta])* $var:ident = $val:expr),* $(,)?
    }) => {
        $($(#[$vm])* pub const $var: $ty = $val;)*
    };
}

pub use core::ffi::{c_char, c_double, c_float, c_int, c_long, c_uint, c_ulong, c_void};
pub use libc::{iovec, pollfd, pthread_cond_t, pthread_mutex_t, size_t, sockaddr, ssize_t};

pub mod atomic;
pub mod cm;
pub mod collective;
pub mod domain;
pub mod endpoint;
pub mod eq;
pub mod errno;
pub mod ext;
pub mod ext_efa;
pub mod ext_psm2;
pub mod fabric;
pub mod layouts;
pub mod log;
pub mod peer;
pub mod profile;
pub mod prov;
pub mod rma;
pub mod tagged;
pub mod trigger;

pub use atomic::*;
pub use cm::*;
pub use collective::*;
pub use domain::*;
pub use endpoint::*;
pub use eq::*;
pub use errno::*;
pub use ext::*;
pub use ext_efa::*;
pub use ext_psm2::*;
pub use fabric::*;
pub use log::*;
pub use peer::*;
pub use profile::*;
pub use prov::*;
pub use rma::*;
pub use tagged::*;
pub use trigger::*;

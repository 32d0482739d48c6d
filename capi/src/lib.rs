//! oxifabric's C boundary: every function `libfabric.so.1` exports, and the
//! vtables of every object it hands out.
//!
//! This crate is the only place that turns raw C input into Rust values.
//! Each exported function and vtable thunk checks its pointers (and, for
//! objects, the fid's class and our magic), converts arguments to safe
//! types, calls the engine or the provider, maps `Err` to `-FI_E*` and never
//! lets a panic cross `extern "C"` ([`boundary::guard`]). The variadic
//! `fi_log` and `fi_param_define`, and the compat symbol versions, are thin C
//! in `c/shim.c`, because stable Rust cannot define variadic functions or
//! bind `.symver` directives to a definition.
#![allow(clippy::missing_safety_doc)]

pub mod av;
pub mod boundary;
pub mod cntr;
pub mod cq;
pub mod domain;
pub mod entry;
pub mod ep;
pub mod eq;
pub mod err_text;
pub mod fabric;
pub mod handles;
pub mod nosys;
pub mod nosys_ep;
pub mod pep;
pub mod poll;
pub mod providers;
pub mod wait;

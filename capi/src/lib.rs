//! oxifabric's C boundary: every function `libfabric.so.1` exports, and the
//! vtables of every object it hands out.
//!
//! Together with the few engine modules that read `fi_info` lists and
//! sockaddrs (`oxifabric::info`, `tostr`, `addr`, `object`, each stating
//! its own contract), this crate is where raw C input becomes Rust values.
//! Each exported function and vtable thunk checks its pointers (and, for
//! objects, the fid's class and our magic), converts arguments to safe
//! types, calls the engine or the provider, maps `Err` to `-FI_E*` and never
//! lets a panic cross `extern "C"` ([`boundary::catch`]). The variadic
//! `fi_log` and `fi_param_define`, and the compat symbol versions, are thin C
//! in `c/shim.c`, because stable Rust cannot define variadic functions or
//! bind `.symver` directives to a definition.
//!
//! # The pointer contract
//!
//! libfabric's C API cannot say in its types what it expects of pointers,
//! so it is said once here. Every `# Safety` section and `SAFETY` comment in
//! this crate refers to these rules by number. The caller (the application,
//! through the exported symbols or an object's vtable) promises:
//!
//! 1. **Objects.** A `struct fid *` argument (or `fid_ep *`, `fid_cq *`,
//!    ...) is NULL or points to a `struct fid`, one of the class the call
//!    expects is an object this library created, and no object is used
//!    after `fi_close` returned 0 for it. The boundary checks NULL and the
//!    class, and then our magic number as well before it trusts the
//!    pointer ([`oxifabric::object::Handle::from_fid`]), so NULL, a
//!    wrong-class fid and most foreign objects of the right class get
//!    `-FI_EINVAL` and a warn line instead of being used.
//! 2. **Inputs.** A pointer to input (an attribute struct, `fi_info`,
//!    `iovec` or address array, an `fi_msg`, a count of entries) is NULL or
//!    points to that many initialised values of the documented type, valid
//!    for reads for the whole call; a non-NULL `char *` is NUL-terminated.
//!    The boundary reads them without assuming alignment where the man
//!    pages allow unaligned data (addresses, CQ/EQ entries).
//! 3. **Outputs.** A pointer the call writes through (the result handle,
//!    `addrlen`, a CQ/EQ entry buffer of `count` entries or `len` bytes, a
//!    string buffer of `len` bytes) is NULL or valid for writes of that
//!    size, and nobody else reads or writes it during the call.
//! 4. **Data buffers.** Message buffers passed to a data transfer call stay
//!    valid, and untouched by the application, until the operation's
//!    completion is reported (the provider keeps the pointers meanwhile).
//! 5. **Lists.** An `fi_info` list handed back to `fi_freeinfo` came from
//!    this library (`fi_getinfo`, `fi_dupinfo`, `fi_allocinfo`) and is freed
//!    once.
//!
//! Where a rule is broken in a way the boundary can see (NULL where a value
//! is required, a length that does not fit, a fid that is not ours) it
//! answers with the documented `-FI_E*` code and a warn line. The rest
//! cannot be checked from here; breaking it is undefined behaviour, as it
//! is with upstream libfabric.
//!
//! The vtable thunks are safe `extern "C" fn`s, private to their module or
//! to this crate: nothing but the C side reaches them (through the static
//! vtables), and their `unsafe` blocks rely on the rules above. The
//! exported `fi_*` symbols are `unsafe extern "C" fn`s whose `# Safety`
//! sections name the rules they rely on. The lints that hold this line
//! (`unsafe_op_in_unsafe_fn`, `clippy::undocumented_unsafe_blocks`,
//! `clippy::missing_safety_doc`) are set for every crate in the workspace's
//! `Cargo.toml` and denied by `make lint`.
//!
//! Every thunk body runs inside [`boundary::catch`] (usually through
//! `with_handle!`, which also recovers the object), so a panic becomes the
//! return type's fallback and a warn line; unsupported operations are the
//! logging stubs of [`nosys`].
pub mod av;
pub mod boundary;
pub mod cntr;
pub mod coll;
pub mod cq;
pub mod domain;
pub mod entry;
pub mod ep;
pub mod eq;
pub mod err_text;
pub mod fabric;
pub mod handles;
pub mod mr;
pub mod nosys;
pub mod nosys_ep;
pub mod pep;
pub mod poll;
pub mod providers;
pub mod wait;

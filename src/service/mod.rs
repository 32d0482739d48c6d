//! Engine services every provider reuses instead of writing its own:
//! completion queues, event queues, counters, address vectors, wake-up
//! signals, the progress hook, address formats, the memory-registration
//! table (`mr`), one-sided operations (`rma`: checks at the initiator,
//! atomics and remote completions at the target), triggered operations
//! and deferred work (`trigger`), collectives over tagged messages
//! (`coll`), and the endpoint core (`ep_core`:
//! bindings and completion routing; `rxq`: receive matching;
//! `reassembly`: messages that arrive in pieces).

pub mod addr_format;
pub mod atomic;
pub mod av;
pub mod cntr;
pub mod coll;
pub mod conn_retry;
pub mod connreq;
pub mod cq;
pub mod ep_core;
pub mod epoll;
pub mod eq;
pub mod getwait;
pub mod hmac;
pub mod keyhash;
pub mod mr;
pub mod op_copy;
pub mod progress;
pub mod quicklock;
pub mod random;
pub mod reassembly;
pub mod rma;
pub mod rxq;
pub mod shm_av;
pub mod signal;
pub mod trigger;
pub mod waitset;

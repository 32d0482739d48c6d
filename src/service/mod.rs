//! Engine services every provider reuses instead of writing its own:
//! completion queues, event queues, counters, address vectors, wake-up
//! signals and the progress hook.

pub mod av;
pub mod cntr;
pub mod cq;
pub mod eq;
pub mod progress;
pub mod signal;
pub mod waitset;

//! The providers this library ships, in priority order.

use oxifabric::provider::Provider;

/// Every shipped provider; the first one that matches is preferred.
pub static PROVIDERS: &[&dyn Provider] = &[&oxifabric_sockets::PROVIDER];

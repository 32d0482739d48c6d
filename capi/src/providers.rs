//! The providers this library ships, in priority order.

use oxifabric::provider::Provider;

/// Every shipped provider; the first one that matches is preferred.
/// `oxi_loopback` is test-only and lists entries only when asked for by name
/// (see its crate documentation).
pub static PROVIDERS: &[&dyn Provider] =
    &[&oxifabric_sockets::PROVIDER, &oxifabric_loopback::PROVIDER];

/// Defines every shipped provider's parameters, once.
pub fn define_params() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for p in PROVIDERS {
            for (name, ty, help) in p.params() {
                let _ = oxifabric::param::define(p.name(), name, *ty, help);
            }
        }
    });
}

//! The providers this library ships, in priority order.
//!
//! Our TCP/UDP engine (`sockets`) also answers to the names of upstream's
//! TCP and UDP providers, so `FI_PROVIDER=tcp`, `fi_info -p "tcp;ofi_rxm"`,
//! `hints->fabric_attr->prov_name = "udp"` or Open MPI's
//! `mtl_ofi_provider_include tcp` keep working unchanged. Each name offers
//! the endpoint types upstream's provider of that name offers: `tcp` is MSG
//! (and, from API 2.0, RDM, as libfabric 2.x's tcp is), `tcp;ofi_rxm` and
//! `udp;ofi_rxd` are RDM, `udp` is DGRAM.

use oxifabric::abi::{fi_ep_type, FI_EP_DGRAM, FI_EP_MSG, FI_EP_RDM};
use oxifabric::provider::{Alias, Provider};

/// API 2.0, from which upstream's `tcp` has native RDM endpoints.
const API_2_0: u32 = 2 << 16;

static TCP: Alias = Alias {
    name: "tcp",
    base: &oxifabric_sockets::PROVIDER,
    offers: |t: fi_ep_type, api| t == FI_EP_MSG || (t == FI_EP_RDM && api >= API_2_0),
    iface: Some("tcp"),
};
static TCP_RXM: Alias = Alias {
    name: "tcp;ofi_rxm",
    base: &oxifabric_sockets::PROVIDER,
    offers: |t: fi_ep_type, _| t == FI_EP_RDM,
    iface: Some("tcp"),
};
static UDP: Alias = Alias {
    name: "udp",
    base: &oxifabric_sockets::PROVIDER,
    offers: |t: fi_ep_type, _| t == FI_EP_DGRAM,
    iface: Some("udp"),
};
static UDP_RXD: Alias = Alias {
    name: "udp;ofi_rxd",
    base: &oxifabric_sockets::PROVIDER,
    offers: |t: fi_ep_type, _| t == FI_EP_RDM,
    iface: Some("udp"),
};

/// Every shipped provider; the first one that matches is preferred
/// (`shm` reaches only peers on the same host, so it comes after the
/// network providers, as a choice the application makes by name).
/// `oxi_loopback` is test-only and lists entries only when asked for by name
/// (see its crate documentation).
pub static PROVIDERS: &[&dyn Provider] = &[
    &oxifabric_sockets::PROVIDER,
    &TCP,
    &TCP_RXM,
    &UDP,
    &UDP_RXD,
    &oxifabric_shm::provider::PROVIDER,
    &oxifabric_verbs::PROVIDER,
    &oxifabric_verbs::RXM_PROVIDER,
    &oxifabric_loopback::PROVIDER,
];

/// Defines every shipped provider's parameters, once.
pub fn define_params() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for p in PROVIDERS {
            for (name, ty, help) in p.params() {
                let _ = oxifabric::param::define(p.params_prov(), name, *ty, help);
            }
        }
    });
}

//! The provider interface and the build-time registry.
//!
//! A provider is a crate that implements [`Provider`]; the library lists the
//! shipped ones in priority order (first is preferred) and passes that list
//! to the core. There is no run-time loading of provider DSOs.

use crate::error::Result;
use crate::info::{FabricAttr, Info};
use crate::ops::FabricOps;
use std::sync::Arc;

/// What `fi_getinfo` asked for, after the core validated it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// API version the application was written for (`FI_VERSION(maj, min)`).
    pub version: u32,
    /// Node name or address; None when not given.
    pub node: Option<&'a str>,
    /// Service name or port; None when not given.
    pub service: Option<&'a str>,
    /// `FI_SOURCE`, `FI_NUMERICHOST`, ...
    pub flags: u64,
    /// The application's hints, None for "anything".
    pub hints: Option<&'a Info>,
}

/// One provider.
pub trait Provider: Sync {
    /// The name applications select it by (`sockets`).
    fn name(&self) -> &'static str;
    /// The provider's own version (`FI_VERSION`), shown by `fi_info`.
    fn version(&self) -> u32;
    /// The newest API version it implements.
    fn fi_version(&self) -> u32 {
        crate::FI_VERSION_CURRENT
    }
    /// Candidate entries for this request. The provider resolves node and
    /// service and may tailor entries to the hints (e.g. echo a progress
    /// model it supports); the core then checks every hint and fills in
    /// what it echoes back, so a provider need not filter.
    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<Info>>;
    /// Opens a fabric for one of its entries.
    fn fabric(&self, attr: &FabricAttr) -> Result<Arc<dyn FabricOps>>;
    /// Releases global state when the library unloads.
    fn cleanup(&self) {}
    /// The provider's own parameters (`FI_<PROV>_<NAME>` variables) as
    /// (name, type, help), defined before the first `fi_getinfo` or
    /// `fi_getparams` so `fi_info -e` lists them.
    fn params(&self) -> &'static [(&'static str, crate::abi::fi_param_type, &'static str)] {
        &[]
    }
    /// The provider name its parameters are defined under (the
    /// `<PROV>` of `FI_<PROV>_<NAME>`): its own name, unless it stands for
    /// an upstream utility layer whose variables users already set
    /// (`ofi_rxm` for `verbs;ofi_rxm`).
    fn params_prov(&self) -> &'static str {
        self.name()
    }
}

/// Finds a provider by name (case-insensitive).
pub fn find<'a>(providers: &[&'a dyn Provider], name: &str) -> Option<&'a dyn Provider> {
    providers
        .iter()
        .copied()
        .find(|p| p.name().eq_ignore_ascii_case(name))
}

/// Whether `hints->fabric_attr->prov_name` selects the provider `name`:
/// its whole name, or one of the parts of a layered name (`tcp` and
/// `ofi_rxm` both select `tcp;ofi_rxm`), case-insensitive, as upstream.
pub fn hint_selects(hint: &str, name: &str) -> bool {
    hint.eq_ignore_ascii_case(name) || name.split(';').any(|part| part.eq_ignore_ascii_case(hint))
}

/// The name `fi_info -l` (`FI_PROV_ATTR_ONLY`) lists a provider under: a
/// layered provider is listed by its utility part (`ofi_rxm`), as upstream
/// lists its utility providers.
pub fn listed_name(name: &str) -> &str {
    name.rsplit(';').next().unwrap_or(name)
}

/// Another name for one of our engines, shaped like upstream's provider of
/// that name so that configurations which select it keep working (`tcp`,
/// `tcp;ofi_rxm`, `udp`, `udp;ofi_rxd`): it offers the base provider's
/// entries of the endpoint types upstream's provider offers at the
/// requested API version, under its own name.
pub struct Alias {
    /// The name users type.
    pub name: &'static str,
    /// The engine that serves it.
    pub base: &'static dyn Provider,
    /// Whether it offers entries of this endpoint type at this API version.
    pub offers: fn(ep_type: crate::abi::fi_ep_type, api_version: u32) -> bool,
    /// The upstream provider whose `FI_<PROV>_IFACE` picks the interfaces
    /// this name lists (`tcp` for `tcp` and `tcp;ofi_rxm`, as upstream's
    /// tcp reads `FI_TCP_IFACE`), if any.
    pub iface: Option<&'static str>,
}

/// [`Alias::iface`]'s parameter.
const IFACE_PARAM: &[(&str, crate::abi::fi_param_type, &str)] = &[(
    "iface",
    crate::abi::FI_PARAM_STRING,
    "Only list and use network interfaces whose name starts with this (e.g. lo, eth0)",
)];

impl Provider for Alias {
    fn name(&self) -> &'static str {
        self.name
    }
    fn version(&self) -> u32 {
        self.base.version()
    }
    fn fi_version(&self) -> u32 {
        self.base.fi_version()
    }
    fn getinfo(&self, req: &Request<'_>) -> Result<Vec<Info>> {
        let mut entries = self.base.getinfo(req)?;
        entries.retain(|i| (self.offers)(i.ep.ep_type, req.version));
        // The base's entries are one per interface, named by its domain.
        if let Some(prov) = self.iface {
            if let Ok(crate::param::Value::Str(want)) = crate::param::get(prov, "iface") {
                if !want.is_empty() {
                    entries.retain(|i| {
                        i.domain
                            .name
                            .as_deref()
                            .is_some_and(|d| d.starts_with(&*want))
                    });
                }
            }
        }
        Ok(entries)
    }
    fn fabric(&self, attr: &FabricAttr) -> Result<Arc<dyn FabricOps>> {
        self.base.fabric(attr)
    }
    fn params(&self) -> &'static [(&'static str, crate::abi::fi_param_type, &'static str)] {
        if self.iface.is_some() {
            IFACE_PARAM
        } else {
            &[]
        }
    }
    fn params_prov(&self) -> &'static str {
        self.iface.unwrap_or(self.name)
    }
}

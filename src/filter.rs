//! Name filters as libfabric's environment variables spell them:
//! `FI_PROVIDER=tcp,sockets` keeps those names, `FI_PROVIDER=^tcp,sockets`
//! keeps everything else. Used by `FI_PROVIDER`, `FI_LOG_PROV` and
//! `FI_LOG_SUBSYS`.

/// A parsed include or exclude list; matching is case-insensitive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    names: Vec<String>,
    negated: bool,
}

impl Filter {
    /// Parses a comma-separated list, with an optional leading `^`.
    /// An empty string keeps everything.
    pub fn parse(spec: &str) -> Filter {
        let spec = spec.trim();
        let (negated, rest) = match spec.strip_prefix('^') {
            Some(r) => (true, r),
            None => (false, spec),
        };
        let names = rest
            .split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        Filter { names, negated }
    }

    /// Reads the filter from an environment variable; unset keeps everything.
    pub fn from_env(var: &str) -> Filter {
        std::env::var(var)
            .map(|v| Filter::parse(&v))
            .unwrap_or_default()
    }

    /// Whether the filter lets `name` through.
    pub fn allows(&self, name: &str) -> bool {
        if self.names.is_empty() {
            return true;
        }
        let listed = self.names.iter().any(|n| n.eq_ignore_ascii_case(name));
        listed != self.negated
    }
}

impl Filter {
    /// Whether `FI_PROVIDER` lets the provider `name` through, layered names
    /// as upstream treats them: an include list keeps `tcp;ofi_rxm` when it
    /// names it or its core `tcp` (`ofi_rxm` alone keeps nothing); an
    /// exclude list drops it when it names it or any of its parts.
    pub fn allows_provider(&self, name: &str) -> bool {
        if self.names.is_empty() {
            return true;
        }
        let is = |n: &str| self.names.iter().any(|l| l.eq_ignore_ascii_case(n));
        let core = name.split(';').next().unwrap_or(name);
        if self.negated {
            !(is(name) || name.split(';').any(is))
        } else {
            is(name) || is(core)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_exclude_and_empty() {
        let f = Filter::parse("tcp, Sockets");
        assert!(f.allows("sockets") && f.allows("TCP") && !f.allows("verbs"));
        let f = Filter::parse("^tcp,sockets");
        assert!(!f.allows("sockets") && !f.allows("tcp") && f.allows("verbs"));
        assert!(Filter::parse("").allows("anything"));
        assert!(Filter::parse("^").allows("anything"));
    }

    #[test]
    fn layered_provider_names() {
        let f = Filter::parse("tcp");
        assert!(f.allows_provider("tcp") && f.allows_provider("TCP;ofi_rxm"));
        assert!(!f.allows_provider("udp;ofi_rxd") && !f.allows_provider("sockets"));
        let f = Filter::parse("tcp;ofi_rxm");
        assert!(f.allows_provider("tcp;ofi_rxm") && !f.allows_provider("tcp"));
        assert!(!Filter::parse("ofi_rxm").allows_provider("tcp;ofi_rxm"));
        let f = Filter::parse("^ofi_rxm");
        assert!(!f.allows_provider("tcp;ofi_rxm") && f.allows_provider("tcp"));
        let f = Filter::parse("^tcp");
        assert!(!f.allows_provider("tcp;ofi_rxm") && !f.allows_provider("tcp"));
        assert!(f.allows_provider("udp;ofi_rxd") && f.allows_provider("sockets"));
    }
}

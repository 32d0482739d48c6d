//! Configuration parameters: `fi_param_define`/`fi_param_get`/`fi_getparams`.
//!
//! A parameter `name` of provider `prov` is read from the environment variable
//! `FI_<PROV>_<NAME>` (upper case, non-alphanumerics as `_`); the core's own
//! parameters drop the provider part (`FI_LOG_LEVEL`).

use crate::abi::*;
use crate::error::{Error, Result};
use std::sync::{Mutex, OnceLock};

/// One defined parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The provider that defined it (`core` for the core).
    pub prov: String,
    /// The name as defined, e.g. `iface`.
    pub name: String,
    /// The environment variable that sets it, e.g. `FI_SOCKETS_IFACE`.
    pub env: String,
    /// `FI_PARAM_STRING`, `FI_PARAM_INT`, `FI_PARAM_BOOL` or `FI_PARAM_SIZE_T`.
    pub ty: fi_param_type,
    /// What it does, shown by `fi_info -e`.
    pub help: String,
}

/// The provider name the core's own parameters are defined under.
const CORE: &str = "core";

impl Param {
    /// The help text `fi_getparams` gives (and `fi_info -e` prints): a
    /// provider's parameter names its provider first (`sockets: ...`),
    /// as upstream's do; the core's stand alone.
    pub fn help_text(&self) -> String {
        if self.prov == CORE {
            self.help.clone()
        } else {
            format!("{}: {}", self.prov, self.help)
        }
    }
}

/// The name of the environment variable for a provider's parameter.
pub fn env_name(prov: &str, name: &str) -> String {
    let up = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect()
    };
    if prov == CORE {
        format!("FI_{}", up(name))
    } else {
        format!("FI_{}_{}", up(prov), up(name))
    }
}

/// The parameters the core itself honours.
const CORE_PARAMS: &[(&str, fi_param_type, &str)] = &[
    (
        "provider",
        FI_PARAM_STRING,
        "Only use these providers: a comma-separated list of names, or with a leading ^ every provider but these (default: all)",
    ),
    (
        "log_level",
        FI_PARAM_STRING,
        "Log messages up to this level: warn, trace, info or debug (default: no logging)",
    ),
    (
        "log_prov",
        FI_PARAM_STRING,
        "Only log messages of these providers, a comma-separated list, ^ to exclude (default: all)",
    ),
    (
        "log_subsys",
        FI_PARAM_STRING,
        "Only log messages of these subsystems: core, fabric, domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr (default: all)",
    ),
    (
        "log_interval",
        FI_PARAM_INT,
        "Milliseconds between two rate-limited log messages (default: 2000)",
    ),
    (
        "mr_cache_max_size",
        FI_PARAM_SIZE_T,
        "Most bytes of memory a provider's registration cache keeps registered for buffers no operation is using (default: physical memory / online CPUs / 2)",
    ),
    (
        "mr_cache_max_count",
        FI_PARAM_SIZE_T,
        "Most registrations a provider's registration cache keeps for buffers no operation is using; 0 turns the cache off (default: 1024)",
    ),
    (
        "mr_cache_monitor",
        FI_PARAM_STRING,
        "How the registration cache learns that memory was freed or unmapped: userfaultfd, or disabled (no cache) (default: userfaultfd)",
    ),
];

fn registry() -> &'static Mutex<Vec<Param>> {
    static PARAMS: OnceLock<Mutex<Vec<Param>>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        Mutex::new(
            CORE_PARAMS
                .iter()
                .map(|(name, ty, help)| Param {
                    prov: CORE.into(),
                    name: (*name).into(),
                    env: env_name(CORE, name),
                    ty: *ty,
                    help: (*help).into(),
                })
                .collect(),
        )
    })
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Param>> {
    registry().lock().unwrap_or_else(|p| p.into_inner())
}

/// Defines a parameter. Defining the same name twice keeps the first
/// definition and succeeds, as providers may be initialised more than once.
pub fn define(prov: &str, name: &str, ty: fi_param_type, help: &str) -> Result<()> {
    if name.is_empty() || !(FI_PARAM_STRING..=FI_PARAM_SIZE_T).contains(&ty) {
        return Err(Error::Inval);
    }
    let mut params = lock();
    if params.iter().any(|p| p.prov == prov && p.name == name) {
        return Ok(());
    }
    params.push(Param {
        prov: prov.into(),
        name: name.into(),
        env: env_name(prov, name),
        ty,
        help: help.into(),
    });
    Ok(())
}

/// Finds a defined parameter.
pub fn lookup(prov: &str, name: &str) -> Result<Param> {
    lock()
        .iter()
        .find(|p| p.prov == prov && p.name == name)
        .cloned()
        .ok_or(Error::NoEnt)
}

/// Every defined parameter, in definition order.
pub fn all() -> Vec<Param> {
    lock().clone()
}

/// The value a boolean parameter's text stands for, as upstream accepts it.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" | "y" => Some(true),
        "0" | "off" | "false" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// Parses an integer like C's `strtol(s, NULL, 0)`: decimal, `0x` hex or
/// leading-`0` octal, with a sign; trailing garbage is ignored.
pub fn parse_long(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let mut v: i64 = 0;
    for c in digits.chars() {
        match c.to_digit(radix) {
            Some(d) => v = v.saturating_mul(radix as i64).saturating_add(d as i64),
            None => break,
        }
    }
    if neg {
        -v
    } else {
        v
    }
}

/// A parameter's value read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `FI_PARAM_STRING`.
    Str(String),
    /// `FI_PARAM_INT`.
    Int(i32),
    /// `FI_PARAM_BOOL`.
    Bool(bool),
    /// `FI_PARAM_SIZE_T`.
    Size(usize),
}

/// Reads a defined parameter: `NoEnt` when undefined, `NoData` when its
/// variable is unset, `Inval` when a boolean's text is not one.
pub fn get(prov: &str, name: &str) -> Result<Value> {
    let p = lookup(prov, name)?;
    let Ok(text) = std::env::var(&p.env) else {
        crate::core_info!(FI_LOG_CORE, "variable {}=<not set>", name);
        return Err(Error::NoData);
    };
    crate::core_info!(FI_LOG_CORE, "read string var {}={}", name, text);
    match p.ty {
        FI_PARAM_STRING => Ok(Value::Str(text)),
        FI_PARAM_INT => Ok(Value::Int(parse_long(&text) as i32)),
        FI_PARAM_SIZE_T => Ok(Value::Size(parse_long(&text) as usize)),
        FI_PARAM_BOOL => match parse_bool(&text) {
            Some(b) => Ok(Value::Bool(b)),
            None => {
                crate::core_warn!(
                    FI_LOG_CORE,
                    "failed to parse {} as a boolean: {}",
                    p.env,
                    text
                );
                Err(Error::Inval)
            }
        },
        _ => Err(Error::Inval),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_help_names_the_provider_and_the_cores_does_not() {
        let p = |prov: &str| Param {
            prov: prov.into(),
            name: "x".into(),
            env: env_name(prov, "x"),
            ty: FI_PARAM_INT,
            help: "does x".into(),
        };
        assert_eq!(p("sockets").help_text(), "sockets: does x");
        assert_eq!(p("ofi_rxm").help_text(), "ofi_rxm: does x");
        assert_eq!(p("core").help_text(), "does x");
    }

    #[test]
    fn env_names() {
        assert_eq!(env_name("core", "log_level"), "FI_LOG_LEVEL");
        assert_eq!(env_name("sockets", "iface"), "FI_SOCKETS_IFACE");
        assert_eq!(env_name("ofi_rxm", "buffer-size"), "FI_OFI_RXM_BUFFER_SIZE");
    }

    #[test]
    fn define_get_and_errors() {
        define("ptest", "count", FI_PARAM_INT, "a count").unwrap();
        define("ptest", "flag", FI_PARAM_BOOL, "a flag").unwrap();
        assert_eq!(get("ptest", "nosuch"), Err(Error::NoEnt));
        std::env::remove_var("FI_PTEST_COUNT");
        assert_eq!(get("ptest", "count"), Err(Error::NoData));
        std::env::set_var("FI_PTEST_COUNT", "0x10");
        assert_eq!(get("ptest", "count"), Ok(Value::Int(16)));
        std::env::set_var("FI_PTEST_FLAG", "maybe");
        assert_eq!(get("ptest", "flag"), Err(Error::Inval));
        std::env::set_var("FI_PTEST_FLAG", "Yes");
        assert_eq!(get("ptest", "flag"), Ok(Value::Bool(true)));
        assert_eq!(define("ptest", "x", 77, "bad type"), Err(Error::Inval));
        assert!(all().iter().any(|p| p.env == "FI_LOG_LEVEL"));
    }

    #[test]
    fn strtol_like() {
        assert_eq!(parse_long("42abc"), 42);
        assert_eq!(parse_long(" -010"), -8);
        assert_eq!(parse_long("zzz"), 0);
    }
}

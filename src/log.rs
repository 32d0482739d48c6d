//! Logging: `FI_LOG_LEVEL`, `FI_LOG_PROV`, `FI_LOG_SUBSYS`, `FI_LOG_INTERVAL`,
//! and upstream's line format
//! `libfabric:<pid>:<unix seconds>::<prov>:<subsys>:<function>():<line><<level>> <message>`
//! on standard error. Logging is off unless `FI_LOG_LEVEL` is set.

use crate::abi::*;
use crate::filter::Filter;
use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The environment's logging settings, read once.
#[derive(Debug)]
pub struct LogConfig {
    /// Highest enabled level (`FI_LOG_WARN` … `FI_LOG_DEBUG`), or None: off.
    pub level: Option<fi_log_level>,
    /// Which providers log.
    pub prov: Filter,
    /// Which subsystems log.
    pub subsys: Filter,
    /// Minimum delay between rate-limited messages, in milliseconds.
    pub interval_ms: u64,
}

const LEVEL_NAMES: [&str; 4] = ["warn", "trace", "info", "debug"];
const SUBSYS_NAMES: [&str; 10] = [
    "core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr",
];

/// The name upstream prints for a level, or None when out of range.
pub fn level_name(level: fi_log_level) -> Option<&'static str> {
    LEVEL_NAMES.get(level as usize).copied()
}

/// The name upstream prints for a subsystem, or None when out of range.
pub fn subsys_name(subsys: fi_log_subsys) -> Option<&'static str> {
    SUBSYS_NAMES.get(subsys as usize).copied()
}

impl LogConfig {
    /// Reads the configuration from the environment.
    pub fn from_env() -> LogConfig {
        let level = std::env::var("FI_LOG_LEVEL").ok().and_then(|v| {
            let v = v.trim().to_ascii_lowercase();
            LEVEL_NAMES
                .iter()
                .position(|n| *n == v)
                .map(|p| p as fi_log_level)
        });
        let interval_ms = std::env::var("FI_LOG_INTERVAL")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(2000);
        LogConfig {
            level,
            prov: Filter::from_env("FI_LOG_PROV"),
            subsys: Filter::from_env("FI_LOG_SUBSYS"),
            interval_ms,
        }
    }

    /// Whether a message of this provider, level and subsystem is printed.
    pub fn enabled(&self, prov: &str, level: fi_log_level, subsys: fi_log_subsys) -> bool {
        let Some(max) = self.level else { return false };
        let Some(sub) = subsys_name(subsys) else {
            return false;
        };
        level <= max
            && level_name(level).is_some()
            && self.prov.allows(prov)
            && self.subsys.allows(sub)
    }
}

/// The process-wide configuration.
pub fn config() -> &'static LogConfig {
    static CONFIG: OnceLock<LogConfig> = OnceLock::new();
    CONFIG.get_or_init(LogConfig::from_env)
}

/// Whether a message would be printed. Inlined up to the level check:
/// the data path's debug lines cost a load and a compare when logging is
/// off or less verbose.
#[inline]
pub fn enabled(prov: &str, level: fi_log_level, subsys: fi_log_subsys) -> bool {
    let c = config();
    match c.level {
        Some(max) if level <= max => c.enabled(prov, level, subsys),
        _ => false,
    }
}

/// Rate limiting for sparse messages: true (and `showtime` moved forward by
/// `FI_LOG_INTERVAL`) when the message may be printed now.
pub fn ready(prov: &str, level: fi_log_level, subsys: fi_log_subsys, showtime: &mut u64) -> bool {
    if !enabled(prov, level, subsys) {
        return false;
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    if now >= *showtime {
        *showtime = now + config().interval_ms;
        true
    } else {
        false
    }
}

/// Formats one log line exactly as upstream does (without checking filters).
pub fn format_line(
    prov: &str,
    level: fi_log_level,
    subsys: fi_log_subsys,
    func: &str,
    line: i64,
    msg: &str,
) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut s = format!(
        "libfabric:{}:{}::{}:{}:{}():{}<{}> {}",
        std::process::id(),
        secs,
        prov,
        subsys_name(subsys).unwrap_or("unknown"),
        func,
        line,
        level_name(level).unwrap_or("unknown"),
        msg
    );
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Prints one message if the configuration lets it through.
pub fn emit(
    prov: &str,
    level: fi_log_level,
    subsys: fi_log_subsys,
    func: &str,
    line: i64,
    msg: &str,
) {
    if enabled(prov, level, subsys) {
        let text = format_line(prov, level, subsys, func, line, msg);
        // One write call per line so that lines from threads do not interleave.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// The name of the enclosing function, for the `<function>()` part of a log
/// line.
#[macro_export]
macro_rules! function_name {
    () => {{
        fn f() {}
        let name = ::core::any::type_name_of_val(&f);
        let name = name.strip_suffix("::f").unwrap_or(name);
        let name = name.trim_end_matches("::{{closure}}");
        name.rsplit("::").next().unwrap_or(name)
    }};
}

/// Logs a formatted message for a provider: `prov_log!("sockets", FI_LOG_WARN,
/// FI_LOG_EP_DATA, "bad frame from {}", peer)`. Formats nothing when disabled.
#[macro_export]
macro_rules! prov_log {
    ($prov:expr, $level:expr, $subsys:expr, $($arg:tt)*) => {{
        if $crate::log::enabled($prov, $level, $subsys) {
            $crate::log::emit($prov, $level, $subsys, $crate::function_name!(), line!() as i64,
                &format!($($arg)*));
        }
    }};
}

/// Warn-level message of the core.
#[macro_export]
macro_rules! core_warn {
    ($subsys:expr, $($arg:tt)*) => {
        $crate::prov_log!("core", $crate::abi::FI_LOG_WARN, $subsys, $($arg)*)
    };
}

/// Trace-level message of the core (calls worth following, such as an
/// unsupported operation being asked for).
#[macro_export]
macro_rules! core_trace {
    ($subsys:expr, $($arg:tt)*) => {
        $crate::prov_log!("core", $crate::abi::FI_LOG_TRACE, $subsys, $($arg)*)
    };
}

/// Info-level message of the core.
#[macro_export]
macro_rules! core_info {
    ($subsys:expr, $($arg:tt)*) => {
        $crate::prov_log!("core", $crate::abi::FI_LOG_INFO, $subsys, $($arg)*)
    };
}

/// Debug-level message of the core.
#[macro_export]
macro_rules! core_debug {
    ($subsys:expr, $($arg:tt)*) => {
        $crate::prov_log!("core", $crate::abi::FI_LOG_DEBUG, $subsys, $($arg)*)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format_matches_upstream_shape() {
        let l = format_line(
            "core",
            FI_LOG_WARN,
            FI_LOG_CORE,
            "fi_getinfo",
            12,
            "no match",
        );
        let parts: Vec<&str> = l.splitn(4, ':').collect();
        assert_eq!(parts[0], "libfabric");
        assert_eq!(parts[1], std::process::id().to_string());
        assert!(
            l.ends_with("::core:core:fi_getinfo():12<warn> no match\n"),
            "{l}"
        );
    }

    #[test]
    fn filters_apply() {
        let c = LogConfig {
            level: Some(FI_LOG_INFO),
            prov: Filter::parse("^verbs"),
            subsys: Filter::parse("core,cq"),
            interval_ms: 10,
        };
        assert!(c.enabled("sockets", FI_LOG_WARN, FI_LOG_CORE));
        assert!(c.enabled("sockets", FI_LOG_INFO, FI_LOG_CQ));
        assert!(!c.enabled("sockets", FI_LOG_DEBUG, FI_LOG_CQ));
        assert!(!c.enabled("verbs", FI_LOG_WARN, FI_LOG_CORE));
        assert!(!c.enabled("sockets", FI_LOG_WARN, FI_LOG_AV));
        assert!(!c.enabled("sockets", 99, FI_LOG_CORE));
        assert!(!c.enabled("sockets", FI_LOG_WARN, 99));
    }

    #[test]
    fn function_name_is_the_enclosing_fn() {
        fn some_caller() -> &'static str {
            crate::function_name!()
        }
        assert_eq!(some_caller(), "some_caller");
    }
}

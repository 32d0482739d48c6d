//! `verbs-probe` on a host without verbs: it must say "no devices" and
//! exit 0, both when libibverbs or librdmacm is missing (pointed at a name
//! that does not exist) and when they load but find nothing. And
//! `verbs-rc-pingpong` there fails at once with the reason, never hangs.

use std::process::Command;

fn probe(env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_verbs-probe"))
        .envs(env.iter().copied())
        .output()
        .expect("run verbs-probe");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The probe with library `env` pointed at `missing` exits 0 saying "no
/// devices" and naming that library.
fn missing_library_is_no_devices(env: &str, missing: &str) {
    let (ok, out) = probe(&[(env, missing)]);
    assert!(ok, "exit status: {out}");
    assert!(
        out.starts_with(&format!("no devices (verbs unavailable: {missing}")),
        "{out}"
    );
}

#[test]
fn missing_libibverbs_is_no_devices() {
    missing_library_is_no_devices(
        oxifabric_verbs::ibv::LIBIBVERBS_ENV,
        "libibverbs-oxifabric-missing.so.1",
    );
}

#[test]
fn library_without_the_symbols_is_no_devices() {
    // libc loads fine but has no ibv_* symbol: a broken or foreign library.
    let (ok, out) = probe(&[(oxifabric_verbs::ibv::LIBIBVERBS_ENV, "libc.so.6")]);
    assert!(ok, "exit status: {out}");
    assert!(out.contains("no symbol ibv_get_device_list"), "{out}");
}

#[test]
fn host_without_rdma_devices_is_no_devices() {
    // This test runs on the build host, which has no RDMA devices (the
    // guest test covers a real one). With or without libibverbs installed,
    // the answer is "no devices".
    if std::path::Path::new("/sys/class/infiniband").exists()
        && std::fs::read_dir("/sys/class/infiniband").map_or(0, |d| d.count()) > 0
    {
        eprintln!("skipped: this host has RDMA devices");
        return;
    }
    let (ok, out) = probe(&[]);
    assert!(ok, "exit status: {out}");
    assert!(out.starts_with("no devices"), "{out}");
}

#[test]
fn missing_librdmacm_is_no_devices() {
    if probe(&[]).1.contains(oxifabric_verbs::ibv::LIBIBVERBS) {
        // Without libibverbs the answer names it, not librdmacm (tested
        // above); this one needs libibverbs installed.
        eprintln!("skipped: libibverbs is not installed here");
        return;
    }
    missing_library_is_no_devices(
        oxifabric_verbs::ibv::LIBRDMACM_ENV,
        "librdmacm-oxifabric-missing.so.1",
    );
}

#[test]
fn pingpong_without_verbs_fails_with_the_reason() {
    let out = Command::new(env!("CARGO_BIN_EXE_verbs-rc-pingpong"))
        .args(["-T", "5", "192.0.2.1"])
        .env(
            oxifabric_verbs::ibv::LIBIBVERBS_ENV,
            "libibverbs-oxifabric-missing.so.1",
        )
        .output()
        .expect("run verbs-rc-pingpong");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.starts_with("client: FAIL: verbs unavailable"),
        "{text}"
    );
}

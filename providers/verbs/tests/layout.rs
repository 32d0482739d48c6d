//! The hand-written mirrors in `src/ibv.rs` have the layout of the
//! installed `<infiniband/verbs.h>` and `<rdma/rdma_cma.h>`: a C program,
//! generated from the same list of names, prints C's `sizeof` and
//! `offsetof` for each, and the value of each enum constant used, and
//! every number must agree.
//!
//! Without the headers (no libibverbs-dev, librdmacm-dev) the test says so
//! and passes,
//! unless `OXI_REQUIRE_VERBS_H` is set, as `make check-verbs` does after
//! installing it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

const HEADER: &str = "/usr/include/infiniband/verbs.h";
const CM_HEADER: &str = "/usr/include/rdma/rdma_cma.h";

fn c_type(name: &str) -> String {
    if name == "ibv_gid" {
        "union ibv_gid".into()
    } else {
        format!("struct {name}")
    }
}

#[test]
fn mirrors_match_installed_verbs_h() {
    if let Some(h) = [HEADER, CM_HEADER]
        .into_iter()
        .find(|h| !Path::new(h).exists())
    {
        assert!(
            std::env::var_os("OXI_REQUIRE_VERBS_H").is_none(),
            "{h} is missing (install libibverbs-dev and librdmacm-dev)"
        );
        eprintln!("skipped: {h} is missing (libibverbs-dev or librdmacm-dev not installed)");
        return;
    }
    let rust = oxifabric_verbs::ibv::layout();
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\nint main(void) {\n",
    );
    for (name, _) in &rust {
        let expr = match name.split_once('.') {
            Some((ty, field)) => format!("offsetof({}, {field})", c_type(ty)),
            None => format!("sizeof({})", c_type(name)),
        };
        writeln!(c, "\tprintf(\"%s %zu\\n\", \"{name}\", (size_t){expr});").unwrap();
    }
    let consts = oxifabric_verbs::ibv::constants();
    for (name, _) in &consts {
        writeln!(c, "\tprintf(\"%s %ld\\n\", \"{name}\", (long){name});").unwrap();
    }
    c.push_str("\treturn 0;\n}\n");

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verbs-layout");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&src, c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} failed on the generated layout program (a mirrored name C does not have?):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the layout program");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let c_side: Vec<(&str, i64)> = text
        .lines()
        .map(|l| {
            let (n, v) = l.split_once(' ').unwrap();
            (n, v.parse().unwrap())
        })
        .collect();
    let ours: Vec<(&str, i64)> = rust
        .iter()
        .map(|&(n, v)| (n, i64::try_from(v).unwrap()))
        .chain(consts.iter().copied())
        .collect();
    assert_eq!(c_side.len(), ours.len());
    let wrong: Vec<String> = ours
        .iter()
        .zip(&c_side)
        .filter(|((_, r), (_, c))| r != c)
        .map(|((n, r), (_, c))| format!("{n}: Rust {r}, C {c}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "layout differs from {HEADER} / {CM_HEADER}:\n{}",
        wrong.join("\n")
    );
    eprintln!(
        "{} sizes, offsets and constants agree with {HEADER} and {CM_HEADER}",
        ours.len()
    );
}

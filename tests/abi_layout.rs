//! The Rust mirror in `src/abi` against upstream's layouts and constants.
//! The assertions are generated from Debian's headers by
//! `tests/abi_oracle/oracle.py`, which runs this test with
//! `--features abi-oracle` after writing them.
#![cfg(feature = "abi-oracle")]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/build/abi-oracle/layout.rs"
));

//! Fuzzes the sockets provider's frame decoder: any bytes must either be
//! refused or decode into a header that re-encodes to the same bytes and
//! respects the length limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxifabric_sockets::wire::{Header, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let limit = 1 << 20;
    if let Ok(h) = Header::decode(data, limit) {
        assert!(h.len <= limit);
        assert!(data.len() >= HEADER_LEN);
        assert_eq!(&h.encode()[..], &data[..HEADER_LEN]);
    }
});

//! Fuzzes the sockets provider's frame decoder: any bytes must either be
//! refused or decode into a header that re-encodes to the same bytes and
//! respects the length limit; RMA frames (`Write`, `ReadReq`, `RmaResp`)
//! must also hold the invariants the receiver relies on before it touches
//! memory (a prefix that fits, a read length within the limit, a refusal
//! without payload and with a known cause), and the target prefix after
//! the header must decode back to its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use oxifabric::service::mr::Denied;
use oxifabric_sockets::wire::{parse_rma_prefix, rma_prefix, Header, Op, HEADER_LEN, RMA_PREFIX};

fuzz_target!(|data: &[u8]| {
    let limit = 1 << 20;
    if let Ok(h) = Header::decode(data, limit) {
        assert!(h.len <= limit);
        assert!(data.len() >= HEADER_LEN);
        assert_eq!(&h.encode()[..], &data[..HEADER_LEN]);
        match h.op {
            Op::Write => assert!(h.len >= RMA_PREFIX as u64),
            Op::ReadReq => assert!(h.len == RMA_PREFIX as u64 && h.tag <= limit),
            Op::RmaResp if h.data != 0 => {
                assert!(h.len == 0 && Denied::from_u64(h.tag).is_some())
            }
            _ => {}
        }
        if matches!(h.op, Op::Write | Op::ReadReq) && data.len() >= HEADER_LEN + RMA_PREFIX {
            let mut p = [0u8; RMA_PREFIX];
            p.copy_from_slice(&data[HEADER_LEN..HEADER_LEN + RMA_PREFIX]);
            let (addr, key) = parse_rma_prefix(&p);
            assert_eq!(rma_prefix(addr, key), p);
        }
    }
});

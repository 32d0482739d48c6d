//! Which module becomes which header, with its guard and includes.

/// One generated header.
pub struct HeaderSpec {
    /// `src/abi/<module>.rs` and `src/abi/c/<module>.h`.
    pub module: &'static str,
    /// Path below `include/rdma/`.
    pub header: &'static str,
    pub guard: &'static str,
    pub includes: &'static [&'static str],
}

/// What `fi_ext.h` and `providers/fi_peer.h` include (the peer API was
/// part of `fi_ext.h` before 2.0).
const EXT_INCLUDES: &[&str] = &[
    "<stdbool.h>",
    "<rdma/fabric.h>",
    "<rdma/fi_eq.h>",
    "<rdma/fi_endpoint.h>",
    "<rdma/providers/fi_prov.h>",
    "<rdma/providers/fi_log.h>",
];

/// Every header, in an order where each one's includes come first.
pub const HEADERS: &[HeaderSpec] = &[
    HeaderSpec {
        module: "errno",
        header: "fi_errno.h",
        guard: "FI_ERRNO_H",
        includes: &["<errno.h>"],
    },
    HeaderSpec {
        module: "fabric",
        header: "fabric.h",
        guard: "FABRIC_H",
        includes: &[
            "<stdint.h>",
            "<stddef.h>",
            "<sys/types.h>",
            "<sys/uio.h>",
            "<rdma/fi_errno.h>",
        ],
    },
    HeaderSpec {
        module: "eq",
        header: "fi_eq.h",
        guard: "FI_EQ_H",
        includes: &[
            "<poll.h>",
            "<pthread.h>",
            "<rdma/fabric.h>",
            "<rdma/fi_errno.h>",
        ],
    },
    HeaderSpec {
        module: "domain",
        header: "fi_domain.h",
        guard: "FI_DOMAIN_H",
        includes: &["<string.h>", "<rdma/fabric.h>", "<rdma/fi_eq.h>"],
    },
    HeaderSpec {
        module: "endpoint",
        header: "fi_endpoint.h",
        guard: "FI_ENDPOINT_H",
        includes: &["<rdma/fabric.h>", "<rdma/fi_domain.h>"],
    },
    HeaderSpec {
        module: "cm",
        header: "fi_cm.h",
        guard: "FI_CM_H",
        includes: &["<rdma/fi_endpoint.h>"],
    },
    HeaderSpec {
        module: "tagged",
        header: "fi_tagged.h",
        guard: "FI_TAGGED_H",
        includes: &["<rdma/fabric.h>", "<rdma/fi_endpoint.h>"],
    },
    HeaderSpec {
        module: "rma",
        header: "fi_rma.h",
        guard: "FI_RMA_H",
        includes: &["<rdma/fabric.h>", "<rdma/fi_endpoint.h>"],
    },
    HeaderSpec {
        module: "atomic",
        header: "fi_atomic.h",
        guard: "FI_ATOMIC_H",
        includes: &["<rdma/fabric.h>", "<rdma/fi_endpoint.h>", "<rdma/fi_rma.h>"],
    },
    HeaderSpec {
        module: "trigger",
        header: "fi_trigger.h",
        guard: "FI_TRIGGER_H",
        includes: &[
            "<rdma/fabric.h>",
            "<rdma/fi_endpoint.h>",
            "<rdma/fi_rma.h>",
            "<rdma/fi_tagged.h>",
            "<rdma/fi_atomic.h>",
        ],
    },
    HeaderSpec {
        module: "collective",
        header: "fi_collective.h",
        guard: "FI_COLLECTIVE_H",
        includes: &["<rdma/fi_atomic.h>", "<rdma/fi_domain.h>", "<rdma/fi_cm.h>"],
    },
    HeaderSpec {
        module: "prov",
        header: "providers/fi_prov.h",
        guard: "FI_PROV_H",
        includes: &["<rdma/fabric.h>"],
    },
    HeaderSpec {
        module: "log",
        header: "providers/fi_log.h",
        guard: "FI_LOG_H",
        includes: &["<rdma/fabric.h>", "<rdma/providers/fi_prov.h>"],
    },
    HeaderSpec {
        module: "ext",
        header: "fi_ext.h",
        guard: "FI_EXT_H",
        includes: EXT_INCLUDES,
    },
    HeaderSpec {
        module: "peer",
        header: "providers/fi_peer.h",
        guard: "FI_PEER_H",
        includes: EXT_INCLUDES,
    },
    HeaderSpec {
        module: "ext_psm2",
        header: "fi_ext_psm2.h",
        guard: "FI_EXT_PSM2_H",
        includes: &["<rdma/fabric.h>"],
    },
    HeaderSpec {
        module: "ext_efa",
        header: "fi_ext_efa.h",
        guard: "_FI_EXT_EFA_H_",
        includes: &["<stdbool.h>", "<rdma/fi_domain.h>"],
    },
    HeaderSpec {
        module: "profile",
        header: "fi_profile.h",
        guard: "FI_PROFILE_H",
        includes: &[
            "<stdlib.h>",
            "<string.h>",
            "<stdbool.h>",
            "<rdma/fi_domain.h>",
        ],
    },
];

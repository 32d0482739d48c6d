//! Prints the verbs devices this host has, one line per port, for people
//! and for the soft-RoCE guest test (which compares the numbers with
//! `ibv_devinfo -v`):
//!
//! `device rxe0 max_qp_wr=1048576 max_sge=32 max_cqe=32767 ... port 1 ACTIVE ethernet mtu=1024 gid[1]=::ffff:10.77.0.1/roce-v2 ...`
//!
//! With no devices, or no rdma-core at all, it prints `no devices (...)`
//! and exits 0; a device that fails to open or answer is exit status 1.
//!
//! `verbs-probe --gid-for ADDR` prints, per device, the GID the provider's
//! entries for the local address ADDR stand for (`FI_VERBS_GID_IDX` is
//! honoured) and the fabric name it gives:
//! `rxe0 10.77.0.1 gid_idx=1 ::ffff:10.77.0.1/roce-v2 (the address's GID)`.

use std::process::ExitCode;

use oxifabric_verbs::device::{devices, Device};
use oxifabric_verbs::ibv::VerbsError;

fn line(d: &Device) -> String {
    let a = &d.attr;
    let mut s = format!(
        "device {} max_qp={} max_qp_wr={} max_sge={} max_sge_rd={} max_cq={} max_cqe={} \
         max_mr={} max_mr_size={:#x} max_pd={} max_qp_rd_atom={} max_qp_init_rd_atom={} \
         max_srq={} max_srq_wr={} max_srq_sge={} atomic_cap={} phys_port_cnt={}",
        d.name,
        a.max_qp,
        a.max_qp_wr,
        a.max_sge,
        a.max_sge_rd,
        a.max_cq,
        a.max_cqe,
        a.max_mr,
        a.max_mr_size,
        a.max_pd,
        a.max_qp_rd_atom,
        a.max_qp_init_rd_atom,
        a.max_srq,
        a.max_srq_wr,
        a.max_srq_sge,
        a.atomic_cap,
        a.phys_port_cnt
    );
    for p in &d.ports {
        s += &format!(
            " port {} {} {} mtu={} max_msg_sz={:#x} gid_tbl_len={}",
            p.num, p.state, p.link_layer, p.active_mtu, p.max_msg_sz, p.gid_tbl_len
        );
        for g in &p.gids {
            s += &format!(" gid[{}]={}/{}", g.index, g.addr(), g.kind);
        }
    }
    s
}

/// `--gid-for ADDR`: the provider's choice of GID for each device.
fn gid_for(addr: &str) -> ExitCode {
    let Ok(ip) = addr.parse::<std::net::IpAddr>() else {
        eprintln!("verbs-probe: --gid-for wants an IP address, not {addr}");
        return ExitCode::FAILURE;
    };
    for (name, ty, help) in oxifabric_verbs::info::PARAMS {
        let _ = oxifabric::param::define(oxifabric_verbs::info::NAME, name, *ty, help);
    }
    match devices() {
        Ok(list) => {
            for d in &list {
                match oxifabric_verbs::info::chosen_gid(d, ip) {
                    Some((g, why)) => println!(
                        "{} {ip} gid_idx={} {}/{} ({why})",
                        d.name,
                        g.index,
                        g.addr(),
                        g.kind
                    ),
                    None => println!("{} {ip} no active port with GIDs", d.name),
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("no devices ({e})");
            ExitCode::SUCCESS
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, addr] = args.as_slice() {
        if flag == "--gid-for" {
            return gid_for(addr);
        }
    }
    match devices() {
        Ok(list) if list.is_empty() => println!("no devices (libibverbs loaded, none present)"),
        Ok(list) => list.iter().for_each(|d| println!("{}", line(d))),
        Err(e @ VerbsError::Unavailable(_)) => println!("no devices ({e})"),
        Err(e) => {
            eprintln!("verbs-probe: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

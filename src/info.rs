//! `fi_info` in safe Rust, and its conversion to and from the C layout.
//!
//! Providers produce [`Info`] values and the core matches hints against them
//! in Rust; only [`Info::to_c`], [`Info::from_c`], [`free_c`] and [`dup_c`]
//! touch C memory. That memory comes from the C allocator because
//! applications may free or replace fields themselves (e.g. `strdup` a
//! `prov_name` into hints from `fi_allocinfo`). The C side is always the
//! current (ABI 1.3) layout; older layouts are converted in `compat`.
//!
//! # Why raw memory is walked here, and on what terms
//!
//! The conversion lives next to the Rust types it fills so that a new
//! field is added in one file; it is part of the C boundary all the same.
//! Reading relies on the caller's promise that an `fi_info` and every
//! attribute struct, string and byte buffer it points to is NULL or valid
//! for its stated length (rule 2 of the pointer contract in
//! `oxifabric_capi`'s crate docs). Writing and freeing touch only memory
//! this module allocated with the C allocator, or that the application
//! allocated the same way field by field, as libfabric allows (rule 5).

use crate::abi::*;
use core::ffi::CStr;
use core::ptr;

/// Transmit context attributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxAttr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: usize,
    pub size: usize,
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
    pub tclass: u32,
}

/// Receive context attributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RxAttr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: usize,
    pub size: usize,
    pub iov_limit: usize,
}

/// Endpoint attributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpAttr {
    pub ep_type: fi_ep_type,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: usize,
    pub msg_prefix_size: usize,
    pub max_order_raw_size: usize,
    pub max_order_war_size: usize,
    pub max_order_waw_size: usize,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub auth_key_size: usize,
    pub auth_key: Option<Vec<u8>>,
}

/// Domain attributes. `domain` is the opaque domain handle an application
/// may pass back in hints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainAttr {
    pub domain: usize,
    pub name: Option<String>,
    pub threading: fi_threading,
    pub control_progress: fi_progress,
    pub data_progress: fi_progress,
    pub resource_mgmt: fi_resource_mgmt,
    pub av_type: fi_av_type,
    pub mr_mode: c_int,
    pub mr_key_size: usize,
    pub cq_data_size: usize,
    pub cq_cnt: usize,
    pub ep_cnt: usize,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub max_ep_tx_ctx: usize,
    pub max_ep_rx_ctx: usize,
    pub max_ep_stx_ctx: usize,
    pub max_ep_srx_ctx: usize,
    pub cntr_cnt: usize,
    pub mr_iov_limit: usize,
    pub caps: u64,
    pub mode: u64,
    pub auth_key_size: usize,
    pub auth_key: Option<Vec<u8>>,
    pub max_err_data: usize,
    pub mr_cnt: usize,
    pub tclass: u32,
    /// ABI 1.7 on (libfabric 1.20).
    pub max_ep_auth_key: usize,
    /// ABI 1.8 on (libfabric 2.0).
    pub max_group_id: u32,
    /// ABI 1.9 on (libfabric 2.5).
    pub max_cntr_value: u64,
    pub max_err_cntr_value: u64,
}

/// Fabric attributes. `fabric` is the opaque fabric handle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FabricAttr {
    pub fabric: usize,
    pub name: Option<String>,
    pub prov_name: Option<String>,
    pub prov_version: u32,
    pub api_version: u32,
}

/// One `fi_info` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addr: Option<Vec<u8>>,
    pub dest_addr: Option<Vec<u8>>,
    /// Opaque `fid` handle (a passive endpoint or connection request).
    pub handle: usize,
    pub tx: TxAttr,
    pub rx: RxAttr,
    pub ep: EpAttr,
    pub domain: DomainAttr,
    pub fabric: FabricAttr,
    /// Opaque `fid_nic`; duplicated through its own `FI_DUP` control.
    pub nic: usize,
}

/// Copies `len` bytes at `p` into a Vec; NULL or empty is None.
///
/// # Safety
/// `p` is NULL or valid for reads of `len` bytes.
unsafe fn bytes(p: *const c_void, len: usize) -> Option<Vec<u8>> {
    if p.is_null() || len == 0 {
        None
    } else {
        // SAFETY: not NULL, and len readable bytes by the caller's promise.
        Some(unsafe { core::slice::from_raw_parts(p as *const u8, len) }.to_vec())
    }
}

/// Copies a C string; NULL is None, invalid UTF-8 is replaced.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: not NULL, and NUL-terminated by the caller's promise.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// A C-allocated copy of a byte buffer (NULL for None, or when out of
/// memory); the caller's to `free`.
fn c_bytes(b: &Option<Vec<u8>>) -> *mut c_void {
    match b {
        Some(v) if !v.is_empty() => {
            // SAFETY: malloc has no preconditions; a non-NULL result has
            // room for the v.len() bytes copied into it.
            unsafe {
                let p = libc::malloc(v.len());
                if !p.is_null() {
                    ptr::copy_nonoverlapping(v.as_ptr(), p as *mut u8, v.len());
                }
                p
            }
        }
        _ => ptr::null_mut(),
    }
}

/// A C-allocated NUL-terminated copy of a string (NULL for None, or when
/// out of memory); the caller's to `free`.
pub fn c_string(s: &Option<String>) -> *mut c_char {
    match s {
        // SAFETY: malloc has no preconditions; a non-NULL result has room
        // for the string and its NUL.
        Some(s) => unsafe {
            let p = libc::malloc(s.len() + 1) as *mut c_char;
            if !p.is_null() {
                ptr::copy_nonoverlapping(s.as_ptr(), p as *mut u8, s.len());
                *p.add(s.len()) = 0;
            }
            p
        },
        None => ptr::null_mut(),
    }
}

/// One zeroed `T` from the C allocator (NULL when out of memory). Only for
/// the plain C structs of `fi_info`, for which all-zero is valid.
fn calloc_one<T>() -> *mut T {
    // SAFETY: calloc has no preconditions.
    unsafe { libc::calloc(1, core::mem::size_of::<T>()) as *mut T }
}

impl TxAttr {
    /// Reads a C `fi_tx_attr`; NULL reads as the default (no constraint).
    ///
    /// # Safety
    /// `a` is NULL or points to a readable `fi_tx_attr` (rule 2).
    unsafe fn from_c(a: *const fi_tx_attr) -> TxAttr {
        // SAFETY: NULL or a readable attribute struct, by the caller's
        // promise (rule 2).
        match unsafe { a.as_ref() } {
            None => TxAttr::default(),
            Some(a) => TxAttr {
                caps: a.caps,
                mode: a.mode,
                op_flags: a.op_flags,
                msg_order: a.msg_order,
                comp_order: a.comp_order,
                inject_size: a.inject_size,
                size: a.size,
                iov_limit: a.iov_limit,
                rma_iov_limit: a.rma_iov_limit,
                tclass: a.tclass,
            },
        }
    }
    fn write_c(&self, a: &mut fi_tx_attr) {
        a.caps = self.caps;
        a.mode = self.mode;
        a.op_flags = self.op_flags;
        a.msg_order = self.msg_order;
        a.comp_order = self.comp_order;
        a.inject_size = self.inject_size;
        a.size = self.size;
        a.iov_limit = self.iov_limit;
        a.rma_iov_limit = self.rma_iov_limit;
        a.tclass = self.tclass;
    }
}

impl RxAttr {
    /// Reads a C `fi_rx_attr`; NULL reads as the default (no constraint).
    ///
    /// # Safety
    /// `a` is NULL or points to a readable `fi_rx_attr` (rule 2).
    unsafe fn from_c(a: *const fi_rx_attr) -> RxAttr {
        // SAFETY: NULL or a readable attribute struct, by the caller's
        // promise (rule 2).
        match unsafe { a.as_ref() } {
            None => RxAttr::default(),
            Some(a) => RxAttr {
                caps: a.caps,
                mode: a.mode,
                op_flags: a.op_flags,
                msg_order: a.msg_order,
                comp_order: a.comp_order,
                total_buffered_recv: a.total_buffered_recv,
                size: a.size,
                iov_limit: a.iov_limit,
            },
        }
    }
    fn write_c(&self, a: &mut fi_rx_attr) {
        a.caps = self.caps;
        a.mode = self.mode;
        a.op_flags = self.op_flags;
        a.msg_order = self.msg_order;
        a.comp_order = self.comp_order;
        a.total_buffered_recv = self.total_buffered_recv;
        a.size = self.size;
        a.iov_limit = self.iov_limit;
    }
}

impl EpAttr {
    /// Reads a C `fi_ep_attr`; NULL reads as the default (no constraint).
    ///
    /// # Safety
    /// `a` is NULL or points to a readable `fi_ep_attr`, with its strings and buffers NULL or
    /// valid for their stated lengths (rule 2).
    unsafe fn from_c(a: *const fi_ep_attr) -> EpAttr {
        // SAFETY: NULL or a readable attribute struct, by the caller's
        // promise (rule 2).
        match unsafe { a.as_ref() } {
            None => EpAttr::default(),
            Some(a) => EpAttr {
                ep_type: a.r#type,
                protocol: a.protocol,
                protocol_version: a.protocol_version,
                max_msg_size: a.max_msg_size,
                msg_prefix_size: a.msg_prefix_size,
                max_order_raw_size: a.max_order_raw_size,
                max_order_war_size: a.max_order_war_size,
                max_order_waw_size: a.max_order_waw_size,
                mem_tag_format: a.mem_tag_format,
                tx_ctx_cnt: a.tx_ctx_cnt,
                rx_ctx_cnt: a.rx_ctx_cnt,
                auth_key_size: a.auth_key_size,
                // SAFETY: rule 2, auth_key holds auth_key_size bytes.
                auth_key: unsafe { bytes(a.auth_key as *const c_void, a.auth_key_size) },
            },
        }
    }
    fn write_c(&self, a: &mut fi_ep_attr) {
        a.r#type = self.ep_type;
        a.protocol = self.protocol;
        a.protocol_version = self.protocol_version;
        a.max_msg_size = self.max_msg_size;
        a.msg_prefix_size = self.msg_prefix_size;
        a.max_order_raw_size = self.max_order_raw_size;
        a.max_order_war_size = self.max_order_war_size;
        a.max_order_waw_size = self.max_order_waw_size;
        a.mem_tag_format = self.mem_tag_format;
        a.tx_ctx_cnt = self.tx_ctx_cnt;
        a.rx_ctx_cnt = self.rx_ctx_cnt;
        a.auth_key_size = self.auth_key_size;
        a.auth_key = c_bytes(&self.auth_key) as *mut u8;
    }
}

impl DomainAttr {
    /// Reads a C `fi_domain_attr`; NULL reads as the default (no constraint).
    ///
    /// # Safety
    /// `a` is NULL or points to a readable `fi_domain_attr`, with its strings and buffers NULL or
    /// valid for their stated lengths (rule 2).
    unsafe fn from_c(a: *const fi_domain_attr) -> DomainAttr {
        // SAFETY: NULL or a readable attribute struct, by the caller's
        // promise (rule 2).
        match unsafe { a.as_ref() } {
            None => DomainAttr::default(),
            Some(a) => DomainAttr {
                domain: a.domain as usize,
                // SAFETY: rule 2, NULL or a C string.
                name: unsafe { string(a.name) },
                threading: a.threading,
                control_progress: a.control_progress,
                // SAFETY: both union members are the same fi_progress.
                data_progress: unsafe { a.__anon_progress.data_progress },
                resource_mgmt: a.resource_mgmt,
                av_type: a.av_type,
                mr_mode: a.mr_mode,
                mr_key_size: a.mr_key_size,
                cq_data_size: a.cq_data_size,
                cq_cnt: a.cq_cnt,
                ep_cnt: a.ep_cnt,
                tx_ctx_cnt: a.tx_ctx_cnt,
                rx_ctx_cnt: a.rx_ctx_cnt,
                max_ep_tx_ctx: a.max_ep_tx_ctx,
                max_ep_rx_ctx: a.max_ep_rx_ctx,
                max_ep_stx_ctx: a.max_ep_stx_ctx,
                max_ep_srx_ctx: a.max_ep_srx_ctx,
                cntr_cnt: a.cntr_cnt,
                mr_iov_limit: a.mr_iov_limit,
                caps: a.caps,
                mode: a.mode,
                auth_key_size: a.auth_key_size,
                // SAFETY: rule 2, auth_key holds auth_key_size bytes.
                auth_key: unsafe { bytes(a.auth_key as *const c_void, a.auth_key_size) },
                max_err_data: a.max_err_data,
                mr_cnt: a.mr_cnt,
                tclass: a.tclass,
                max_ep_auth_key: a.max_ep_auth_key,
                max_group_id: a.max_group_id,
                max_cntr_value: a.max_cntr_value,
                max_err_cntr_value: a.max_err_cntr_value,
            },
        }
    }
    fn write_c(&self, a: &mut fi_domain_attr) {
        a.domain = self.domain as *mut fid_domain;
        a.name = c_string(&self.name);
        a.threading = self.threading;
        a.control_progress = self.control_progress;
        a.__anon_progress.data_progress = self.data_progress;
        a.resource_mgmt = self.resource_mgmt;
        a.av_type = self.av_type;
        a.mr_mode = self.mr_mode;
        a.mr_key_size = self.mr_key_size;
        a.cq_data_size = self.cq_data_size;
        a.cq_cnt = self.cq_cnt;
        a.ep_cnt = self.ep_cnt;
        a.tx_ctx_cnt = self.tx_ctx_cnt;
        a.rx_ctx_cnt = self.rx_ctx_cnt;
        a.max_ep_tx_ctx = self.max_ep_tx_ctx;
        a.max_ep_rx_ctx = self.max_ep_rx_ctx;
        a.max_ep_stx_ctx = self.max_ep_stx_ctx;
        a.max_ep_srx_ctx = self.max_ep_srx_ctx;
        a.cntr_cnt = self.cntr_cnt;
        a.mr_iov_limit = self.mr_iov_limit;
        a.caps = self.caps;
        a.mode = self.mode;
        a.auth_key_size = self.auth_key_size;
        a.auth_key = c_bytes(&self.auth_key) as *mut u8;
        a.max_err_data = self.max_err_data;
        a.mr_cnt = self.mr_cnt;
        a.tclass = self.tclass;
        a.max_ep_auth_key = self.max_ep_auth_key;
        a.max_group_id = self.max_group_id;
        a.max_cntr_value = self.max_cntr_value;
        a.max_err_cntr_value = self.max_err_cntr_value;
    }
}

impl FabricAttr {
    /// Reads a C `fi_fabric_attr`; NULL reads as the default (no constraint).
    ///
    /// # Safety
    /// `a` is NULL or points to a readable `fi_fabric_attr`, with its strings and buffers NULL or
    /// valid for their stated lengths (rule 2).
    unsafe fn from_c(a: *const fi_fabric_attr) -> FabricAttr {
        // SAFETY: NULL or a readable attribute struct, by the caller's
        // promise (rule 2).
        match unsafe { a.as_ref() } {
            None => FabricAttr::default(),
            Some(a) => FabricAttr {
                fabric: a.fabric as usize,
                // SAFETY: rule 2, NULL or a C string.
                name: unsafe { string(a.name) },
                // SAFETY: rule 2, NULL or a C string.
                prov_name: unsafe { string(a.prov_name) },
                prov_version: a.prov_version,
                api_version: a.api_version,
            },
        }
    }
    fn write_c(&self, a: &mut fi_fabric_attr) {
        a.fabric = self.fabric as *mut fid_fabric;
        a.name = c_string(&self.name);
        a.prov_name = c_string(&self.prov_name);
        a.prov_version = self.prov_version;
        a.api_version = self.api_version;
    }
}

impl Info {
    /// Reads one C `fi_info` (not its `next`). Missing attribute structs
    /// read as all-zero, which in hints means "no constraint".
    ///
    /// # Safety
    /// `p` is NULL or points to a valid current-layout `fi_info` whose
    /// pointers are NULL or valid for their stated lengths.
    pub unsafe fn from_c(p: *const fi_info) -> Option<Info> {
        // SAFETY: (for this function) every pointer read below is NULL or
        // valid for its stated length, by the caller's promise.
        let i = unsafe { p.as_ref() }?;
        Some(Info {
            caps: i.caps,
            mode: i.mode,
            addr_format: i.addr_format,
            // SAFETY: see above.
            src_addr: unsafe { bytes(i.src_addr, i.src_addrlen) },
            // SAFETY: see above.
            dest_addr: unsafe { bytes(i.dest_addr, i.dest_addrlen) },
            handle: i.handle as usize,
            // SAFETY: see above.
            tx: unsafe { TxAttr::from_c(i.tx_attr) },
            // SAFETY: see above.
            rx: unsafe { RxAttr::from_c(i.rx_attr) },
            // SAFETY: see above.
            ep: unsafe { EpAttr::from_c(i.ep_attr) },
            // SAFETY: see above.
            domain: unsafe { DomainAttr::from_c(i.domain_attr) },
            // SAFETY: see above.
            fabric: unsafe { FabricAttr::from_c(i.fabric_attr) },
            nic: i.nic as usize,
        })
    }

    /// Allocates a C `fi_info` with every attribute struct, filled from
    /// `self`. NULL when out of memory. `nic` is not copied (see [`dup_c`]).
    pub fn to_c(&self) -> *mut fi_info {
        // SAFETY: alloc_c gives a fresh info whose five attribute structs
        // are allocated (or NULL overall), so every reference made below
        // is to live memory nobody else holds.
        unsafe {
            let p = alloc_c();
            if p.is_null() {
                return p;
            }
            let i = &mut *p;
            i.caps = self.caps;
            i.mode = self.mode;
            i.addr_format = self.addr_format;
            i.src_addr = c_bytes(&self.src_addr);
            i.src_addrlen = if i.src_addr.is_null() {
                0
            } else {
                self.src_addr.as_ref().map_or(0, Vec::len)
            };
            i.dest_addr = c_bytes(&self.dest_addr);
            i.dest_addrlen = if i.dest_addr.is_null() {
                0
            } else {
                self.dest_addr.as_ref().map_or(0, Vec::len)
            };
            i.handle = self.handle as *mut fid;
            self.tx.write_c(&mut *i.tx_attr);
            self.rx.write_c(&mut *i.rx_attr);
            self.ep.write_c(&mut *i.ep_attr);
            self.domain.write_c(&mut *i.domain_attr);
            self.fabric.write_c(&mut *i.fabric_attr);
            p
        }
    }
}

/// Allocates a zeroed C `fi_info` with zeroed attribute structs (what
/// `fi_dupinfo(NULL)` and so `fi_allocinfo()` return). NULL when out of memory.
pub fn alloc_c() -> *mut fi_info {
    // SAFETY: p is a fresh zeroed allocation (checked for NULL) that only
    // this function holds; free_c accepts a partly filled info.
    unsafe {
        let p: *mut fi_info = calloc_one();
        if p.is_null() {
            return p;
        }
        let i = &mut *p;
        i.tx_attr = calloc_one();
        i.rx_attr = calloc_one();
        i.ep_attr = calloc_one();
        i.domain_attr = calloc_one();
        i.fabric_attr = calloc_one();
        if i.tx_attr.is_null()
            || i.rx_attr.is_null()
            || i.ep_attr.is_null()
            || i.domain_attr.is_null()
            || i.fabric_attr.is_null()
        {
            free_c(p);
            return ptr::null_mut();
        }
        p
    }
}

/// Frees a whole C `fi_info` list and everything it owns.
///
/// # Safety
/// `p` is NULL or a list allocated by this library (or by the application
/// with the C allocator, field by field, as libfabric allows).
pub unsafe fn free_c(mut p: *mut fi_info) {
    // SAFETY: by the caller's promise every node and every pointer it owns
    // came from the C allocator (or is NULL) and is freed once here; a NIC
    // is closed through its own vtable, which its provider set.
    while let Some(i) = unsafe { p.as_mut() } {
        // SAFETY: see above.
        unsafe { free_one(i) };
        let next = i.next;
        // SAFETY: see above; i is not used after this.
        unsafe { libc::free(p as *mut c_void) };
        p = next;
    }
}

/// Frees what one `fi_info` owns (not the node itself).
///
/// # Safety
/// As for [`free_c`].
unsafe fn free_one(i: &mut fi_info) {
    // SAFETY: as for free_c.
    unsafe {
        libc::free(i.src_addr);
        libc::free(i.dest_addr);
        libc::free(i.tx_attr as *mut c_void);
        libc::free(i.rx_attr as *mut c_void);
        if let Some(ep) = i.ep_attr.as_mut() {
            libc::free(ep.auth_key as *mut c_void);
            libc::free(i.ep_attr as *mut c_void);
        }
        if let Some(d) = i.domain_attr.as_mut() {
            libc::free(d.name as *mut c_void);
            libc::free(d.auth_key as *mut c_void);
            libc::free(i.domain_attr as *mut c_void);
        }
        if let Some(f) = i.fabric_attr.as_mut() {
            libc::free(f.name as *mut c_void);
            libc::free(f.prov_name as *mut c_void);
            libc::free(i.fabric_attr as *mut c_void);
        }
        if let Some(nic) = i.nic.as_mut() {
            if let Some(ops) = nic.fid.ops.as_ref() {
                if let Some(close) = ops.close {
                    close(&mut nic.fid);
                }
            }
        }
    }
}

/// Deep-copies one C `fi_info` (not its `next`); NULL in gives a fresh
/// zeroed info. NULL out means out of memory.
///
/// # Safety
/// As for [`Info::from_c`].
pub unsafe fn dup_c(p: *const fi_info) -> *mut fi_info {
    // SAFETY: the caller's promise.
    let Some(info) = (unsafe { Info::from_c(p) }) else {
        return alloc_c();
    };
    let dup = info.to_c();
    if dup.is_null() {
        return dup;
    }
    // A NIC belongs to its provider: ask it for a copy.
    // SAFETY: p is not NULL (from_c read it); a non-NULL nic is a live
    // fid_nic of its provider (rule 2), whose control makes the copy, and
    // dup is the fresh info allocated above.
    unsafe {
        let nic = (*p).nic;
        if let Some(n) = nic.as_mut() {
            let mut copy: *mut fid_nic = ptr::null_mut();
            if let Some(ops) = n.fid.ops.as_ref() {
                if let Some(control) = ops.control {
                    let ret = control(
                        &mut n.fid,
                        FI_DUP as c_int,
                        &mut copy as *mut _ as *mut c_void,
                    );
                    if ret != 0 {
                        copy = ptr::null_mut();
                    }
                }
            }
            (*dup).nic = copy;
        }
    }
    dup
}

/// Builds a C list from Rust entries. NULL for an empty list or when out of
/// memory (then nothing leaks).
pub fn list_to_c(infos: &[Info]) -> Option<*mut fi_info> {
    let mut head: *mut fi_info = ptr::null_mut();
    let mut tail: *mut fi_info = ptr::null_mut();
    for info in infos {
        let p = info.to_c();
        if p.is_null() {
            // SAFETY: head is NULL or the list built here.
            unsafe { free_c(head) };
            return None;
        }
        if tail.is_null() {
            head = p;
        } else {
            // SAFETY: tail is the last node built here, still live.
            unsafe { (*tail).next = p };
        }
        tail = p;
    }
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Info {
        Info {
            caps: FI_MSG | FI_TAGGED,
            addr_format: FI_SOCKADDR_IN as u32,
            src_addr: Some(vec![1, 2, 3, 4]),
            ep: EpAttr {
                ep_type: FI_EP_RDM,
                auth_key_size: 2,
                auth_key: Some(vec![9, 9]),
                ..Default::default()
            },
            domain: DomainAttr {
                name: Some("lo".into()),
                threading: FI_THREAD_SAFE,
                ..Default::default()
            },
            fabric: FabricAttr {
                name: Some("127.0.0.0/8".into()),
                prov_name: Some("test".into()),
                prov_version: 1,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_dup() {
        let i = sample();
        let c = i.to_c();
        assert!(!c.is_null());
        // SAFETY: c and d are lists this module built, freed once at the end.
        unsafe {
            let back = Info::from_c(c).unwrap();
            assert_eq!(back, i);
            let d = dup_c(c);
            assert_ne!((*d).src_addr, (*c).src_addr);
            assert_eq!(Info::from_c(d).unwrap(), i);
            free_c(c);
            free_c(d);
        }
    }

    #[test]
    fn dup_null_is_zeroed_and_complete() {
        // SAFETY: NULL is allowed; p is this module's and freed once.
        unsafe {
            let p = dup_c(ptr::null());
            let i = &*p;
            assert!(!i.tx_attr.is_null() && !i.rx_attr.is_null() && !i.ep_attr.is_null());
            assert!(!i.domain_attr.is_null() && !i.fabric_attr.is_null());
            assert_eq!(Info::from_c(p).unwrap(), Info::default());
            free_c(p);
        }
    }

    #[test]
    fn list_links_in_order() {
        let mut a = sample();
        let l = list_to_c(&[a.clone(), {
            a.caps = FI_RMA;
            a
        }])
        .unwrap();
        // SAFETY: l is the two-node list built above, freed once.
        unsafe {
            assert_eq!((*l).caps, FI_MSG | FI_TAGGED);
            assert_eq!((*(*l).next).caps, FI_RMA);
            assert!((*(*l).next).next.is_null());
            free_c(l);
        }
    }
}

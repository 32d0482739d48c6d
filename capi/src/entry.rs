//! Every exported `fi_*` function, each a few lines onto the engine.
//!
//! Symbol versions are assigned by `capi/libfabric.map`: the functions here
//! carry the default (`@@`) versions; the compat versions are C forwarders in
//! `c/shim.c` that call the `oxi_*` functions at the end of this file.

use crate::boundary::{guard, opt_str, prov_name};
use crate::providers::PROVIDERS;
use core::ffi::{c_char, c_int, c_void, CStr};
use core::ptr;
use oxifabric::abi::*;
use oxifabric::compat::{self, Layout};
use oxifabric::error::Error;
use oxifabric::info::{self, Info};
use oxifabric::provider::{self, Request};
use oxifabric::{core_info, core_warn, param};

/// `fi_version`: the API version this library implements (2.6).
#[no_mangle]
pub extern "C" fn fi_version() -> u32 {
    oxifabric::FI_VERSION_CURRENT
}

/// Shared body of every `fi_getinfo` version: `hints` is read with layout `l`.
///
/// # Safety
/// Rule 2 of the pointer contract (crate docs) for `node`, `service` and
/// `hints` (in layout `l`), rule 3 for `out`.
unsafe fn getinfo_layout(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    out: *mut *mut fi_info,
    l: &Layout,
) -> c_int {
    if out.is_null() {
        core_warn!(FI_LOG_CORE, "fi_getinfo: info (the result pointer) is NULL");
        return -FI_EINVAL;
    }
    // fi_getinfo(3): on failure the result is NULL.
    // SAFETY: rule 3, out is not NULL (checked above).
    unsafe { *out = core::ptr::null_mut() };
    crate::providers::define_params();
    // SAFETY: rule 2, NULL or C strings.
    let (Ok(node), Ok(service)) = (unsafe { opt_str(node) }, unsafe { opt_str(service) }) else {
        core_warn!(
            FI_LOG_CORE,
            "fi_getinfo: node or service is not valid UTF-8"
        );
        return -FI_EINVAL;
    };
    // SAFETY: rule 2, hints is NULL or an fi_info of layout l.
    let hints: Option<Info> = unsafe { compat::read_info(hints, l) };
    let req = Request {
        version,
        node,
        service,
        flags,
        hints: hints.as_ref(),
    };
    match oxifabric::getinfo::getinfo(PROVIDERS, &req) {
        Ok(list) => match info::list_to_c(&list) {
            Some(head) => {
                // SAFETY: as above.
                unsafe { *out = head };
                0
            }
            None => -FI_ENOMEM,
        },
        Err(e) => e.code(),
    }
}

/// `fi_getinfo@@FABRIC_1.9`: hints in the newest layout.
///
/// # Safety
/// Rule 2 for `node`, `service` and `hints`, rule 3 for `info`.
#[no_mangle]
pub unsafe extern "C" fn fi_getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    info: *mut *mut fi_info,
) -> c_int {
    // SAFETY: the caller's promise.
    guard(-FI_EOTHER, || unsafe {
        getinfo_layout(
            version,
            node,
            service,
            flags,
            hints,
            info,
            &compat::ABI_CURRENT,
        )
    })
}

/// `fi_freeinfo@@FABRIC_1.9`: frees a whole list (NULL is fine).
///
/// # Safety
/// Rule 5: `info` is NULL or a list from this library, freed once.
#[no_mangle]
pub unsafe extern "C" fn fi_freeinfo(info: *mut fi_info) {
    // SAFETY: the caller's promise.
    guard((), || unsafe { info::free_c(info) })
}

/// `fi_dupinfo@@FABRIC_1.9`: deep copy of one entry; NULL gives a zeroed,
/// fully allocated entry (what `fi_allocinfo` relies on).
///
/// # Safety
/// Rule 2: `info` is NULL or a readable `fi_info`.
#[no_mangle]
pub unsafe extern "C" fn fi_dupinfo(info: *const fi_info) -> *mut fi_info {
    // SAFETY: the caller's promise.
    guard(ptr::null_mut(), || unsafe { info::dup_c(info) })
}

/// Shared body of `fi_fabric` for any attribute layout.
///
/// # Safety
/// `attr`'s strings are NULL or C strings (rule 2); `fabric` is writable
/// (rule 3).
unsafe fn fabric_common(
    attr: Option<fi_fabric_attr>,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    let Some(attr) = attr else {
        core_warn!(FI_LOG_FABRIC, "fi_fabric: attr is NULL");
        return -FI_EINVAL;
    };
    if fabric.is_null() {
        core_warn!(
            FI_LOG_FABRIC,
            "fi_fabric: fabric (the result pointer) is NULL"
        );
        return -FI_EINVAL;
    }
    // SAFETY: an all-zero fi_info is valid (every pointer NULL); its one
    // attribute is the caller's, whose strings are valid by its promise.
    let Some(fattr) = (unsafe {
        Info::from_c(&fi_info {
            fabric_attr: &attr as *const _ as *mut _,
            ..core::mem::zeroed()
        })
    })
    .map(|i| i.fabric) else {
        return -FI_EINVAL;
    };
    let Some(name) = fattr.prov_name.as_deref() else {
        core_warn!(FI_LOG_FABRIC, "fi_fabric: attr->prov_name is NULL");
        return -FI_EINVAL;
    };
    let Some(prov) = provider::find(PROVIDERS, name) else {
        core_warn!(FI_LOG_FABRIC, "fi_fabric: no provider named {name}");
        return -FI_ENODEV;
    };
    match prov.fabric(&fattr) {
        Ok(ops) => {
            let f = crate::fabric::new_fabric(ops, fattr.api_version, context);
            // SAFETY: rule 3, fabric is not NULL (checked above).
            unsafe { *fabric = f };
            0
        }
        Err(e) => e.code(),
    }
}

/// `fi_fabric@@FABRIC_1.1`.
///
/// # Safety
/// Rule 2 for `attr` and its strings, rule 3 for `fabric`.
#[no_mangle]
pub unsafe extern "C" fn fi_fabric(
    attr: *mut fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    // SAFETY: the caller's promise.
    guard(-FI_EOTHER, || unsafe {
        fabric_common(attr.as_ref().copied(), fabric, context)
    })
}

/// `fi_fabric2@@FABRIC_1.8` (libfabric 2.0): opens the fabric one entry of
/// an `fi_getinfo` answer names, as `fi_fabric(info->fabric_attr, ...)`
/// does (its `prov_name` picks the provider, its `api_version` the API the
/// fabric serves). No flags are defined: any bit is `-FI_EBADFLAGS`.
///
/// # Safety
/// `info` is NULL or a valid `fi_info` whose `fabric_attr` is NULL or valid;
/// `fabric` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn fi_fabric2(
    info: *mut fi_info,
    fabric: *mut *mut fid_fabric,
    flags: u64,
    context: *mut c_void,
) -> c_int {
    guard(-FI_EOTHER, || {
        if flags != 0 {
            core_warn!(FI_LOG_FABRIC, "fi_fabric2: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS;
        }
        // SAFETY: `info` is NULL or a valid fi_info (caller).
        let Some(info) = (unsafe { info.as_ref() }) else {
            core_warn!(FI_LOG_FABRIC, "fi_fabric2: info is NULL");
            return -FI_EINVAL;
        };
        // SAFETY: fabric_attr is NULL or valid (caller); fi_fabric_attr has
        // the same layout in every ABI node since 1.1, and the symbol only
        // exists since 1.8.
        let attr = unsafe { info.fabric_attr.as_ref() }.copied();
        if attr.is_none() {
            core_warn!(FI_LOG_FABRIC, "fi_fabric2: info->fabric_attr is NULL");
        }
        // SAFETY: `fabric` is NULL (checked there) or writable (caller).
        unsafe { fabric_common(attr, fabric, context) }
    })
}

/// `fi_open@@FABRIC_1.5`: opens a named library-wide object. None is
/// implemented yet (`mr_cache` and `logging` included), so every valid call
/// gets `-FI_ENOSYS`, which callers such as Open MPI treat as "not offered".
///
/// # Safety
/// Rule 2: `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn fi_open(
    version: u32,
    name: *const c_char,
    attr: *mut c_void,
    attr_len: usize,
    flags: u64,
    fid: *mut *mut fid,
    context: *mut c_void,
) -> c_int {
    let _ = (attr, attr_len, context);
    guard(-FI_EOTHER, || {
        if name.is_null() || fid.is_null() {
            core_warn!(FI_LOG_CORE, "fi_open: name or fid is NULL");
            return -FI_EINVAL;
        }
        if version > oxifabric::FI_VERSION_CURRENT {
            core_warn!(
                FI_LOG_CORE,
                "fi_open: API version {version:#x} is newer than this library"
            );
            return -FI_ENOSYS;
        }
        if flags != 0 {
            core_warn!(FI_LOG_CORE, "fi_open: unsupported flags {flags:#x}");
            return -FI_EBADFLAGS;
        }
        // SAFETY: rule 2, name is a C string (not NULL, checked above).
        let n = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        core_info!(FI_LOG_CORE, "fi_open: no library object named {n}");
        -FI_ENOSYS
    })
}

/// `fi_strerror`: upstream's text for any error number, positive or negative.
#[no_mangle]
pub extern "C" fn fi_strerror(errnum: c_int) -> *const c_char {
    guard(c"Unspecified error".as_ptr(), || {
        oxifabric::strerror::strerror(errnum).as_ptr()
    })
}

thread_local! {
    /// `fi_tostr`'s result buffer: one per thread, so the text stays valid
    /// until the same thread calls `fi_tostr` again.
    static TOSTR_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `fi_tostr`: text for a libfabric value, in a per-thread buffer.
///
/// # Safety
/// Rule 2: `data` is NULL or a readable value of the type `datatype` names.
#[no_mangle]
pub unsafe extern "C" fn fi_tostr(data: *const c_void, datatype: fi_type) -> *mut c_char {
    guard(ptr::null_mut(), || {
        // SAFETY: the caller's promise.
        let Some(s) = (unsafe { oxifabric::tostr::tostr(data, datatype as c_int) }) else {
            return ptr::null_mut();
        };
        TOSTR_BUF.with(|b| {
            let mut b = b.borrow_mut();
            b.clear();
            b.extend_from_slice(s.as_bytes());
            b.push(0);
            b.as_mut_ptr() as *mut c_char
        })
    })
}

/// `fi_tostr_r@@FABRIC_1.4`: text for a value into the caller's buffer,
/// cut where upstream's bounded formatting cuts it, NUL-terminated.
///
/// # Safety
/// Rule 2 for `data` (as for `fi_tostr`), rule 3 for `buf` (`len` bytes).
#[no_mangle]
pub unsafe extern "C" fn fi_tostr_r(
    buf: *mut c_char,
    len: usize,
    data: *const c_void,
    datatype: fi_type,
) -> *mut c_char {
    guard(ptr::null_mut(), || {
        if buf.is_null() || len == 0 {
            core_warn!(FI_LOG_CORE, "fi_tostr_r: buffer is NULL or has length 0");
            return ptr::null_mut();
        }
        let mut out = oxifabric::tostr::Out::bounded(len);
        // SAFETY: the caller's promise for data.
        if !unsafe { oxifabric::tostr::write(&mut out, data, datatype as c_int) } {
            return ptr::null_mut();
        }
        let s = out.into_string();
        let n = s.len().min(len - 1);
        // SAFETY: rule 3, buf is writable for len > n bytes.
        unsafe {
            ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
        buf
    })
}

/// `fi_getparams`: every defined parameter with its current value, as a
/// NULL-name-terminated array for `fi_freeparams`.
///
/// # Safety
/// Rule 3: `params` and `count` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn fi_getparams(params: *mut *mut fi_param, count: *mut c_int) -> c_int {
    guard(-FI_EOTHER, || {
        if params.is_null() || count.is_null() {
            core_warn!(FI_LOG_CORE, "fi_getparams: params or count is NULL");
            return -FI_EINVAL;
        }
        crate::providers::define_params();
        let all = param::all();
        // SAFETY: calloc has no preconditions.
        let arr = unsafe { libc::calloc(all.len() + 1, core::mem::size_of::<fi_param>()) }
            as *mut fi_param;
        if arr.is_null() {
            return -FI_ENOMEM;
        }
        for (i, p) in all.iter().enumerate() {
            // SAFETY: entry i < all.len() of the zeroed array above.
            let e = unsafe { &mut *arr.add(i) };
            e.name = info::c_string(&Some(p.env.clone()));
            e.r#type = p.ty;
            e.help_string = info::c_string(&Some(p.help_text()));
            e.value = info::c_string(&std::env::var(&p.env).ok());
        }
        // SAFETY: rule 3, both are writable (not NULL, checked above).
        unsafe {
            *params = arr;
            *count = all.len() as c_int;
        }
        0
    })
}

/// `fi_freeparams`: frees what `fi_getparams` returned (NULL is fine).
///
/// # Safety
/// `params` is NULL or an array from `fi_getparams`, freed once.
#[no_mangle]
pub unsafe extern "C" fn fi_freeparams(params: *mut fi_param) {
    guard((), || {
        if params.is_null() {
            return;
        }
        // SAFETY: the array and its strings came from fi_getparams (the
        // caller's promise); it ends at the zeroed entry with a NULL name.
        unsafe {
            let mut p = params;
            while !(*p).name.is_null() {
                libc::free((*p).name as *mut c_void);
                libc::free((*p).help_string as *mut c_void);
                libc::free((*p).value as *mut c_void);
                p = p.add(1);
            }
            libc::free(params as *mut c_void);
        }
    })
}

/// `fi_param_get`: reads `FI_<PROV>_<NAME>` as the parameter's type.
/// `-FI_ENOENT` for an undefined parameter, `-FI_ENODATA` when unset.
///
/// # Safety
/// Rule 2 for `provider` and `param_name`; rule 3 for `value`, which has
/// the room the parameter's type needs.
#[no_mangle]
pub unsafe extern "C" fn fi_param_get(
    provider: *mut fi_provider,
    param_name: *const c_char,
    value: *mut c_void,
) -> c_int {
    guard(-FI_EOTHER, || {
        if param_name.is_null() || value.is_null() {
            core_warn!(FI_LOG_CORE, "fi_param_get: param_name or value is NULL");
            return -FI_EINVAL;
        }
        // SAFETY: rule 2, provider is NULL or a provider; param_name is a
        // C string (not NULL, checked above).
        let (prov, name) = unsafe { (prov_name(provider), CStr::from_ptr(param_name)) };
        let name = name.to_string_lossy();
        // SAFETY (each arm's write): rule 3, value has room for the type.
        match param::get(&prov, &name) {
            Ok(param::Value::Str(_)) => {
                // Hand out the environment's own string, as upstream does,
                // so the caller never has to free it.
                let env = std::ffi::CString::new(param::env_name(&prov, &name)).unwrap_or_default();
                // SAFETY: see above; env is a C string.
                unsafe { *(value as *mut *mut c_char) = libc::getenv(env.as_ptr()) };
                0
            }
            Ok(param::Value::Int(v)) => {
                // SAFETY: see above.
                unsafe { *(value as *mut c_int) = v };
                0
            }
            Ok(param::Value::Bool(b)) => {
                // SAFETY: see above.
                unsafe { *(value as *mut c_int) = b as c_int };
                0
            }
            Ok(param::Value::Size(v)) => {
                // SAFETY: see above.
                unsafe { *(value as *mut usize) = v };
                0
            }
            Err(Error::NoEnt) => {
                core_warn!(FI_LOG_CORE, "fi_param_get: {prov} has no parameter {name}");
                -FI_ENOENT
            }
            Err(e) => e.code(),
        }
    })
}

/// Called by `fi_param_define` in `c/shim.c` once the help text is formatted.
///
/// # Safety
/// Rule 2 for `provider`, `param_name` and `help`.
#[no_mangle]
pub unsafe extern "C" fn oxi_param_define(
    provider: *const fi_provider,
    param_name: *const c_char,
    ty: fi_param_type,
    help: *const c_char,
) -> c_int {
    guard(-FI_EOTHER, || {
        if param_name.is_null() {
            core_warn!(FI_LOG_CORE, "fi_param_define: param_name is NULL");
            return -FI_EINVAL;
        }
        // SAFETY: rule 2, provider is NULL or a provider; param_name is a
        // C string (not NULL, checked above).
        let (prov, name) = unsafe { (prov_name(provider), CStr::from_ptr(param_name)) };
        let name = name.to_string_lossy();
        let help = if help.is_null() {
            String::new()
        } else {
            // SAFETY: rule 2, a C string.
            unsafe { CStr::from_ptr(help) }
                .to_string_lossy()
                .into_owned()
        };
        match param::define(&prov, &name, ty, &help) {
            Ok(()) => 0,
            Err(e) => {
                core_warn!(
                    FI_LOG_CORE,
                    "fi_param_define: invalid definition of {name} (type {ty})"
                );
                e.code()
            }
        }
    })
}

/// `fi_log_enabled`: whether a message would be printed.
///
/// # Safety
/// Rule 2: `prov` is NULL or a provider.
#[no_mangle]
pub unsafe extern "C" fn fi_log_enabled(
    prov: *const fi_provider,
    level: fi_log_level,
    subsys: fi_log_subsys,
) -> c_int {
    guard(0, || {
        // SAFETY: the caller's promise.
        let name = unsafe { prov_name(prov) };
        oxifabric::log::enabled(&name, level, subsys) as c_int
    })
}

/// `fi_log_ready@@FABRIC_1.6`: like `fi_log_enabled`, rate limited through
/// the caller's `showtime` (milliseconds) by `FI_LOG_INTERVAL`.
///
/// # Safety
/// Rule 2 for `prov`; rule 3 for `showtime`.
#[no_mangle]
pub unsafe extern "C" fn fi_log_ready(
    prov: *const fi_provider,
    level: fi_log_level,
    subsys: fi_log_subsys,
    showtime: *mut u64,
) -> c_int {
    guard(0, || {
        // SAFETY: the caller's promise.
        let (name, showtime) = unsafe { (prov_name(prov), showtime.as_mut()) };
        match showtime {
            Some(t) => oxifabric::log::ready(&name, level, subsys, t) as c_int,
            None => oxifabric::log::enabled(&name, level, subsys) as c_int,
        }
    })
}

/// Called by `fi_log` in `c/shim.c` with the message already formatted.
///
/// # Safety
/// Rule 2 for `prov`, `func` and `msg`.
#[no_mangle]
pub unsafe extern "C" fn oxi_log_message(
    prov: *const fi_provider,
    level: fi_log_level,
    subsys: fi_log_subsys,
    func: *const c_char,
    line: c_int,
    msg: *const c_char,
) {
    guard((), || {
        let func = if func.is_null() {
            "?".into()
        } else {
            // SAFETY: rule 2, a C string.
            unsafe { CStr::from_ptr(func) }.to_string_lossy()
        };
        let msg = if msg.is_null() {
            "".into()
        } else {
            // SAFETY: rule 2, a C string.
            unsafe { CStr::from_ptr(msg) }.to_string_lossy()
        };
        // SAFETY: rule 2, NULL or a provider.
        let prov = unsafe { prov_name(prov) };
        oxifabric::log::emit(&prov, level, subsys, &func, line as i64, &msg);
    })
}

/// The layout an ABI node number stands for (10 = 1.0, 13 = 1.3, 18 = 1.8).
fn layout_of(abi: c_int) -> Option<&'static Layout> {
    u32::try_from(abi - 10)
        .ok()
        .and_then(compat::layout_of_node)
}

/// `fi_getinfo@FABRIC_1.0` … `@FABRIC_1.8`, through `c/shim.c`.
///
/// # Safety
/// As for `fi_getinfo`, with `hints` in the layout of ABI `abi`.
#[no_mangle]
pub unsafe extern "C" fn oxi_getinfo_compat(
    abi: c_int,
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const fi_info,
    info: *mut *mut fi_info,
) -> c_int {
    guard(-FI_EOTHER, || match layout_of(abi) {
        // SAFETY: the caller's promise.
        Some(l) => unsafe { getinfo_layout(version, node, service, flags, hints, info, l) },
        None => -FI_EINVAL,
    })
}

/// `fi_dupinfo@FABRIC_1.0` … `@FABRIC_1.8`, through `c/shim.c`: reads the old layout,
/// answers with a current-layout copy (a superset of the old one).
///
/// # Safety
/// Rule 2: `info` is NULL or a readable `fi_info` of ABI `abi`'s layout.
#[no_mangle]
pub unsafe extern "C" fn oxi_dupinfo_compat(abi: c_int, info: *const fi_info) -> *mut fi_info {
    guard(ptr::null_mut(), || {
        let Some(l) = layout_of(abi) else {
            return ptr::null_mut();
        };
        // SAFETY: the caller's promise.
        match unsafe { compat::read_info(info, l) } {
            None => info::alloc_c(),
            Some(mut i) => {
                if l.info < core::mem::size_of::<fi_info>() {
                    i.nic = 0;
                }
                let p = i.to_c();
                if !p.is_null() && i.nic != 0 {
                    // Same NIC handling as the current version.
                    // SAFETY: the caller's promise for info (the layouts
                    // share the nic field's offset when it is read); p and
                    // d are fresh infos of ours, d freed once.
                    unsafe {
                        let d = info::dup_c(info);
                        if !d.is_null() {
                            (*p).nic = (*d).nic;
                            (*d).nic = ptr::null_mut();
                            info::free_c(d);
                        }
                    }
                }
                p
            }
        }
    })
}

/// `fi_fabric@FABRIC_1.0`, through `c/shim.c`: the 1.0 attribute has no
/// `api_version`, so the fabric reports API 1.0.
///
/// # Safety
/// Rule 2 for `attr` (1.0 layout) and its strings, rule 3 for `fabric`.
#[no_mangle]
pub unsafe extern "C" fn oxi_fabric_1_0(
    attr: *const fi_fabric_attr,
    fabric: *mut *mut fid_fabric,
    context: *mut c_void,
) -> c_int {
    guard(-FI_EOTHER, || {
        // SAFETY: the caller's promise.
        let a = unsafe { compat::read_fabric_attr(attr, &compat::ABI_1_0) }.map(|mut a| {
            a.api_version = 1 << 16;
            a
        });
        // SAFETY: the caller's promise.
        unsafe { fabric_common(a, fabric, context) }
    })
}

//! hdrgen: writes `include/rdma/*.h` from the Rust ABI mirror in `src/abi/`.
//!
//! Usage: `hdrgen [--check] <repo-root>`. Without `--check` it (re)writes the
//! headers; with it, it compares them with the checked-in files and exits 1
//! naming each header that drifted.
//!
//! The generator understands the small, regular subset of Rust that
//! `src/abi/mod.rs` documents: `#[repr(C)]` structs and unions, type aliases,
//! constants, `c_enum!`/`c_anon_enum!` invocations and `extern "C"` function
//! declarations. Static inline wrappers and function-like macros are C
//! fragments in `src/abi/c/<module>.h`, stitched in after the types (or before
//! them, for the part of a fragment above a `@@TYPES@@` line).

mod cexpr;
mod ctype;
mod headers;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ctype::Kinds;
use headers::{HeaderSpec, HEADERS};

/// Reads every module, learns which names are structs, unions, enums and
/// aliases, then renders each header.
fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let check = if let Some(i) = args.iter().position(|a| a == "--check") {
        args.remove(i);
        true
    } else {
        false
    };
    let root = PathBuf::from(args.first().map(String::as_str).unwrap_or("."));

    let mut files = Vec::new();
    for spec in HEADERS {
        let path = root.join("src/abi").join(format!("{}.rs", spec.module));
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("hdrgen: cannot read {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        let file = match syn::parse_file(&text) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("hdrgen: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        files.push((spec, file));
    }

    let mut kinds = Kinds::default();
    for (_, file) in &files {
        kinds.learn(file);
    }

    let mut drifted = Vec::new();
    for (spec, file) in &files {
        let frag_path = root.join("src/abi/c").join(format!("{}.h", spec.module));
        let fragment = std::fs::read_to_string(&frag_path).unwrap_or_default();
        let text = match render(spec, file, &kinds, &fragment) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("hdrgen: {}: {e}", spec.module);
                return ExitCode::FAILURE;
            }
        };
        let out = root.join("include/rdma").join(spec.header);
        if check {
            let old = std::fs::read_to_string(&out).unwrap_or_default();
            if old != text {
                drifted.push(out.display().to_string());
            }
        } else if let Err(e) = write_if_changed(&out, &text) {
            eprintln!("hdrgen: cannot write {}: {e}", out.display());
            return ExitCode::FAILURE;
        }
    }
    if check {
        if drifted.is_empty() {
            println!("hdrgen: {} headers match src/abi", files.len());
        } else {
            for d in &drifted {
                eprintln!("hdrgen: {d} differs from a fresh generation (run `make headers`)");
            }
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)
}

/// Doc comment lines of an item, joined.
fn docs(attrs: &[syn::Attribute]) -> Vec<String> {
    let mut out = Vec::new();
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta {
            if nv.path.is_ident("doc") {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    out.push(s.value().trim().replace("*/", "* /"));
                }
            }
        }
    }
    out
}

/// Turns Rust doc lines into a C comment at the given indent.
fn comment(lines: &[String], indent: &str) -> String {
    let lines: Vec<&String> = lines.iter().filter(|l| !l.is_empty()).collect();
    match lines.len() {
        0 => String::new(),
        1 => format!("{indent}/* {} */\n", strip_links(lines[0])),
        _ => {
            let mut s = format!("{indent}/*\n");
            for l in lines {
                let _ = writeln!(s, "{indent} * {}", strip_links(l));
            }
            let _ = writeln!(s, "{indent} */");
            s
        }
    }
}

/// Rustdoc link brackets mean nothing in C.
fn strip_links(s: &str) -> String {
    s.replace("[`", "`").replace("`]", "`")
}

/// The header's top comment: the module's `//!` docs.
fn module_docs(file: &syn::File) -> Vec<String> {
    docs(&file.attrs)
}

fn render(
    spec: &HeaderSpec,
    file: &syn::File,
    kinds: &Kinds,
    fragment: &str,
) -> Result<String, String> {
    let (frag_before, frag_after) = match fragment.split_once("@@TYPES@@\n") {
        Some((a, b)) => (a, b),
        None => ("", fragment),
    };
    let mut out = String::new();
    out.push_str("/*\n * Generated by oxifabric's tools/hdrgen from src/abi/");
    let _ = writeln!(out, "{}.rs: do not edit.", spec.module);
    out.push_str(" * Regenerate with `make headers`.\n *\n");
    for l in module_docs(file) {
        if l.is_empty() {
            out.push_str(" *\n");
        } else {
            let _ = writeln!(out, " * {}", strip_links(&l));
        }
    }
    out.push_str(" *\n * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only\n */\n\n");
    let _ = writeln!(out, "#ifndef {}\n#define {}\n", spec.guard, spec.guard);
    for inc in spec.includes {
        let _ = writeln!(out, "#include {inc}");
    }
    out.push_str("\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");

    // Forward declarations so that prototypes and function-pointer members
    // may name a struct before (or without) its definition.
    let mut fwd = BTreeSet::new();
    for item in &file.items {
        kinds.collect_tags(item, &mut fwd);
    }
    if !fwd.is_empty() {
        for tag in &fwd {
            let _ = writeln!(out, "{tag};");
        }
        out.push('\n');
    }

    if !frag_before.is_empty() {
        out.push_str(frag_before.trim_end());
        out.push_str("\n\n");
    }

    for item in &file.items {
        render_item(item, kinds, &mut out)?;
    }

    if !frag_after.trim().is_empty() {
        out.push_str(frag_after.trim_end());
        out.push_str("\n\n");
    }
    out.push_str("#ifdef __cplusplus\n}\n#endif\n\n");
    let _ = writeln!(out, "#endif /* {} */", spec.guard);
    Ok(out)
}

fn is_pub(v: &syn::Visibility) -> bool {
    matches!(v, syn::Visibility::Public(_))
}

fn has_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg"))
}

fn render_item(item: &syn::Item, kinds: &Kinds, out: &mut String) -> Result<(), String> {
    match item {
        syn::Item::Const(c) if is_pub(&c.vis) && !has_cfg_test(&c.attrs) => {
            out.push_str(&comment(&docs(&c.attrs), ""));
            let value = cexpr::define_value(&c.expr, &c.ty, kinds)?;
            let _ = writeln!(out, "#define {} {}\n", c.ident, value);
        }
        syn::Item::Struct(s) if is_pub(&s.vis) => {
            if s.ident.to_string().starts_with("__anon_") {
                return Ok(());
            }
            // A struct whose only field is `_opaque` is incomplete in C:
            // the forward declaration at the top is all C gets.
            if s.fields
                .iter()
                .next()
                .and_then(|f| f.ident.as_ref())
                .is_some_and(|i| i == "_opaque")
            {
                return Ok(());
            }
            out.push_str(&comment(&docs(&s.attrs), ""));
            let _ = writeln!(out, "struct {} {{", s.ident);
            out.push_str(&kinds.fields(&s.fields, "\t")?);
            out.push_str("};\n\n");
        }
        syn::Item::Union(u) if is_pub(&u.vis) => {
            if u.ident.to_string().starts_with("__anon_") {
                return Ok(());
            }
            out.push_str(&comment(&docs(&u.attrs), ""));
            let _ = writeln!(out, "union {} {{", u.ident);
            out.push_str(&kinds.fields(&syn::Fields::Named(u.fields.clone()), "\t")?);
            out.push_str("};\n\n");
        }
        syn::Item::Type(t) if is_pub(&t.vis) => {
            out.push_str(&comment(&docs(&t.attrs), ""));
            let decl = kinds.decl(&t.ty, &t.ident.to_string(), "")?;
            let _ = writeln!(out, "typedef {decl};\n");
        }
        syn::Item::Macro(m) => {
            let name = m
                .mac
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            if name == "c_enum" || name == "c_anon_enum" {
                let e: syn::ItemEnum = m
                    .mac
                    .parse_body_with(parse_enum_body)
                    .map_err(|e| format!("{name}!: {e}"))?;
                out.push_str(&comment(&docs(&e.attrs), ""));
                if name == "c_enum" {
                    let _ = writeln!(out, "enum {} {{", e.ident);
                } else {
                    out.push_str("enum {\n");
                }
                for v in &e.variants {
                    out.push_str(&comment(&docs(&v.attrs), "\t"));
                    let (_, expr) = v.discriminant.as_ref().ok_or_else(|| {
                        format!("{}: enumerator {} needs a value", e.ident, v.ident)
                    })?;
                    let value = cexpr::expr(expr, cexpr::Suffix::None, kinds)?;
                    let _ = writeln!(out, "\t{} = {},", v.ident, value);
                }
                out.push_str("};\n\n");
            }
        }
        syn::Item::ForeignMod(fm) => {
            for fi in &fm.items {
                if let syn::ForeignItem::Fn(f) = fi {
                    out.push_str(&comment(&docs(&f.attrs), ""));
                    let proto = kinds.prototype(&f.sig)?;
                    let _ = writeln!(out, "{proto};\n");
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Parses `pub enum name : type { A = 1, ... }` (the `: type` is ours, not
/// Rust's) into an `ItemEnum`, dropping the type.
fn parse_enum_body(input: syn::parse::ParseStream) -> syn::Result<syn::ItemEnum> {
    let attrs = input.call(syn::Attribute::parse_outer)?;
    let vis: syn::Visibility = input.parse()?;
    let enum_token: syn::Token![enum] = input.parse()?;
    let ident: syn::Ident = input.parse()?;
    let _colon: syn::Token![:] = input.parse()?;
    let _ty: syn::Type = input.parse()?;
    let content;
    let brace_token = syn::braced!(content in input);
    let variants = content.parse_terminated(syn::Variant::parse, syn::Token![,])?;
    Ok(syn::ItemEnum {
        attrs,
        vis,
        enum_token,
        ident,
        generics: Default::default(),
        brace_token,
        variants,
    })
}

use syn::parse::Parse as _;

//! Rust type syntax → C declarators.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// What each ABI name is in C, learned from all modules before rendering.
#[derive(Default)]
pub struct Kinds {
    structs: BTreeSet<String>,
    unions: BTreeSet<String>,
    enums: BTreeSet<String>,
    aliases: BTreeSet<String>,
    /// Anonymous aggregates, emitted inline where used.
    anon: HashMap<String, (bool, syn::Fields)>,
    /// Constants, so that expressions can name them.
    pub consts: BTreeSet<String>,
}

/// C spelling of a Rust primitive or well-known foreign type.
fn primitive(name: &str) -> Option<&'static str> {
    Some(match name {
        "c_void" => "void",
        "c_char" => "char",
        "c_schar" => "signed char",
        "c_uchar" => "unsigned char",
        "c_short" => "short",
        "c_ushort" => "unsigned short",
        "c_int" => "int",
        "c_uint" => "unsigned int",
        "c_long" => "long",
        "c_ulong" => "unsigned long",
        "c_longlong" => "long long",
        "c_ulonglong" => "unsigned long long",
        "c_float" | "f32" => "float",
        "c_double" | "f64" => "double",
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i8" => "int8_t",
        "i16" => "int16_t",
        "i32" => "int32_t",
        "i64" => "int64_t",
        "usize" | "size_t" => "size_t",
        "isize" | "ssize_t" => "ssize_t",
        "bool" => "bool",
        "iovec" => "struct iovec",
        "sockaddr" => "struct sockaddr",
        "pthread_mutex_t" => "pthread_mutex_t",
        "pthread_cond_t" => "pthread_cond_t",
        "pollfd" => "struct pollfd",
        "va_list" => "va_list",
        _ => return None,
    })
}

impl Kinds {
    /// Records the names a module defines.
    pub fn learn(&mut self, file: &syn::File) {
        for item in &file.items {
            match item {
                syn::Item::Struct(s) => {
                    let n = s.ident.to_string();
                    if n.starts_with("__anon_") {
                        self.anon.insert(n, (false, s.fields.clone()));
                    } else {
                        self.structs.insert(n);
                    }
                }
                syn::Item::Union(u) => {
                    let n = u.ident.to_string();
                    if n.starts_with("__anon_") {
                        self.anon
                            .insert(n, (true, syn::Fields::Named(u.fields.clone())));
                    } else {
                        self.unions.insert(n);
                    }
                }
                syn::Item::Type(t) => {
                    self.aliases.insert(t.ident.to_string());
                }
                syn::Item::Const(c) => {
                    self.consts.insert(c.ident.to_string());
                }
                syn::Item::Macro(m) => {
                    let is_named = m.mac.path.is_ident("c_enum");
                    let is_anon = m.mac.path.is_ident("c_anon_enum");
                    if is_named || is_anon {
                        if let Ok(e) = m.mac.parse_body_with(super::parse_enum_body) {
                            if is_named {
                                self.enums.insert(e.ident.to_string());
                            }
                            for v in e.variants {
                                self.consts.insert(v.ident.to_string());
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The C spelling of a named (non-pointer) type.
    fn base(&self, name: &str) -> Result<String, String> {
        if let Some(p) = primitive(name) {
            return Ok(p.to_string());
        }
        if self.structs.contains(name) {
            return Ok(format!("struct {name}"));
        }
        if self.unions.contains(name) {
            return Ok(format!("union {name}"));
        }
        if self.enums.contains(name) {
            return Ok(format!("enum {name}"));
        }
        if self.aliases.contains(name) {
            return Ok(name.to_string());
        }
        if let Some((is_union, fields)) = self.anon.get(name) {
            let kw = if *is_union { "union" } else { "struct" };
            let body = self.fields(fields, "\t\t")?;
            return Ok(format!("{kw} {{\n{body}\t}}"));
        }
        Err(format!("unknown type `{name}`"))
    }

    /// Struct/union tags a declaration mentions, for forward declarations.
    pub fn collect_tags(&self, item: &syn::Item, out: &mut BTreeSet<String>) {
        struct V<'a>(&'a Kinds, &'a mut BTreeSet<String>);
        impl<'ast> syn::visit::Visit<'ast> for V<'_> {
            fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
                if let Some(seg) = p.path.segments.last() {
                    let n = seg.ident.to_string();
                    if self.0.structs.contains(&n) {
                        self.1.insert(format!("struct {n}"));
                    } else if self.0.unions.contains(&n) {
                        self.1.insert(format!("union {n}"));
                    }
                }
                syn::visit::visit_type_path(self, p);
            }
            fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
                let n = s.ident.to_string();
                if !n.starts_with("__anon_") {
                    self.1.insert(format!("struct {n}"));
                }
                syn::visit::visit_item_struct(self, s);
            }
        }
        let mut v = V(self, out);
        syn::visit::Visit::visit_item(&mut v, item);
    }

    /// Renders the members of a struct or union, one per line.
    pub fn fields(&self, fields: &syn::Fields, indent: &str) -> Result<String, String> {
        let mut s = String::new();
        for f in fields.iter() {
            let name = f
                .ident
                .as_ref()
                .ok_or("tuple structs have no C form")?
                .to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
            s.push_str(&super::comment(&super::docs(&f.attrs), indent));
            // A member named `__anon_*` is an anonymous (C11) member.
            let name = if name.starts_with("__anon_") {
                ""
            } else {
                &name
            };
            let decl = self.decl(&f.ty, name, "")?;
            let _ = writeln!(s, "{indent}{};", decl.trim_end());
        }
        Ok(s)
    }

    /// A full C declaration of `name` with Rust type `ty`. `quals` is `const `
    /// when the object itself is const.
    pub fn decl(&self, ty: &syn::Type, name: &str, quals: &str) -> Result<String, String> {
        match ty {
            syn::Type::Ptr(p) => {
                let inner_const = if p.const_token.is_some() {
                    "const "
                } else {
                    ""
                };
                let d = if quals.is_empty() {
                    format!("*{name}")
                } else {
                    format!("*const {name}")
                };
                self.decl(&p.elem, &d, inner_const)
            }
            syn::Type::Array(a) => {
                let len = super::cexpr::expr(&a.len, super::cexpr::Suffix::None, self)?;
                let len = if len == "0" { String::new() } else { len };
                let d = if name.starts_with('*') {
                    format!("({name})[{len}]")
                } else {
                    format!("{name}[{len}]")
                };
                self.decl(&a.elem, &d, quals)
            }
            syn::Type::Path(p) => {
                let seg = p.path.segments.last().ok_or("empty path")?;
                let id = seg.ident.to_string();
                if id == "Option" {
                    if let syn::PathArguments::AngleBracketed(ab) = &seg.arguments {
                        if let Some(syn::GenericArgument::Type(t)) = ab.args.first() {
                            return self.decl(t, name, quals);
                        }
                    }
                    return Err("Option<> without a type".into());
                }
                let base = self.base(&id)?;
                Ok(if name.is_empty() {
                    format!("{quals}{base}")
                } else if name.starts_with('[') {
                    format!("{quals}{base}{name}")
                } else {
                    format!("{quals}{base} {name}")
                })
            }
            syn::Type::BareFn(f) => {
                let params = self.params(
                    f.inputs
                        .iter()
                        .map(|a| (a.name.as_ref().map(|(i, _)| i.to_string()), &a.ty)),
                    f.variadic.is_some(),
                )?;
                let d = format!("(*{name})({params})");
                self.ret(&f.output, &d)
            }
            syn::Type::Tuple(t) if t.elems.is_empty() => Ok(format!("void {name}")),
            syn::Type::Paren(p) => self.decl(&p.elem, name, quals),
            syn::Type::Never(_) => Ok(format!("void {name}")),
            other => Err(format!("unsupported type {other:?}")),
        }
    }

    fn ret(&self, out: &syn::ReturnType, d: &str) -> Result<String, String> {
        match out {
            syn::ReturnType::Default => Ok(format!("void {d}")),
            syn::ReturnType::Type(_, t) => self.decl(t, d, ""),
        }
    }

    fn params<'a>(
        &self,
        params: impl Iterator<Item = (Option<String>, &'a syn::Type)>,
        variadic: bool,
    ) -> Result<String, String> {
        let mut v = Vec::new();
        for (name, ty) in params {
            let name = name.unwrap_or_default();
            let name = if name == "_" { String::new() } else { name };
            let name = name.strip_prefix("r#").map(str::to_string).unwrap_or(name);
            v.push(self.decl(ty, &name, "")?.trim_end().to_string());
        }
        if variadic {
            v.push("...".into());
        }
        if v.is_empty() {
            v.push("void".into());
        }
        Ok(v.join(", "))
    }

    /// The prototype of an `extern "C"` function declaration.
    pub fn prototype(&self, sig: &syn::Signature) -> Result<String, String> {
        let params = self.params(
            sig.inputs.iter().map(|a| match a {
                syn::FnArg::Typed(pt) => {
                    let n = match &*pt.pat {
                        syn::Pat::Ident(i) => Some(i.ident.to_string()),
                        _ => None,
                    };
                    (n, &*pt.ty)
                }
                syn::FnArg::Receiver(_) => unreachable!("no methods in extern blocks"),
            }),
            sig.variadic.is_some(),
        )?;
        self.ret(&sig.output, &format!("{}({params})", sig.ident))
    }
}

//! Rust constant expressions → C preprocessor expressions.

use crate::ctype::Kinds;

/// Integer literal suffix to give every literal in an expression, so that a
/// `u64` flag stays 64-bit in C (`(1ULL << 40)`).
#[derive(Clone, Copy)]
pub enum Suffix {
    None,
    Ull,
    Ll,
    U,
}

/// The right-hand side of `#define NAME ...` for a constant of type `ty`.
pub fn define_value(e: &syn::Expr, ty: &syn::Type, kinds: &Kinds) -> Result<String, String> {
    let suffix = match type_name(ty).as_deref() {
        Some("u64") | Some("fi_addr_t") => Suffix::Ull,
        Some("i64") => Suffix::Ll,
        Some("u32") | Some("c_uint") => Suffix::U,
        _ => Suffix::None,
    };
    if let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::CStr(s),
        ..
    }) = e
    {
        return Ok(format!("{:?}", s.value().to_string_lossy()));
    }
    if let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(s),
        ..
    }) = e
    {
        return Ok(format!("{:?}", s.value()));
    }
    let v = expr(e, suffix, kinds)?;
    // A lone literal or name needs no parentheses; anything else does.
    let bare = v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if bare || (v.starts_with('(') && v.ends_with(')') && balanced_outer(&v)) {
        Ok(v)
    } else {
        Ok(format!("({v})"))
    }
}

fn balanced_outer(v: &str) -> bool {
    let mut depth = 0;
    for (i, c) in v.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 && i != v.len() - 1 {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

fn c_type_of_cast(ty: &syn::Type) -> Result<&'static str, String> {
    Ok(match type_name(ty).as_deref() {
        Some("u64") | Some("fi_addr_t") => "uint64_t",
        Some("i64") => "int64_t",
        Some("u32") => "uint32_t",
        Some("i32") => "int32_t",
        Some("u16") => "uint16_t",
        Some("u8") => "uint8_t",
        Some("usize") | Some("size_t") => "size_t",
        Some("isize") | Some("ssize_t") => "ssize_t",
        Some("c_int") => "int",
        Some("c_uint") => "unsigned int",
        Some("c_long") => "long",
        Some("c_ulong") => "unsigned long",
        other => return Err(format!("cannot cast to {other:?} in a constant")),
    })
}

/// Translates one expression.
pub fn expr(e: &syn::Expr, suffix: Suffix, kinds: &Kinds) -> Result<String, String> {
    Ok(match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => {
                let digits = i.base10_digits();
                let text = i.token().to_string();
                let body = text.trim_end_matches(i.suffix()).replace('_', "");
                let body = if body.starts_with("0x") || body.starts_with("0X") {
                    body
                } else {
                    digits.to_string()
                };
                let sfx = match suffix {
                    Suffix::None => "",
                    Suffix::Ull => "ULL",
                    Suffix::Ll => "LL",
                    Suffix::U => "U",
                };
                format!("{body}{sfx}")
            }
            syn::Lit::Bool(b) => if b.value { "1" } else { "0" }.to_string(),
            other => return Err(format!("unsupported literal {other:?}")),
        },
        syn::Expr::Paren(p) => format!("({})", expr(&p.expr, suffix, kinds)?),
        syn::Expr::Group(g) => expr(&g.expr, suffix, kinds)?,
        syn::Expr::Unary(u) => {
            let inner = expr(&u.expr, suffix, kinds)?;
            match u.op {
                syn::UnOp::Neg(_) => format!("-{inner}"),
                syn::UnOp::Not(_) => format!("~{inner}"),
                _ => return Err("unsupported unary operator".into()),
            }
        }
        syn::Expr::Binary(b) => {
            let op = match b.op {
                syn::BinOp::Add(_) => "+",
                syn::BinOp::Sub(_) => "-",
                syn::BinOp::Mul(_) => "*",
                syn::BinOp::Div(_) => "/",
                syn::BinOp::Rem(_) => "%",
                syn::BinOp::Shl(_) => "<<",
                syn::BinOp::Shr(_) => ">>",
                syn::BinOp::BitAnd(_) => "&",
                syn::BinOp::BitOr(_) => "|",
                syn::BinOp::BitXor(_) => "^",
                _ => return Err("unsupported binary operator".into()),
            };
            // The shift count keeps its plain type; only the shifted value
            // decides the width.
            let rhs_suffix = if op == "<<" || op == ">>" {
                Suffix::None
            } else {
                suffix
            };
            format!(
                "{} {op} {}",
                expr(&b.left, suffix, kinds)?,
                expr(&b.right, rhs_suffix, kinds)?
            )
        }
        syn::Expr::Cast(c) => {
            let t = c_type_of_cast(&c.ty)?;
            format!("(({t}) {})", expr(&c.expr, Suffix::None, kinds)?)
        }
        syn::Expr::Path(p) => {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            match segs
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice()
            {
                ["u64", "MAX"] => "UINT64_MAX".into(),
                ["u32", "MAX"] => "UINT32_MAX".into(),
                ["usize", "MAX"] | ["size_t", "MAX"] => "SIZE_MAX".into(),
                ["c_int", "MAX"] | ["i32", "MAX"] => "INT_MAX".into(),
                ["libc", name] => (*name).to_string(),
                [name] => {
                    if !kinds.consts.contains(*name) {
                        return Err(format!("constant `{name}` is not defined in src/abi"));
                    }
                    (*name).to_string()
                }
                other => return Err(format!("unsupported path {other:?}")),
            }
        }
        other => return Err(format!("unsupported constant expression {other:?}")),
    })
}

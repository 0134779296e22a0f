//! The pure crates (`wujie-protocol`, `wujie-term`) do no I/O and never panic on input: no file,
//! network, process, environment, thread, standard stream or clock access, no printing, and no
//! `unwrap`/`expect` outside their tests.

use crate::Violation;
use quote::ToTokens;
use syn::visit_mut::{self, VisitMut};

pub const PURE_CRATES: &[&str] = &["wujie-protocol", "wujie-term"];

/// Path prefixes that reach the operating system. Time is a parameter in the pure crates.
const IO_PATHS: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::thread",
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "std::os",
    "std::time::Instant",
    "std::time::SystemTime",
    "Instant::now",
    "SystemTime::now",
    "tokio",
];

const IO_MACROS: &[&str] = &["println", "eprintln", "print", "eprint", "dbg"];

const PANICKING_METHODS: &[&str] = &["unwrap", "expect"];

/// Functions allowed an `expect`, by file and name: each encodes the crate's own derived types
/// of strings, numbers and JSON values with serde_json, which fails only for a map with
/// non-string keys or a `Serialize` impl that returns an error — neither can occur, whatever
/// the input.
const INFALLIBLE_ENCODERS: &[(&str, &str)] = &[
    ("src/control.rs", "encode_frame"),
    ("src/event.rs", "encode_line"),
];

/// What in `file` (the source of a pure crate's library) breaks the rule.
pub fn purity_violations(place: &str, file: &syn::File) -> Vec<Violation> {
    let allowed = INFALLIBLE_ENCODERS
        .iter()
        .filter(|(path, _)| place.ends_with(path))
        .map(|(_, function)| *function)
        .collect();
    let mut visitor = PurityVisitor {
        allowed,
        ..PurityVisitor::default()
    };
    let mut file = file.clone();
    visitor.visit_file_mut(&mut file);
    visitor
        .found
        .into_iter()
        .map(|message| Violation {
            place: place.to_string(),
            message,
        })
        .collect()
}

#[derive(Default)]
struct PurityVisitor {
    found: Vec<String>,
    /// Functions of this file that may `expect` (see [`INFALLIBLE_ENCODERS`]).
    allowed: Vec<&'static str>,
    /// The function being visited, when it is one of `allowed`.
    in_allowed: bool,
}

/// `#[cfg(test)]` or `#[test]`: code that only tests build.
pub(crate) fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        path.is_ident("test")
            || (path.is_ident("cfg")
                && attr
                    .parse_args::<syn::Ident>()
                    .is_ok_and(|arg| arg == "test"))
    })
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

impl PurityVisitor {
    fn check_path(&mut self, text: &str) {
        let reaches_os = IO_PATHS
            .iter()
            .any(|p| text == *p || text.starts_with(&format!("{p}::")));
        if reaches_os {
            self.found.push(format!(
                "`{text}` is I/O; a pure crate takes it as a parameter"
            ));
        }
    }
}

impl VisitMut for PurityVisitor {
    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => return visit_mut::visit_item_mut(self, item),
        };
        if !is_test_only(attrs) {
            visit_mut::visit_item_mut(self, item);
        }
    }

    fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            let outer = self.in_allowed;
            self.in_allowed = self.allowed.iter().any(|name| f.sig.ident == name);
            visit_mut::visit_impl_item_fn_mut(self, f);
            self.in_allowed = outer;
        }
    }

    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        if !self.in_allowed && PANICKING_METHODS.iter().any(|m| call.method == m) {
            self.found.push(format!(
                "`.{}()` on `{}` can panic; return an error instead",
                call.method,
                call.receiver.to_token_stream()
            ));
        }
        visit_mut::visit_expr_method_call_mut(self, call);
    }

    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        self.check_path(&path_text(path));
        visit_mut::visit_path_mut(self, path);
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        if IO_MACROS.iter().any(|m| mac.path.is_ident(m)) {
            self.found.push(format!(
                "`{}!` prints; a pure crate returns text",
                path_text(&mac.path)
            ));
        }
        visit_mut::visit_macro_mut(self, mac);
    }

    fn visit_item_use_mut(&mut self, item: &mut syn::ItemUse) {
        let mut paths = Vec::new();
        flatten_use(&item.tree, String::new(), &mut paths);
        for path in paths {
            self.check_path(&path);
        }
    }
}

/// `use a::{b, c::d}` → `a::b`, `a::c::d`.
fn flatten_use(tree: &syn::UseTree, prefix: String, out: &mut Vec<String>) {
    let join = |name: &syn::Ident| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}::{name}")
        }
    };
    match tree {
        syn::UseTree::Path(p) => flatten_use(&p.tree, join(&p.ident), out),
        syn::UseTree::Name(n) => out.push(join(&n.ident)),
        syn::UseTree::Rename(r) => out.push(join(&r.ident)),
        syn::UseTree::Glob(_) => out.push(prefix),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix.clone(), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(source: &str) -> Vec<String> {
        let file = syn::parse_file(source).expect("test source parses");
        purity_violations("x.rs", &file)
            .into_iter()
            .map(|v| v.message)
            .collect()
    }

    #[test]
    fn io_clock_printing_and_panics_are_found() {
        let found = check(
            "use std::fs::File;
             use std::{io::stdout, time::Instant};
             fn f(x: Option<u8>) -> u8 {
                 let _ = std::env::var(\"X\");
                 let _ = Instant::now();
                 println!(\"x\");
                 x.expect(\"some\") + x.unwrap()
             }",
        );
        assert_eq!(found.len(), 8, "{found:#?}");
        assert!(found.iter().any(|m| m.contains("`std::fs::File` is I/O")));
        assert!(found.iter().any(|m| m.contains("`std::io::stdout` is I/O")));
        assert!(found.iter().any(|m| m.contains("`.unwrap()` on `x`")));
    }

    #[test]
    fn test_code_and_pure_code_pass() {
        let found = check(
            "fn f(x: Option<u8>) -> u8 { x.unwrap_or(0) }
             struct S;
             impl S { #[cfg(test)] fn t(&self) { None::<u8>.unwrap(); } }
             #[cfg(test)]
             mod tests { use std::fs; #[test] fn t() { Some(1).unwrap(); fs::read(\"x\").ok(); } }",
        );
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn only_the_listed_encoders_may_expect() {
        let source = "impl E { fn encode_line(&self) -> Vec<u8> { f().expect(\"x\") }
                      fn other(&self) -> Vec<u8> { f().expect(\"x\") } }";
        let file = syn::parse_file(source).expect("test source parses");
        let in_event = purity_violations("wujie-protocol/src/event.rs", &file);
        assert_eq!(in_event.len(), 1, "{in_event:#?}");
        assert_eq!(
            purity_violations("wujie-protocol/src/lines.rs", &file).len(),
            2
        );
    }

    #[test]
    fn cfg_not_test_is_not_test_code() {
        let found = check("#[cfg(not(test))] fn f() { Some(1).unwrap(); }");
        assert_eq!(found.len(), 1, "{found:#?}");
    }
}

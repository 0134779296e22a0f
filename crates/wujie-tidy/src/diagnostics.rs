//! Product code writes its diagnostics with `wujie_process::stderr_line!`, never with
//! `eprintln!` or `eprint!`: those panic when stderr cannot be written (its reader went away,
//! `wujie run … 2>&1 | head -1`), which would stop a run half-way with its events unsent.
//! Crates that only serve tests may use them.

use crate::Violation;
use crate::purity::is_test_only;
use quote::ToTokens;

/// Crates whose code only runs inside tests, where a panic on a closed stderr hurts no one.
pub const TEST_SUPPORT_CRATES: &[&str] = &[
    "wujie-mockllm",
    "wujie-pgtest",
    "wujie-require",
    "wujie-testkit",
    "wujie-tidy",
];

const PANICKING_PRINTS: &[&str] = &["eprintln", "eprint"];

/// What in `file` (product source of a crate not in [`TEST_SUPPORT_CRATES`]) breaks the rule.
pub fn panicking_print_violations(place: &str, file: &syn::File) -> Vec<Violation> {
    let mut found = Vec::new();
    scan_items(&file.items, &mut found);
    found
        .into_iter()
        .map(|name| Violation {
            place: place.to_string(),
            message: format!(
                "`{name}!` panics when stderr is closed; write diagnostics with \
                 `wujie_process::stderr_line!`"
            ),
        })
        .collect()
}

fn scan_items(items: &[syn::Item], found: &mut Vec<String>) {
    for item in items {
        match item {
            syn::Item::Mod(m) if is_test_only(&m.attrs) => {}
            syn::Item::Fn(f) if is_test_only(&f.attrs) => {}
            syn::Item::Mod(m) => {
                if let Some((_, content)) = &m.content {
                    scan_items(content, found);
                }
            }
            syn::Item::Impl(i) if !is_test_only(&i.attrs) => {
                for member in &i.items {
                    let test_only =
                        matches!(member, syn::ImplItem::Fn(f) if is_test_only(&f.attrs));
                    if !test_only {
                        scan_tokens(member.to_token_stream(), found);
                    }
                }
            }
            syn::Item::Impl(_) => {}
            other => scan_tokens(other.to_token_stream(), found),
        }
    }
}

/// Finds `NAME !` in tokens, also inside other macros' arguments (which syn does not parse).
fn scan_tokens(tokens: proc_macro2::TokenStream, found: &mut Vec<String>) {
    let mut previous: Option<String> = None;
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == '!' => {
                if let Some(name) = previous.take()
                    && PANICKING_PRINTS.contains(&name.as_str())
                {
                    found.push(name);
                }
            }
            proc_macro2::TokenTree::Ident(ident) => previous = Some(ident.to_string()),
            proc_macro2::TokenTree::Group(group) => {
                previous = None;
                scan_tokens(group.stream(), found);
            }
            proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => {
                previous = None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(source: &str) -> usize {
        let file = syn::parse_file(source).expect("test source parses");
        panicking_print_violations("src/x.rs", &file).len()
    }

    #[test]
    fn eprintln_and_eprint_in_product_code_are_refused_also_inside_other_macros() {
        assert_eq!(found("fn a() { eprintln!(\"x\"); }"), 1);
        assert_eq!(found("fn a() { std::eprint!(\"x\"); }"), 1);
        assert_eq!(
            found("async fn a() { tokio::select! { _ = f() => { eprintln!(\"x\") } } }"),
            1
        );
        assert_eq!(found("impl A { fn a(&self) { eprintln!(\"x\"); } }"), 1);
    }

    #[test]
    fn tests_the_safe_macro_and_lookalikes_pass() {
        assert_eq!(
            found(
                "fn a() { wujie_process::stderr_line!(\"x\"); let eprintln = 1; println!(\"{eprintln}\"); }
                 #[cfg(test)] mod tests { fn b() { eprintln!(\"x\"); } }
                 #[test] fn c() { eprintln!(\"x\"); }
                 impl A { #[cfg(test)] fn d() { eprintln!(\"x\"); } }"
            ),
            0
        );
    }
}

//! A test skips only through a `require…` helper. Those helpers (built on `wujie-require`)
//! say what is missing and fail instead of skipping where `WUJIE_REQUIRE_ALL` is set, so a CI
//! machine without a browser or a database cannot pass by running fewer tests. An early
//! `return` written in a test itself is a skip that nobody sees: the rule refuses it unless it
//! is the `else { return }` of a `let` whose value comes from a `require…` call.

use crate::Violation;
use quote::ToTokens;
use syn::visit_mut::{self, VisitMut};

/// What in `file` (a test source) breaks the rule.
pub fn early_return_violations(place: &str, file: &syn::File) -> Vec<Violation> {
    let mut tests = TestFinder::default();
    tests.visit_file_mut(&mut file.clone());
    tests
        .found
        .into_iter()
        .map(|test| Violation {
            place: place.to_string(),
            message: format!(
                "test `{test}` returns early without a `require…` helper: skip through one \
                 (`let Some(x) = require…(…) else {{ return }};`), which fails under \
                 WUJIE_REQUIRE_ALL, or assert instead"
            ),
        })
        .collect()
}

/// `#[test]`, `#[tokio::test]`, `#[tokio::test(flavor = …)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "test")
    })
}

#[derive(Default)]
struct TestFinder {
    /// Tests with an early return of their own.
    found: Vec<String>,
}

impl VisitMut for TestFinder {
    fn visit_item_fn_mut(&mut self, item: &mut syn::ItemFn) {
        if is_test(&item.attrs) {
            let mut returns = ReturnFinder::default();
            returns.visit_block_mut(&mut item.block);
            if returns.found {
                self.found.push(item.sig.ident.to_string());
            }
        }
        visit_mut::visit_item_fn_mut(self, item);
    }
}

#[derive(Default)]
struct ReturnFinder {
    found: bool,
}

/// Whether `expr` calls a function or method whose name starts with `require`.
fn calls_a_require_helper(expr: &syn::Expr) -> bool {
    fn in_tokens(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => ident.to_string().starts_with("require"),
            proc_macro2::TokenTree::Group(group) => in_tokens(group.stream()),
            _ => false,
        })
    }
    in_tokens(expr.to_token_stream())
}

impl VisitMut for ReturnFinder {
    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        if let Some(init) = &mut local.init
            && init.diverge.is_some()
            && calls_a_require_helper(&init.expr)
        {
            // The `else` is the skip of a `require…` helper; only the value can hide a return.
            self.visit_expr_mut(&mut init.expr);
            return;
        }
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_expr_return_mut(&mut self, _: &mut syn::ExprReturn) {
        self.found = true;
    }

    // A closure's, an async block's or a nested function's `return` ends that, not the test.
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}
    fn visit_item_fn_mut(&mut self, _: &mut syn::ItemFn) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn violations(source: &str) -> Vec<String> {
        let file = syn::parse_file(source).expect("test source parses");
        early_return_violations("tests/x.rs", &file)
            .into_iter()
            .map(|v| v.message.split('`').nth(1).unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_bare_early_return_in_a_test_is_refused() {
        let found = violations(
            "#[test] fn quiet() { if !std::path::Path::new(\"/usr/bin/chromium\").exists() { return; } }
             #[tokio::test(flavor = \"multi_thread\")] async fn quiet_too() { let Some(x) = find() else { return }; }
             #[test] fn nested() { for _ in 0..2 { match 1 { _ => return } } }",
        );
        assert_eq!(found, ["quiet", "quiet_too", "nested"]);
    }

    #[test]
    fn a_skip_through_a_require_helper_and_returns_of_closures_and_helpers_pass() {
        let found = violations(
            "#[test] fn browser() { let Some(chromium) = wujie_require::require(\"chromium\") else { return; }; }
             #[test] fn agent() { let Some(run) = Team::require_started(2).unwrap() else { return }; }
             #[test] fn closure() { let f = |x: u8| { if x > 1 { return 1; } 0 }; f(2); }
             #[tokio::test] async fn task() { tokio::spawn(async move { return 1; }); }
             #[test] fn inner() { fn helper() -> u8 { return 1; } helper(); }
             fn not_a_test() { return; }",
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_return_hidden_in_the_value_of_a_require_let_is_still_found() {
        let found = violations(
            "#[test] fn sneaky() { let Some(x) = require_it(loop { return; }) else { return }; }",
        );
        assert_eq!(found, ["sneaky"]);
    }
}

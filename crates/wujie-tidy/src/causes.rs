//! An error shows each cause once. Whoever prints an error (the CLI, a log line) prints its
//! message and then the chain `source()` returns, so a `thiserror` variant that writes its
//! source field into its message (`#[error("cannot read: {source}")]`) and also returns it as
//! `source()` (`#[source]`, `#[from]`, or a field named `source`) shows that cause twice. The
//! rule refuses it: the message says what was being done, in our words, and the cause comes
//! once, from the chain. `#[error(transparent)]` is the way to pass a cause on unchanged.

use crate::Violation;
use proc_macro2::{TokenStream, TokenTree};
use syn::visit_mut::{self, VisitMut};

/// What in `file` (a crate's source) breaks the rule.
pub fn repeated_cause_violations(place: &str, file: &syn::File) -> Vec<Violation> {
    let mut finder = RepeatFinder::default();
    finder.visit_file_mut(&mut file.clone());
    finder
        .found
        .into_iter()
        .map(|(name, field)| Violation {
            place: place.to_string(),
            message: format!(
                "`{name}` writes its cause `{field}` into its message and returns it from \
                 `source()` as well, so the cause is shown twice: let the message say what was \
                 being done and leave the cause to `source()` (or use `#[error(transparent)]`)"
            ),
        })
        .collect()
}

#[derive(Default)]
struct RepeatFinder {
    /// (type or `Type::Variant`, the field shown twice).
    found: Vec<(String, String)>,
}

impl VisitMut for RepeatFinder {
    fn visit_item_struct_mut(&mut self, item: &mut syn::ItemStruct) {
        if derives_error(&item.attrs) {
            self.check(item.ident.to_string(), &item.attrs, &item.fields);
        }
        visit_mut::visit_item_struct_mut(self, item);
    }

    fn visit_item_enum_mut(&mut self, item: &mut syn::ItemEnum) {
        if derives_error(&item.attrs) {
            for variant in &item.variants {
                let name = format!("{}::{}", item.ident, variant.ident);
                self.check(name, &variant.attrs, &variant.fields);
            }
        }
        visit_mut::visit_item_enum_mut(self, item);
    }
}

impl RepeatFinder {
    fn check(&mut self, name: String, attrs: &[syn::Attribute], fields: &syn::Fields) {
        let Some(shown) = attrs
            .iter()
            .find(|a| a.path().is_ident("error"))
            .and_then(|a| a.meta.require_list().ok())
            .map(|list| fields_shown(list.tokens.clone()))
        else {
            return;
        };
        for field in source_fields(fields) {
            if shown.contains(&field) {
                self.found.push((name.clone(), field));
            }
        }
    }
}

/// `#[derive(…, Error, …)]`, whatever path names the derive (`thiserror::Error`).
fn derives_error(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| {
                paths
                    .iter()
                    .any(|p| p.segments.last().is_some_and(|s| s.ident == "Error"))
            })
        })
}

/// The fields `source()` returns: marked `#[source]` or `#[from]`, or named `source`; by name,
/// or by position for a tuple variant (`0`).
fn source_fields(fields: &syn::Fields) -> Vec<String> {
    fields
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.attrs
                .iter()
                .any(|a| a.path().is_ident("source") || a.path().is_ident("from"))
                || f.ident.as_ref().is_some_and(|i| i == "source")
        })
        .map(|(index, f)| {
            f.ident
                .as_ref()
                .map_or_else(|| index.to_string(), ToString::to_string)
        })
        .collect()
}

/// The fields an `#[error(…)]` message shows: the names and positions in its format string's
/// placeholders (`{source}`, `{0:?}`), and the fields its extra arguments name (`.source`,
/// `.0`). `transparent` shows none of its own.
fn fields_shown(tokens: TokenStream) -> Vec<String> {
    let mut trees = tokens.into_iter().peekable();
    let mut shown = Vec::new();
    if let Some(TokenTree::Literal(literal)) = trees.peek()
        && let Ok(text) = syn::parse_str::<syn::LitStr>(&literal.to_string())
    {
        shown.extend(placeholders(&text.value()));
        trees.next();
    }
    fields_named(trees.collect(), &mut shown);
    shown
}

/// `.field` and `.0` anywhere in the message's extra arguments.
fn fields_named(tokens: TokenStream, out: &mut Vec<String>) {
    let mut after_dot = false;
    for tree in tokens {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == '.' => {
                after_dot = true;
                continue;
            }
            TokenTree::Ident(ident) if after_dot => out.push(ident.to_string()),
            TokenTree::Literal(index) if after_dot => out.push(index.to_string()),
            TokenTree::Group(group) => fields_named(group.stream(), out),
            _ => {}
        }
        after_dot = false;
    }
}

/// The arguments of a format string's placeholders: `"a {x} {0:?} {{y}}"` → `x`, `0`.
fn placeholders(format: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '{' => {
                let inside: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let argument = inside.split(':').next().unwrap_or_default().trim();
                if !argument.is_empty() {
                    found.push(argument.to_string());
                }
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeated(source: &str) -> Vec<String> {
        let file = syn::parse_file(source).expect("test source parses");
        repeated_cause_violations("src/x.rs", &file)
            .into_iter()
            .map(|v| v.message.split('`').nth(1).unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_source_written_into_the_message_is_refused() {
        let found = repeated(
            r#"#[derive(Debug, thiserror::Error)]
            pub enum E {
                #[error("cannot read {path}: {source}")]
                Read { path: String, source: std::io::Error },
                #[error("database: {0}")]
                Db(#[from] sqlx::Error),
                #[error("bad manifest: {0:?}")]
                Manifest(#[source] serde_json::Error),
                #[error("cannot parse {}: {}", .path, .cause)]
                Parse { path: String, #[source] cause: syn::Error },
                #[error("{0}")]
                Bare(#[from] std::fmt::Error),
            }
            mod inner {
                #[derive(Debug, Error)]
                #[error("cannot start: {source:#}")]
                pub struct Start { #[from] source: std::io::Error }
            }"#,
        );
        assert_eq!(
            found,
            [
                "E::Read",
                "E::Db",
                "E::Manifest",
                "E::Parse",
                "E::Bare",
                "Start"
            ]
        );
    }

    #[test]
    fn a_cause_shown_once_passes() {
        let found = repeated(
            r#"#[derive(Debug, thiserror::Error)]
            pub enum E {
                #[error("cannot read {path}")]
                Read { path: String, source: std::io::Error },
                #[error("the database failed")]
                Db(#[from] sqlx::Error),
                #[error(transparent)]
                Other(#[from] std::fmt::Error),
                #[error("{0} is not a provider name; {{source}} is not a field")]
                Name(String),
                #[error("the server said: {message}")]
                Refused { message: String, status: u16 },
            }
            #[derive(Debug)]
            enum NotAnError { A(#[source] u8) }
            #[derive(Debug, thiserror::Error)]
            #[error("cannot write {0}")]
            pub struct Write(String, #[source] std::io::Error);"#,
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn placeholders_are_read_as_format_strings_read_them() {
        assert_eq!(placeholders("a {x} {0:?} {{y}} {} {z:#}"), ["x", "0", "z"]);
    }
}

//! Workspace rules that the compiler cannot see, checked as tests (`tests/tidy.rs`), in the
//! spirit of rust-analyzer's tidy tests:
//!
//! - a dependency that one crate owns (sqlx: the store, axum: the server, clap and anyhow: the
//!   binary) is imported nowhere else, and the parts of local runs (built-in providers,
//!   terminal host, delivery) do not depend on each other or on the flows ([`boundaries`]);
//! - the pure crates do no I/O and do not `unwrap`/`expect` outside their tests ([`purity`]);
//! - every declared dependency is used, and a `[dependencies]` entry only tests use is a
//!   dev-dependency ([`usage`]);
//! - product code writes diagnostics with `stderr_line!`, never `eprintln!`, which panics on a
//!   closed stderr ([`diagnostics`]);
//! - a test skips only through a `require…` helper, which fails under `WUJIE_REQUIRE_ALL`
//!   ([`skips`]);
//! - an error of ours shows its cause once: never both in its message and as `source()`
//!   ([`causes`]).
//!
//! Each check is a function over a crate's manifest or source text, so its own unit tests show
//! that it fails on code that breaks the rule. [`workspace`] loads the real crates.

pub mod boundaries;
pub mod causes;
pub mod diagnostics;
pub mod purity;
pub mod skips;
pub mod usage;
pub mod workspace;

use std::fmt;

/// One broken rule: where, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The crate, and the file when the rule is about source.
    pub place: String,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// Why the workspace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TidyError {
    #[error("running `cargo metadata`")]
    Metadata(#[source] std::io::Error),
    #[error("`cargo metadata` failed: {0}")]
    MetadataFailed(String),
    #[error("reading `cargo metadata`'s output")]
    MetadataJson(#[source] serde_json::Error),
    #[error("reading {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing {path}")]
    Parse {
        path: String,
        #[source]
        source: syn::Error,
    },
}

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_tidy;
#[cfg(test)]
#[path = "../tests/tidy.rs"]
mod suite;

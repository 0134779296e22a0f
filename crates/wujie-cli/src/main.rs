//! The `wujie` binary: parses arguments, calls the library crates, prints results.

fn main() {}

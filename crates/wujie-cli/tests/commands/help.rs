//! What `wujie --help` and every subcommand's `--help` say, pinned as one snapshot: a flag
//! renamed, a default changed or an example dropped shows up in review.

use wujie_testkit::*;

/// The subcommands a help text lists under "Commands:", without `help` itself.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| line.trim() != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_command_has_help() {
    let env = Env::new();
    let mut pages = Vec::new();
    let mut pending = vec![Vec::<String>::new()];
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = env.ok(&args);
        for name in subcommands(&help).into_iter().rev() {
            let mut sub = path.clone();
            sub.push(name);
            pending.push(sub);
        }
        pages.push(format!("$ wujie {}\n{help}", args.join(" ")));
    }
    assert!(pages.len() > 20, "only {} help pages", pages.len());
    let _filters = env.snapshot_filters().bind_to_scope();
    insta::assert_snapshot!("help", pages.join("\n"));
}

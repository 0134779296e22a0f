//! What `wujie` gives a shell and `man`: completion scripts that a real shell loads and
//! completes with, manual pages, and a version that names its commit.

use std::process::Command;

use wujie_testkit::*;

/// What bash's completion offers for the words typed so far (the last one being completed),
/// from the script `wujie completions bash` prints, sourced by a bash of its own.
fn bash_completes(env: &Env, typed: &[&str]) -> Vec<String> {
    wujie_require::require("bash").expect("bash");
    let script = env.work.path().join("wujie.bash");
    std::fs::write(&script, env.ok(&["completions", "bash"])).unwrap();
    let words = typed
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let line = typed.join(" ");
    let program = format!(
        "source '{}'\nCOMP_WORDS=({words})\nCOMP_CWORD={}\nCOMP_LINE='{line}'\n\
         COMP_POINT=${{#COMP_LINE}}\n_wujie wujie '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        typed.len() - 1,
        typed[typed.len() - 1],
        typed[typed.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_commands_and_their_subcommands() {
    let env = Env::new();
    assert_eq!(bash_completes(&env, &["wujie", "is"]), ["issue"]);
    let issue = bash_completes(&env, &["wujie", "issue", ""]);
    for sub in ["create", "list", "show"] {
        assert!(issue.iter().any(|w| w == sub), "{sub} not in {issue:?}");
    }
    assert_eq!(
        bash_completes(&env, &["wujie", "completions", "fi"]),
        ["fish"]
    );
}

#[test]
fn every_shell_gets_a_script_and_a_wrong_one_is_named() {
    let env = Env::new();
    for (shell, mark) in [
        ("bash", "complete -F _wujie"),
        ("zsh", "#compdef wujie"),
        ("fish", "complete -c wujie"),
        ("elvish", "edit:completion:arg-completer[wujie]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = env.ok(&["completions", shell]);
        assert!(script.contains(mark), "{shell}: no {mark:?} in\n{script}");
    }
    let err = env.fails(&["completions", "tcsh"]);
    assert!(
        err.contains("invalid value 'tcsh'") && err.contains("bash, elvish, fish, powershell, zsh"),
        "{err}"
    );
}

#[test]
fn completions_and_manual_pages_need_no_profile() {
    let env = Env::new();
    env.ok(&["completions", "bash"]);
    env.ok(&["man"]);
    let left: Vec<_> = std::fs::read_dir(env.home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "made for a command that needs no profile: {left:?}"
    );
}

#[test]
fn manual_pages_are_printed_or_written_one_per_command() {
    let env = Env::new();
    let page = env.ok(&["man"]);
    assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{page}");
    assert!(page.contains(".TH wujie 1"), "{page}");
    assert!(page.contains("issue"), "{page}");

    let dir = env.work.path().join("man1");
    std::fs::create_dir(&dir).unwrap();
    let listed = env.ok(&["man", "--dir", dir.to_str().unwrap()]);
    for name in [
        "wujie.1",
        "wujie-issue.1",
        "wujie-issue-list.1",
        "wujie-run.1",
    ] {
        let path = dir.join(name);
        assert!(path.is_file(), "{name} not written; listed:\n{listed}");
        assert!(listed.contains(&*path.to_string_lossy()), "{listed}");
    }
    let json: Vec<String> =
        serde_json::from_str(&env.ok(&["man", "--dir", dir.to_str().unwrap(), "--output", "json"]))
            .unwrap();
    assert!(json.iter().any(|p| p.ends_with("wujie-run.1")), "{json:?}");

    let missing = env.work.path().join("no-such-dir");
    let err = env.fails(&["man", "--dir", missing.to_str().unwrap()]);
    assert!(err.contains("is not a directory; create it first"), "{err}");
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let env = Env::new();
    let version = env.ok(&["--version"]);
    let words: Vec<&str> = version.split_whitespace().collect();
    let [name, number, sha, date] = words[..] else {
        panic!("{version:?}")
    };
    assert_eq!(name, "wujie");
    assert_eq!(number, env!("CARGO_PKG_VERSION"));
    let sha = sha
        .strip_prefix('(')
        .unwrap_or_else(|| panic!("{version:?}"));
    assert!(
        sha.len() == 10 && sha.chars().all(|c| c.is_ascii_hexdigit()),
        "{version:?}"
    );
    let date = date
        .strip_suffix(')')
        .unwrap_or_else(|| panic!("{version:?}"));
    assert!(
        date.len() == 10 && date.chars().filter(|c| *c == '-').count() == 2,
        "{version:?}"
    );
}

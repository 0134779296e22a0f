//! The README's "Using it" block, run line by line with bash as a user would paste it: from a
//! directory holding the repository's samples, on a fresh profile and after `wujie demo`, with
//! the `wujie` under test first on PATH. A line whose comment starts with `needs` names what it
//! needs beyond that; the test supplies what it can (pi and the agents that speak ACP, pointed
//! at the mock model) and says why it leaves out the rest (a terminal, a server of its own), so
//! the README cannot drift from what the commands do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wujie_mockllm::agents::{Agent, AgentHome, agents_dir};
use wujie_mockllm::{MockLlm, Script};
use wujie_testkit::*;

/// The need of the branch lines: pi on PATH and model settings pointing at the mock.
const PI_AND_MODEL: &str = "needs pi and model settings";

/// The variable the model settings name as holding the key (the mock takes any key).
const KEY_VARIABLE: &str = "WUJIE_README_MODEL_KEY";

/// One line of the block, numbered as in README.md.
#[derive(Debug)]
struct Line {
    number: usize,
    text: String,
    /// The line's comment when it starts with `needs`.
    needs: Option<String>,
}

/// The lines of the ```sh block under "## Using it", blank lines left out.
fn using_it_block() -> Vec<Line> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let mut lines = readme.lines().enumerate();
    lines
        .by_ref()
        .find(|(_, l)| *l == "## Using it")
        .expect("README.md has a \"## Using it\" section");
    lines
        .by_ref()
        .find(|(_, l)| *l == "```sh")
        .expect("\"Using it\" has a ```sh block");
    lines
        .take_while(|(_, l)| *l != "```")
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Line {
            number: i + 1,
            text: l.to_owned(),
            needs: l
                .split_once(" # ")
                .map(|(_, comment)| comment.trim())
                .filter(|comment| comment.starts_with("needs "))
                .map(str::to_owned),
        })
        .collect()
}

/// A bash script running `lines` (numbered as in README.md) in order, stopping at the first
/// failure and naming its line.
fn script(lines: &[(usize, String)]) -> String {
    let mut script = String::from(
        "set -euo pipefail\ntrap 'echo \"README.md line $README_LINE failed\" >&2' ERR\n",
    );
    for (number, line) in lines {
        script.push_str(&format!("README_LINE={number}\n{line}\n"));
    }
    script
}

/// The agent a line's `needs AGENT …` names when it speaks ACP itself (as
/// [`AgentHome::acp`] knows them), so that the line runs headless against the mock.
fn acp_agent(needs: &str) -> Option<Agent> {
    let name = needs.strip_prefix("needs ")?.split_whitespace().next()?;
    Agent::from_name(name).filter(|agent| {
        matches!(
            agent,
            Agent::Gemini | Agent::Grok | Agent::Hermes | Agent::Opencode
        )
    })
}

/// `line` in a subshell whose HOME and environment point its agent at the mock model.
fn in_agent_home(home: &AgentHome, line: &str) -> String {
    let mut exports = format!("export HOME={}", quoted(&home.home().to_string_lossy()));
    for (name, value) in home.envs() {
        exports.push_str(&format!(" {name}={}", quoted(value)));
    }
    format!("({exports}\n{line}\n)")
}

/// `text` as one bash word.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The model the agent lines use: the mock; `settings` are what `branch open` reads.
struct Model {
    runtime: tokio::runtime::Runtime,
    mock: MockLlm,
}

impl Model {
    fn start() -> Model {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let mock = runtime
            .block_on(MockLlm::start(Script::default()))
            .expect("the mock model server starts");
        Model { runtime, mock }
    }

    fn settings(&self) -> [(&'static str, String); 5] {
        [
            ("WUJIE_LLM_BASE_URL", self.mock.v1_url()),
            ("WUJIE_LLM_API", "openai-completions".to_owned()),
            ("WUJIE_LLM_MODEL", "mock-model".to_owned()),
            ("WUJIE_LLM_API_KEY_ENV", KEY_VARIABLE.to_owned()),
            (KEY_VARIABLE, "any".to_owned()),
        ]
    }

    fn answered(&self) -> usize {
        self.mock
            .requests()
            .iter()
            .filter(|r| r.is_model_request())
            .count()
    }

    fn stop(self) {
        self.runtime.block_on(self.mock.shutdown());
    }
}

/// Which of the lines that need an agent ran.
struct Ran {
    pi: bool,
    acp: usize,
}

/// Runs the block in `env` (its profile, its work dir made a git repository with the samples);
/// with `agents`, also the lines whose agent this test can point at the mock.
fn run_the_block(env: &Env, agents: bool) -> Ran {
    wujie_require::require("bash").expect("bash");
    wujie_require::require("git").expect("git");
    wujie_require::require("jq").expect("jq");
    wujie_require::require("python3").expect("python3 (the sample adapters)");
    let work = env.work.path();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(work)
        .status()
        .expect("git runs");
    assert!(git.success(), "git init failed");
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for samples in ["examples", "localrun-providers"] {
        std::os::unix::fs::symlink(repository.join(samples), work.join(samples)).unwrap();
    }

    let mut ran = Ran { pi: false, acp: 0 };
    let model = Model::start();
    // The agents' homes (temp dirs) live until the block has run.
    let mut homes = Vec::new();
    let lines = using_it_block();
    let mut run = Vec::new();
    for line in &lines {
        let Some(needs) = &line.needs else {
            run.push((line.number, line.text.clone()));
            continue;
        };
        let command = line.text.split_once(" # ").map_or(&*line.text, |(c, _)| c);
        if !agents {
            eprintln!(
                "README.md line {} not run here ({needs}; the_readme_block_runs_on_a_fresh_profile runs what it can): {}",
                line.number,
                command.trim_end()
            );
            continue;
        }
        if needs.starts_with(PI_AND_MODEL) && Agent::Pi.require().is_some() {
            run.push((line.number, line.text.clone()));
            ran.pi = true;
            continue;
        }
        if let Some(agent) = acp_agent(needs)
            && agent.require().is_some()
        {
            let home = AgentHome::new(agent, &model.mock.url()).unwrap_or_else(|e| panic!("{e}"));
            run.push((line.number, in_agent_home(&home, &line.text)));
            homes.push(home);
            ran.acp += 1;
            continue;
        }
        eprintln!(
            "README.md line {} not run ({needs}): {}",
            line.number,
            command.trim_end()
        );
    }
    assert!(
        run.len() >= 15,
        "only {} lines of the block would run: is the block still there? {lines:#?}",
        run.len()
    );

    let user_home = tempfile::tempdir().expect("temp HOME");
    let wujie_dir = Path::new(WUJIE.path())
        .parent()
        .expect("the binary's directory");
    let path = std::env::join_paths(
        [wujie_dir.to_path_buf(), agents_dir().join("bin")]
            .into_iter()
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
    )
    .expect("PATH");
    let mut bash = Command::new("bash");
    bash.args(["--norc", "--noprofile", "-c", &script(&run)])
        .current_dir(work)
        .stdin(Stdio::null());
    for (name, _) in std::env::vars() {
        if name.starts_with("WUJIE_") && name != "WUJIE_SKIP_AGENTS" {
            bash.env_remove(name);
        }
    }
    let out = bash
        .env("WUJIE_HOME", env.home.path())
        .env("HOME", user_home.path())
        .env("PATH", path)
        .envs(model.settings())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "the README block failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        model.answered() > 0,
        ran.pi || ran.acp > 0,
        "the model was asked exactly when agent lines ran"
    );
    model.stop();
    ran
}

/// The issue the block created, with what the block did to it.
fn check_what_the_block_left(env: &Env, ran: &Ran) {
    let issues = env.json(&["issue", "list", "--limit", "1000"]);
    let titled = |title: &str| -> Option<String> {
        issues
            .as_array()
            .unwrap()
            .iter()
            .find_map(|i| (i["title"] == title).then(|| i["key"].as_str().unwrap().to_owned()))
    };
    let key = titled("Fix the flaky test").unwrap_or_else(|| panic!("{issues:#}"));
    let issue = env.issue(&key);
    let providers: Vec<&str> = issue["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["provider"].as_str().unwrap())
        .collect();
    assert!(providers.contains(&"fake-provider-v2"), "{issue:#}");
    assert_eq!(providers.contains(&"pi"), ran.pi, "{issue:#}");
    let acp_runs = providers.iter().filter(|p| **p == "acp").count();
    assert_eq!(acp_runs, ran.acp, "{issue:#}");
    assert!(
        titled("Store the data in SQLite").is_some(),
        "the discussion was not promoted: {issues:#}"
    );
}

#[test]
fn the_readme_block_runs_on_a_fresh_profile() {
    let env = Env::new();
    let ran = run_the_block(&env, true);
    check_what_the_block_left(&env, &ran);
}

#[test]
fn the_readme_block_runs_after_the_demo() {
    let env = Env::new();
    env.ok(&["demo"]);
    // The keys differ from a fresh profile's (the demo made WUJ-1); the agents are left to the
    // fresh profile's run, which drives them all.
    let ran = run_the_block(&env, false);
    check_what_the_block_left(&env, &ran);
}

#[test]
fn needs_comments_are_read_from_the_block() {
    let lines = using_it_block();
    let needs: Vec<&Line> = lines.iter().filter(|l| l.needs.is_some()).collect();
    assert!(
        needs
            .iter()
            .any(|l| l.text.starts_with("wujie branch open")
                && l.needs.as_deref() == Some(PI_AND_MODEL)),
        "{needs:#?}"
    );
    assert!(
        needs.iter().all(|l| !l.text.starts_with("KEY=")),
        "{needs:#?}"
    );
    let paths: Vec<PathBuf> = lines
        .iter()
        .filter_map(|l| l.text.split_whitespace().find(|w| w.starts_with("./")))
        .map(|p| Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p))
        .collect();
    assert!(paths.len() >= 4, "{lines:#?}");
    for path in &paths {
        assert!(
            path.is_dir(),
            "the block names {}, not in the repository",
            path.display()
        );
    }
}

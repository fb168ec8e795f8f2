//! The one way these suites run the `weft` binary, and where they find the workspace.
//!
//! Every run captures stdout, stderr and the exit status, with `NO_COLOR=1` (the output is a
//! pipe, so it has no colour either way; the variable makes it explicit). Scratch directories
//! are [`weft_tests::scratch`]: unique within this one test binary and removed when the test
//! ends, passed or failed.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) use weft_tests::{big_examples, scratch, Scratch};

/// The `weft` binary cargo built for these tests.
pub(crate) const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// The workspace root (the examples, stdlib and fixtures are found from here).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate sits in the workspace")
        .to_path_buf()
}

/// `weft ARGS` run in the workspace root, so relative paths such as `examples/lab-16.weft`
/// name the workspace's files.
pub(crate) fn weft(args: &[&str]) -> Output {
    weft_in(&root(), args)
}

/// `weft ARGS` run in `dir`.
pub(crate) fn weft_in(dir: &Path, args: &[&str]) -> Output {
    weft_env(dir, args, &[])
}

/// `weft ARGS` run in `dir` with the environment variables `env` added.
pub(crate) fn weft_env(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(WEFT);
    c.args(args).current_dir(dir).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {WEFT}: {e}"))
}

/// `weft build` of `src` (written to `d/FILE`) into `d/build`: that directory and the state
/// built.
pub(crate) fn build(d: &Path, file: &str, src: &str) -> (PathBuf, weft_fabric::ValidState) {
    use weft_formats::state_json::FromJson as _;
    let file = d.join(file);
    std::fs::write(&file, src).unwrap();
    let out = d.join("build");
    let o = weft(&[
        "build",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let state = weft_fabric::ValidState::from_json(
        &std::fs::read_to_string(out.join("state.json")).unwrap(),
    )
    .unwrap();
    (out, state)
}

/// Slurm's host list expansion, written apart from weft's writer: `a[01-03,7],b` → names,
/// each range at its first number's width.
pub(crate) fn expand(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut item = String::new();
    let mut depth = 0;
    let mut items = Vec::new();
    for c in list.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    if !item.is_empty() {
        items.push(item);
    }
    for it in items {
        match it.split_once('[') {
            Some((prefix, body)) => {
                for r in body.trim_end_matches(']').split(',') {
                    let (lo, hi) = r.split_once('-').unwrap_or((r, r));
                    let w = lo.len();
                    for v in lo.parse::<u64>().unwrap()..=hi.parse::<u64>().unwrap() {
                        out.push(format!("{prefix}{v:0w$}"));
                    }
                }
            }
            None => out.push(it),
        }
    }
    out
}

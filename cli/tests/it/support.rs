//! The one way these suites run the `weft` binary, and where they find the workspace.
//!
//! Every run captures stdout, stderr and the exit status, with `NO_COLOR=1` (the output is a
//! pipe, so it has no colour either way; the variable makes it explicit). Scratch directories
//! are [`weft_tests::scratch`]: unique within this one test binary and removed when the test
//! ends, passed or failed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use weft_tests::{big_examples, scratch, Scratch};

/// The `weft` binary cargo built for these tests.
pub const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// The workspace root (the examples, stdlib and fixtures are found from here).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate sits in the workspace")
        .to_path_buf()
}

/// `weft ARGS` run in the workspace root, so relative paths such as `examples/lab-16.weft`
/// name the workspace's files.
pub fn weft(args: &[&str]) -> Output {
    weft_in(&root(), args)
}

/// `weft ARGS` run in `dir`.
pub fn weft_in(dir: &Path, args: &[&str]) -> Output {
    weft_env(dir, args, &[])
}

/// `weft ARGS` run in `dir` with the environment variables `env` added.
pub fn weft_env(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(WEFT);
    c.args(args).current_dir(dir).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {WEFT}: {e}"))
}

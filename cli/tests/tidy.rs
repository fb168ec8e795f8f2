//! Architecture rules as tests, read from `cargo metadata` (never from hand-parsed manifests):
//! which crate may depend on which (every workspace member has a rule), that every declared
//! dependency is used, where printing is allowed, and that every source file says what it is.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The weft crates each member may depend on (normal dependencies), exactly, and why.
const RULES: &[(&str, &[&str], &str)] = &[
    ("weft-fabric", &[], "the model depends on no weft crate"),
    (
        "weft-compiler",
        &["weft-fabric"],
        "the compiler emits states; it never proves them",
    ),
    (
        "weft-metrics",
        &["weft-fabric"],
        "metrics rate any state, whoever routed it",
    ),
    (
        "weft-traffic",
        &["weft-fabric"],
        "the simulator runs any state, whoever routed it",
    ),
    (
        "weft-verifier",
        &["weft-fabric"],
        "the verifier must not depend on the compiler",
    ),
    (
        "weft-plan",
        &["weft-fabric", "weft-verifier"],
        "the planner proves with the verifier, never compiles",
    ),
    (
        "weft-deploy",
        &["weft-fabric", "weft-plan", "weft-verifier"],
        "deploy proves what it writes on the tables it reads, never compiles",
    ),
    (
        "weft-driver",
        &[
            "weft-compiler",
            "weft-fabric",
            "weft-metrics",
            "weft-verifier",
        ],
        "the pipeline: source to proven state and build directory; it never deploys",
    ),
    (
        "weft",
        &[
            "weft-compiler",
            "weft-deploy",
            "weft-driver",
            "weft-fabric",
            "weft-metrics",
            "weft-plan",
            "weft-traffic",
            "weft-verifier",
        ],
        "the CLI parses arguments and renders",
    ),
    (
        "weft-tests",
        &[
            "weft-compiler",
            "weft-deploy",
            "weft-driver",
            "weft-fabric",
            "weft-metrics",
            "weft-plan",
            "weft-verifier",
        ],
        "test support sees every crate",
    ),
    (
        "weft-bench",
        &[
            "weft-compiler",
            "weft-deploy",
            "weft-driver",
            "weft-fabric",
            "weft-metrics",
            "weft-plan",
            "weft-tests",
            "weft-traffic",
            "weft-verifier",
        ],
        "benchmarks see every crate",
    ),
];

/// Library crates: they return values and typed errors; only the CLI writes to a terminal.
const LIBRARIES: &[&str] = &[
    "weft-driver",
    "weft-fabric",
    "weft-compiler",
    "weft-metrics",
    "weft-traffic",
    "weft-verifier",
    "weft-plan",
    "weft-deploy",
];

struct Dep {
    /// The name the code uses (`weft_fabric`, or the rename).
    ident: String,
    /// The package name.
    package: String,
    /// `None` for a normal dependency, `Some("dev")`, `Some("build")`.
    kind: Option<String>,
}

struct Member {
    name: String,
    dir: PathBuf,
    /// The directories of its library, binaries and benchmarks (what normal dependencies
    /// serve).
    product: Vec<PathBuf>,
    deps: Vec<Dep>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn members() -> Vec<Member> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    let mut members = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|d| {
                let package = d["name"].as_str().expect("name").to_owned();
                let ident = d["rename"].as_str().unwrap_or(&package).replace('-', "_");
                Dep {
                    ident,
                    package,
                    kind: d["kind"].as_str().map(str::to_owned),
                }
            })
            .collect();
        let mut product: Vec<PathBuf> = p["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|t| {
                t["kind"].as_array().is_some_and(|k| {
                    k.iter()
                        .any(|k| matches!(k.as_str(), Some("lib" | "bin" | "bench")))
                })
            })
            .filter_map(|t| Some(Path::new(t["src_path"].as_str()?).parent()?.to_path_buf()))
            .collect();
        product.sort();
        product.dedup();
        members.push(Member {
            name: p["name"].as_str().expect("name").to_owned(),
            dir: manifest.parent().expect("crate dir").to_path_buf(),
            product,
            deps,
        });
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    members
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text of every `.rs` file under `dirs`.
fn sources(dirs: &[PathBuf]) -> String {
    let mut text = String::new();
    for d in dirs {
        for f in rust_files(d) {
            text.push_str(&std::fs::read_to_string(&f).unwrap_or_default());
            text.push('\n');
        }
    }
    text
}

#[test]
fn every_member_has_a_dependency_rule_and_keeps_it() {
    let members = members();
    for m in &members {
        let Some((_, allowed, why)) = RULES.iter().find(|(n, ..)| *n == m.name) else {
            panic!(
                "{} has no dependency rule: add one to cli/tests/tidy.rs and ARCHITECTURE.md",
                m.name
            );
        };
        let mut weft: Vec<&str> = m
            .deps
            .iter()
            .filter(|d| d.kind.is_none() && d.package.starts_with("weft"))
            .map(|d| d.package.as_str())
            .collect();
        weft.sort_unstable();
        assert_eq!(&weft, allowed, "{}: {why}", m.name);
    }
    for (name, ..) in RULES {
        assert!(
            members.iter().any(|m| m.name == *name),
            "the rule for {name} names no workspace member"
        );
    }
}

#[test]
fn every_declared_dependency_is_used() {
    for m in members() {
        let product = sources(&m.product);
        let all = sources(std::slice::from_ref(&m.dir));
        for d in &m.deps {
            let text = if d.kind.is_none() { &product } else { &all };
            let used = [
                format!("{}::", d.ident),
                format!("use {}", d.ident),
                format!("extern crate {}", d.ident),
            ]
            .iter()
            .any(|needle| text.contains(needle.as_str()));
            assert!(
                used,
                "{} declares `{}`{} but its code never names `{}`",
                m.name,
                d.package,
                d.kind
                    .as_deref()
                    .map(|k| format!(" ({k})"))
                    .unwrap_or_default(),
                d.ident
            );
        }
    }
}

#[test]
fn libraries_never_print() {
    let members = members();
    for name in LIBRARIES {
        let m = members
            .iter()
            .find(|m| m.name == *name)
            .unwrap_or_else(|| panic!("{name} is not a workspace member"));
        for p in rust_files(&m.dir.join("src")) {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            // Test modules may print; library code may not.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for needle in [
                "println!",
                "eprintln!",
                "print!(",
                "eprint!(",
                "dbg!(",
                "stdout()",
                "stderr()",
            ] {
                assert!(!code.contains(needle), "{} uses `{needle}`", p.display());
            }
        }
    }
}

#[test]
fn every_source_file_opens_with_what_it_is() {
    for m in members() {
        for p in rust_files(&m.dir) {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            assert!(
                first.starts_with("//!"),
                "{} does not open with a `//!` comment saying what it is",
                p.display()
            );
        }
    }
}

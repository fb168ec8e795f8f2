//! Architecture rules as tests: which crate may depend on which, and where printing is allowed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;

fn manifest(krate: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("Cargo.toml");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn deps(krate: &str) -> Vec<String> {
    let text = manifest(krate);
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l == "[dependencies]";
            continue;
        }
        if in_deps {
            if let Some((name, _)) = l.split_once('=') {
                let name = name.trim().trim_end_matches(".workspace").to_owned();
                if name.starts_with("weft") {
                    out.push(name);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn dependency_direction() {
    assert_eq!(
        deps("fabric"),
        Vec::<String>::new(),
        "the model depends on no weft crate"
    );
    assert_eq!(deps("compiler"), ["weft-fabric"]);
    assert_eq!(
        deps("metrics"),
        ["weft-fabric"],
        "metrics rate any state, whoever routed it"
    );
    assert_eq!(
        deps("verifier"),
        ["weft-fabric"],
        "the verifier must not depend on the compiler"
    );
    assert_eq!(
        deps("plan"),
        ["weft-fabric", "weft-verifier"],
        "the planner proves with the verifier, never compiles"
    );
    assert_eq!(
        deps("deploy"),
        ["weft-fabric", "weft-plan", "weft-verifier"],
        "deploy proves what it writes on the tables it reads, never compiles"
    );
}

#[test]
fn libraries_never_print() {
    for krate in [
        "fabric", "compiler", "metrics", "verifier", "plan", "deploy",
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(krate)
            .join("src");
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d)
                .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
                .flatten()
            {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    // Test modules may print; library code may not.
                    let code = text.split("#[cfg(test)]").next().unwrap_or("");
                    for needle in ["println!", "eprintln!", "print!(", "eprint!(", "dbg!("] {
                        assert!(!code.contains(needle), "{} uses `{needle}`", p.display());
                    }
                }
            }
        }
    }
}

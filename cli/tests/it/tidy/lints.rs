//! Lint exceptions say why and go when they are no longer needed: every exception in the
//! workspace's Rust is `#[expect(…, reason = "…")]`, never an `allow` attribute (an
//! expectation that no longer holds is itself a warning, so a stale exception is found).

use super::{members, relative, rust_files};

/// The lines of `text` that open an `allow` attribute: `#[allow(`, `#![allow(`, or an
/// `allow(` inside `cfg_attr(…)`, as (line number from 1, line).
fn allow_attributes(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let t = line.trim_start();
            let Some(attr) = t.strip_prefix("#![").or_else(|| t.strip_prefix("#[")) else {
                return false;
            };
            attr.starts_with("allow(") || (attr.starts_with("cfg_attr(") && attr.contains("allow("))
        })
        .map(|(i, line)| (i + 1, line))
        .collect()
}

#[test]
fn lint_exceptions_are_expectations_with_a_reason() {
    let mut found = Vec::new();
    for m in members() {
        for p in rust_files(&m.dir) {
            let rel = relative(&p);
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for (line, attr) in allow_attributes(&text) {
                found.push(format!("{rel}:{line}: {}", attr.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "write `#[expect(lint, reason = \"why\")]` instead of an `allow` attribute (remove it if \
         the lint no longer fires):\n{}",
        found.join("\n")
    );
}

#[test]
fn an_allow_attribute_is_found_in_every_form() {
    // `\x23` is `#`, so that these lines are not attributes of this file.
    let src =
        "\x23[allow(dead_code)]\nfn a() {}\n    \x23![allow(\n        clippy::panic,\n    )]\n\
         \x23![cfg_attr(test, allow(clippy::indexing_slicing))]\n\
         \x23[expect(dead_code, reason = \"x\")] // allow(x) in a comment\n\
         // \x23[allow(x)] in a comment\n";
    let lines: Vec<usize> = allow_attributes(src).iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [1, 3, 6]);
}

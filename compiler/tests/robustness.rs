//! Bad input never panics, and every diagnostic points inside its file.

use proptest::prelude::*;
use weft_compiler::{check_with, Limits, NoFiles};

const TOKENS: &[&str] = &[
    "use",
    "std",
    "::",
    "hardware",
    "topology",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "sb7800",
    "connectx5",
    "fat_tree",
    "fabric",
    "f",
    "topology",
    "=",
    "switch",
    "hca",
    "link",
    "<->",
    "down",
    "faults",
    ".p",
    "1",
    "36",
    "0x10",
    "4x",
    "..",
    "..=",
    "for",
    "i",
    "in",
    "let",
    "if",
    "else",
    "assert",
    ",",
    ";",
    ":",
    "\"cn{:03}\"",
    "\"",
    "format",
    "node",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "&&",
    "!",
    "levels",
    "level",
    "\n",
    " ",
    "//c\n",
    "/*",
    "*/",
    "model",
    "template",
    "vls",
    "routing",
    "engine",
    "lmc",
    "budget",
    "true",
    "é",
];

fn assert_well_formed(src: &str) {
    let c = check_with("p.weft", src, &NoFiles, Limits { steps: 100_000 });
    for d in &c.diagnostics {
        let Some(file) = d.source.and_then(|s| c.sources.get(s)) else {
            continue;
        };
        for l in &d.labels {
            assert!(
                l.span.start <= l.span.end && (l.span.end as usize) <= file.text.len(),
                "label {:?} outside `{}` ({} bytes) for {:?}",
                l.span,
                file.name,
                file.text.len(),
                d.message
            );
            assert!(file.text.is_char_boundary(l.span.start as usize));
        }
    }
    let _ = weft_compiler::diagnostic::render(
        &c.diagnostics,
        &c.sources,
        weft_compiler::diagnostic::RenderOptions::plain(),
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn token_soup_never_panics(toks in proptest::collection::vec(proptest::sample::select(TOKENS), 0..60)) {
        assert_well_formed(&toks.join(" "));
    }

    #[test]
    fn mutated_example_never_panics(cut in 0usize..2000, len in 0usize..40, insert in proptest::sample::select(TOKENS)) {
        let base = include_str!("../../examples/lab-16.weft");
        let mut cut = cut.min(base.len());
        while !base.is_char_boundary(cut) { cut -= 1; }
        let mut end = (cut + len).min(base.len());
        while !base.is_char_boundary(end) { end -= 1; }
        let src = format!("{}{}{}", &base[..cut], insert, &base[end..]);
        assert_well_formed(&src);
    }

    #[test]
    fn bytes_never_panic(s in "\\PC{0,200}") {
        assert_well_formed(&s);
    }
}

#[test]
fn runaway_loops_stop() {
    let src =
        "fabric f {\n    topology {\n        for i in 0..1000000000 { let x = i }\n    }\n}\n";
    let c = check_with("p.weft", src, &NoFiles, Limits { steps: 10_000 });
    assert!(c
        .diagnostics
        .iter()
        .any(|d| d.code == "weft::evaluation_limit"));
    let huge = "use std::hardware::{sb7800}\nfabric f {\n    topology { switch s[1..=100000000] : sb7800 }\n}\n";
    let c = check_with("p.weft", huge, &NoFiles, Limits::default());
    assert!(c
        .diagnostics
        .iter()
        .any(|d| d.code == "weft::too_many_nodes"));
}

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
        let base = include_str!("../../../examples/lab-16.weft");
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

/// The shape of a value a generated program binds: what walking it costs (list items and
/// string bytes) and what the language's size limits make of it.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Int,
    Bool,
    Str(u64),
    /// `walk`: the items and bytes `==` visits comparing it with itself.
    List {
        len: u64,
        walk: u64,
        ints: bool,
    },
    /// Not bound (an error, or a loop's local).
    Dead,
}

impl Shape {
    fn walk(self) -> u64 {
        match self {
            Shape::Str(l) => l,
            Shape::List { walk, .. } => walk,
            _ => 0,
        }
    }
}

const MAX_ITEMS: u64 = 1 << 20;
const MAX_BYTES: u64 = 1 << 20;
const SIZES: [u64; 6] = [0, 1, 3, 1000, 100_000, 1_000_000];

/// One operation of a generated program, on earlier variables (counted back from the latest,
/// modulo their number).
#[derive(Clone, Debug)]
enum Op {
    /// `repeat(0, n)`, or `repeat(v, n)`.
    Repeat(Option<usize>, usize),
    /// `repeat(repeat(0, a), b)`: `a·b` items for the price of `a + b`.
    Nested(usize, usize),
    /// `v == v`.
    Eq(usize),
    /// `len(v)`.
    Len(usize),
    /// `sum(v)`.
    Sum(usize),
    /// `v[0..k]`.
    Slice(usize, usize),
    /// `format("{}{}", v, v)`.
    Format(usize),
    /// `v + v`.
    Add(usize),
    /// A string literal.
    Lit(usize),
}

fn arb_op() -> impl Strategy<Value = Op> {
    let var = prop_oneof![3 => Just(0usize), 1 => 0usize..8];
    let size = prop_oneof![1 => 0usize..SIZES.len(), 2 => 3usize..SIZES.len()];
    prop_oneof![
        3 => (proptest::option::of(var.clone()), size.clone()).prop_map(|(v, n)| Op::Repeat(v, n)),
        2 => (size.clone(), size.clone()).prop_map(|(a, b)| Op::Nested(a, b)),
        6 => var.clone().prop_map(Op::Eq),
        1 => var.clone().prop_map(Op::Len),
        1 => var.clone().prop_map(Op::Sum),
        1 => (var.clone(), size).prop_map(|(v, k)| Op::Slice(v, k)),
        1 => var.clone().prop_map(Op::Format),
        1 => var.clone().prop_map(Op::Add),
        1 => (0usize..3).prop_map(Op::Lit),
    ]
}

/// The source of `op` on `vars`, its result, and bounds on the steps it charges: `lo` what its
/// walks charge at least, `hi` what it charges at most (walks and values built).
fn model(op: &Op, vars: &[(String, Shape)]) -> (String, Shape, u64, u64) {
    let pick = |i: usize| -> (String, Shape) {
        if vars.is_empty() {
            ("0".to_owned(), Shape::Int)
        } else {
            // Counted from the latest, so that values grow on each other.
            vars[vars.len() - 1 - i % vars.len()].clone()
        }
    };
    match *op {
        Op::Repeat(v, n) => {
            let n = SIZES[n];
            let (src, item) = v.map_or(("0".to_owned(), Shape::Int), pick);
            let shape = match item {
                Shape::Dead => Shape::Dead,
                item => Shape::List {
                    len: n,
                    walk: n.saturating_mul(1 + item.walk()),
                    ints: matches!(item, Shape::Int),
                },
            };
            (format!("repeat({src}, {n})"), shape, 0, q(n) + 1)
        }
        Op::Nested(a, b) => {
            let (a, b) = (SIZES[a], SIZES[b]);
            let shape = Shape::List {
                len: b,
                walk: b.saturating_mul(1 + a),
                ints: false,
            };
            (
                format!("repeat(repeat(0, {a}), {b})"),
                shape,
                0,
                q(a) + q(b) + 2,
            )
        }
        Op::Eq(v) => {
            let (src, s) = pick(v);
            let w = s.walk();
            let shape = if matches!(s, Shape::Dead) {
                Shape::Dead
            } else {
                Shape::Bool
            };
            (
                format!("{src} == {src}"),
                shape,
                q(w).saturating_sub(1),
                q(w) + 1,
            )
        }
        Op::Len(v) => {
            let (src, s) = pick(v);
            match s {
                Shape::List { .. } => (format!("len({src})"), Shape::Int, 0, 1),
                Shape::Str(l) => (
                    format!("len({src})"),
                    Shape::Int,
                    q(l).saturating_sub(1),
                    q(l) + 1,
                ),
                _ => (format!("len({src})"), Shape::Dead, 0, 1),
            }
        }
        Op::Sum(v) => {
            let (src, s) = pick(v);
            match s {
                Shape::List { len, ints, .. } => {
                    let shape = if ints { Shape::Int } else { Shape::Dead };
                    (
                        format!("sum({src})"),
                        shape,
                        q(len).saturating_sub(1),
                        q(len) + 1,
                    )
                }
                _ => (format!("sum({src})"), Shape::Dead, 0, 1),
            }
        }
        Op::Slice(v, k) => {
            let (src, s) = pick(v);
            let k = SIZES[k];
            match s {
                Shape::List { len, walk, ints } if k <= len => {
                    let walk = walk.checked_div(len).unwrap_or(0) * k;
                    let shape = Shape::List { len: k, walk, ints };
                    (
                        format!("{src}[0..{k}]"),
                        shape,
                        q(k).saturating_sub(1),
                        q(k) + 1,
                    )
                }
                _ => (format!("{src}[0..{k}]"), Shape::Dead, 0, 1),
            }
        }
        Op::Format(v) => model_format(pick(v)),
        Op::Add(v) => model_add(pick(v)),
        Op::Lit(l) => {
            let l = [0usize, 3, 100][l];
            (format!("\"{}\"", "x".repeat(l)), Shape::Str(l as u64), 0, 0)
        }
    }
}

/// The steps a walk of `units` items or bytes charges (four a step).
fn q(units: u64) -> u64 {
    units / 4
}

/// [`model`] of `format("{}{}", v, v)` on `v` (its source and shape).
fn model_format((src, s): (String, Shape)) -> (String, Shape, u64, u64) {
    let arg = match s {
        Shape::Str(l) => l,
        // An int or a bool prints in a few bytes.
        Shape::Int | Shape::Bool => 8,
        _ => {
            return (
                format!("format(\"{{}}{{}}\", {src}, {src})"),
                Shape::Dead,
                0,
                1,
            )
        }
    };
    let text = format!("format(\"{{}}{{}}\", {src}, {src})");
    let read = 4 + 2 * arg;
    let shape = if 2 * arg > MAX_BYTES {
        Shape::Dead
    } else {
        Shape::Str(2 * arg)
    };
    let shape = match (s, shape) {
        (Shape::Str(_), sh) => sh,
        // Printed numbers are 1 to 8 bytes: two of them at least 2, the length walks
        // over it are bounded below by (the test then bounds nothing above: a string
        // of up to 16 bytes, repeated and compared a million times, is far more work
        // than the slack absorbs).
        (_, Shape::Str(_)) => Shape::Str(2),
        (_, sh) => sh,
    };
    let lo = if matches!(s, Shape::Str(_)) {
        q(read).saturating_sub(1)
    } else {
        0
    };
    (text, shape, lo, q(read) + q(2 * arg) + 2)
}

/// [`model`] of `v + v` on `v` (its source and shape).
fn model_add((src, s): (String, Shape)) -> (String, Shape, u64, u64) {
    let text = format!("{src} + {src}");
    match s {
        Shape::Int => (text, Shape::Int, 0, 1),
        Shape::Str(l) if 2 * l <= MAX_BYTES => (text, Shape::Str(2 * l), 0, q(2 * l) + 1),
        Shape::List { len, walk, ints } if 2 * len <= MAX_ITEMS => {
            let shape = Shape::List {
                len: 2 * len,
                walk: 2 * walk,
                ints,
            };
            (text, shape, 0, q(2 * len) + 1)
        }
        _ => (text, Shape::Dead, 0, 1),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Programs of shared lists and strings compared, formatted, summed, sliced and
    /// concatenated, some in loops: every one ends, and the budget bounds the work — a
    /// program whose walks alone need more than the budget stops with `evaluation_limit`,
    /// one whose every walk and value fits well inside it does not. (Before comparisons were
    /// charged, `v == v` of `repeat(repeat(0, 1000000), 1000000)` ran for hours.)
    #[test]
    fn value_walks_are_charged_to_the_budget(
        stmts in proptest::collection::vec((arb_op(), proptest::option::of(0usize..3)), 1..8)
    ) {
        const BUDGET: u64 = 1_000_000;
        let mut vars: Vec<(String, Shape)> = Vec::new();
        let mut body = String::new();
        let (mut lo, mut hi) = (0u64, 0u64);
        // Whether a number was printed: its length is known only from below.
        let mut printed = false;
        for (i, (op, looped)) in stmts.iter().enumerate() {
            let live: Vec<(String, Shape)> =
                vars.iter().filter(|(_, s)| !matches!(s, Shape::Dead)).cloned().collect();
            if let Op::Format(v) = *op {
                let s = live.get(live.len().wrapping_sub(1 + v % live.len().max(1))).map(|x| x.1);
                printed |= s.is_none() || matches!(s, Some(Shape::Int | Shape::Bool));
            }
            let (src, shape, l, h) = model(op, &live);
            let name = format!("v{i}");
            match looped {
                None => {
                    body += &format!("        let {name} = {src}\n");
                    lo = lo.saturating_add(l);
                    hi = hi.saturating_add(h).saturating_add(1);
                    vars.push((name, shape));
                }
                Some(k) => {
                    let k = [1u64, 10, 1000][*k];
                    body += &format!("        for i in 0..{k} {{ let {name} = {src} }}\n");
                    lo = lo.saturating_add(l.saturating_mul(k));
                    hi = hi.saturating_add((h + 2).saturating_mul(k)).saturating_add(2);
                    vars.push((name, Shape::Dead));
                }
            }
        }
        let src = format!("fabric f {{\n    topology {{\n{body}    }}\n}}\n");
        let c = check_with("p.weft", &src, &NoFiles, Limits { steps: BUDGET });
        let stopped = c.diagnostics.iter().any(|d| d.code == "weft::evaluation_limit");
        // The bounds are per operation up to a few steps (at most 8 000 operations run):
        // a factor of two either way absorbs that.
        if lo > 2 * BUDGET {
            prop_assert!(stopped, "walks of at least {lo} steps ran within {BUDGET}:\n{src}");
        }
        if hi < BUDGET / 2 && !printed {
            prop_assert!(!stopped, "at most {hi} steps of work ran out of {BUDGET}:\n{src}");
        }
    }
}

//! Front-end speed on the target fabric sizes: parse + elaborate, full check, a large explicit
//! program, and the ibnetdiscover reader.
//!
//! Run: `cargo bench -p weft-bench --bench frontend`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use weft_bench::{example, explicit_program, fabric};
use weft_compiler::NoFiles;

fn elaborate(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse+elaborate");
    for name in [
        "cluster-648.weft",
        "cluster-11664.weft",
        "cluster-45056.weft",
    ] {
        let text = example(name);
        g.bench_function(name, |b| {
            b.iter(|| weft_compiler::elaborate(name, black_box(&text), &NoFiles))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("check");
    for name in ["cluster-648.weft", "cluster-11664.weft"] {
        let text = example(name);
        g.bench_function(name, |b| {
            b.iter(|| weft_compiler::check(name, black_box(&text), &NoFiles))
        });
    }
    g.finish();
}

fn explicit(c: &mut Criterion) {
    let mut g = c.benchmark_group("explicit program");
    g.sample_size(10);
    for name in ["cluster-11664.weft", "cluster-45056.weft"] {
        let text = explicit_program(name);
        let lines = text.lines().count();
        g.bench_function(format!("{name} ({lines} lines)"), |b| {
            b.iter(|| weft_compiler::elaborate(name, black_box(&text), &NoFiles))
        });
    }
    g.finish();
}

fn ibnetdiscover(c: &mut Criterion) {
    let mut g = c.benchmark_group("ibnetdiscover");
    for name in ["cluster-648.weft", "cluster-11664.weft"] {
        let f = fabric(name);
        let text = weft_fabric::ibnetdiscover::write(&f, None).unwrap_or_else(|e| panic!("{e}"));
        let opts = weft_fabric::ibnetdiscover::ParseOptions::default();
        g.bench_function(format!("read {name}"), |b| {
            b.iter(|| weft_fabric::ibnetdiscover::parse(black_box(&text), &opts))
        });
        g.bench_function(format!("write {name}"), |b| {
            b.iter(|| weft_fabric::ibnetdiscover::write(black_box(&f), None))
        });
    }
    g.finish();
}

fn compile(c: &mut Criterion) {
    // LID assignment + routing (fat_tree with sFtree switch-to-switch paths), from an
    // elaborated fabric.
    let mut g = c.benchmark_group("compile (LIDs + routing)");
    g.sample_size(10);
    for name in [
        "cluster-648.weft",
        "cluster-5832.weft",
        "cluster-11664.weft",
    ] {
        let text = example(name);
        let comp = weft_compiler::check(name, &text, &NoFiles);
        let Some(e) = comp.elaborated.as_ref() else {
            panic!("{name} does not elaborate")
        };
        g.bench_function(name, |b| {
            b.iter(|| weft_compiler::build::build(black_box(e)))
        });
    }
    // What QoS lanes add to the 11 664-node compile (issue 9's target: vFtree < 100 ms).
    for (what, sections) in [
        ("vFtree 4 lanes", weft_bench::QOS_VFTREE),
        ("3 classes", weft_bench::QOS_THREE_CLASSES),
    ] {
        let name = "cluster-11664.weft";
        let text = weft_bench::example_with(name, sections);
        let comp = weft_compiler::check(name, &text, &NoFiles);
        let Some(e) = comp.elaborated.as_ref() else {
            panic!("{name} with {what} does not elaborate")
        };
        g.bench_function(format!("{name} + {what}"), |b| {
            b.iter(|| weft_compiler::build::build(black_box(e)))
        });
    }
    g.finish();
}

fn layered(c: &mut Criterion) {
    // LID assignment + `layered` routing (shortest paths, assigned to layers) on a random
    // irregular fabric of 1 000 switches (issue 9's target: < 5 s). The same fabric for
    // OpenSM: `cargo run --release -p weft-bench --bin irregular -- 1000`.
    let mut g = c.benchmark_group("layered");
    g.sample_size(10);
    for switches in [100, 1000] {
        let text = weft_bench::irregular(switches, 40, 1);
        let name = format!("irregular-{switches}.weft");
        let comp = weft_compiler::check(&name, &text, &NoFiles);
        let Some(e) = comp.elaborated.as_ref() else {
            panic!("{name} does not elaborate")
        };
        g.bench_function(format!("{name} (4 hosts per switch)"), |b| {
            b.iter(|| weft_compiler::build::build(black_box(e)))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    elaborate,
    explicit,
    ibnetdiscover,
    compile,
    layered
);
criterion_main!(benches);

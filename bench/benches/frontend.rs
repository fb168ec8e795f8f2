//! Front-end speed on the target fabric sizes: parse + elaborate, full check, a large explicit
//! program, the ibnetdiscover reader, and `weft import` + `weft check` of a real-sized dump
//! (the 666-switch SuperPOD-class tree with an aggregation node on every switch; issue 27's
//! target: under 2 s).
//!
//! Run: `cargo bench -p weft-bench --bench frontend`.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

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
        let text = weft_formats::ibnetdiscover::write(&f, None).unwrap_or_else(|e| panic!("{e}"));
        let opts = weft_formats::ibnetdiscover::ParseOptions::default();
        g.bench_function(format!("read {name}"), |b| {
            b.iter(|| weft_formats::ibnetdiscover::parse(black_box(&text), &opts))
        });
        g.bench_function(format!("write {name}"), |b| {
            b.iter(|| weft_formats::ibnetdiscover::write(black_box(&f), None))
        });
    }
    g.finish();
}

fn import_and_check(c: &mut Criterion) {
    // What `weft import DUMP > f.weft && weft check f.weft` does: read the dump, recognise
    // the aggregation nodes, find the levels and write the program; then parse, elaborate,
    // validate, route (fat_tree) and prove it.
    let mut g = c.benchmark_group("import + check");
    g.sample_size(10);
    let p = weft_tests::dump::SuperPod::ISSUE_27;
    let text = weft_tests::dump::superpod(&p);
    let name = format!(
        "superpod-{} ({} CAs)",
        p.switches(),
        text.matches("\nCa\t").count()
    );
    g.bench_function(name, |b| {
        b.iter(|| {
            let (program, _) = weft_compiler::import_ibnetdiscover(
                black_box(&text),
                "superpod.ibnetdiscover",
                weft_compiler::diagnostic::SourceId(0),
                None,
                "superpod",
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
            let c = weft_driver::compile_text(
                "superpod.weft",
                &program,
                &NoFiles,
                &weft_driver::quietly,
            );
            let Some(Ok(built)) = c.built else {
                panic!("superpod.weft does not route")
            };
            let proof = weft_driver::Proof {
                certificate: false,
                max_listed: 20,
            };
            assert!(weft_driver::prove(&built, proof, &weft_driver::quietly).is_proven());
        })
    });
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
    import_and_check,
    compile,
    layered
);
criterion_main!(benches);

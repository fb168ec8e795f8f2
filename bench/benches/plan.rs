//! Planner speed: a link failure on the 5 832-node three-level tree (a cable between a leaf
//! and a spine), planned into proven steps — diff, order, one transition check per step and the
//! desired state's proof; and the APM view of the same fault with LMC 1. An engine change of
//! the 648-node tree (`layered` → `fat_tree`), which no order can make without an outage:
//! the search without outage, then break-before-make's three searches.
//!
//! Run: `cargo bench -p weft-bench --bench plan`.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::Duration;
use weft_bench::{compiled, example};

fn with_fault(src: &str, line: &str) -> String {
    let i = src.rfind('}').unwrap();
    format!("{}    faults {{\n        {line}\n    }}\n}}\n", &src[..i])
}

fn link_failure(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    let src = example("cluster-5832.weft");
    let old = compiled(&src);
    let new = compiled(&with_fault(&src, "link leaf40.p[30] down"));
    let opts = weft_plan::Options::default();
    let p = weft_plan::plan(&old, &new, &opts).unwrap();
    eprintln!(
        "5832 link failure: {} steps, {} SMPs (full reconfiguration {}), {} entries change",
        p.plan.steps.len(),
        p.plan.smps(),
        p.full_reconfiguration,
        p.changed_entries
    );
    g.bench_function("5832 link failure", |b| {
        b.iter(|| black_box(weft_plan::plan(&old, &new, &opts).unwrap()))
    });
    let start = weft_plan::start(&old, &new, weft_plan::Mode::Fault).unwrap();
    g.bench_function("5832 transition of the first step", |b| {
        let first = p.plan.steps[0].clone();
        b.iter(|| {
            black_box(weft_plan::check_steps(
                &start,
                std::slice::from_ref(&first),
                Default::default(),
                &Default::default(),
            ))
        })
    });
    g.finish();
}

fn engine_change(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let src = example("cluster-648.weft");
    let layered = src
        .replace("engine = fat_tree", "engine = layered")
        .replace("        switch_to_switch = sftree\n", "");
    assert!(layered.contains("engine = layered"));
    let (old, new) = (compiled(&layered), compiled(&src));
    let opts = weft_plan::Options::default();
    let p = weft_plan::plan(&old, &new, &opts).unwrap();
    let o = p.outage.as_ref().expect("break-before-make");
    eprintln!(
        "648 layered → fat_tree: {} steps, {} SMPs, {} destinations out, {} routes at worst",
        p.plan.steps.len(),
        p.plan.smps(),
        o.destinations.len(),
        o.routes
    );
    g.bench_function("648 layered to fat_tree (break-before-make)", |b| {
        b.iter(|| black_box(weft_plan::plan(&old, &new, &opts).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, link_failure, engine_change);
criterion_main!(benches);

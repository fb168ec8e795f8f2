//! Planner speed: a link failure on the 5 832-node three-level tree (a cable between a leaf
//! and a spine), planned into proven steps — diff, order, one transition check per step and the
//! desired state's proof; and the APM view of the same fault with LMC 1.
//!
//! Run: `cargo bench -p weft-bench --bench plan`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
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

criterion_group!(benches, link_failure);
criterion_main!(benches);

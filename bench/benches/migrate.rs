//! VM migration planning speed (Paper A) on the 11 664-node three-level tree: the worst-case
//! move (from the first hypervisor to the last, across the whole tree), planned with
//! FTreeMinRC's skyline and every step proven by the transition checker. The checker is built
//! once per state (one pass over every route, like loading it); each iteration plans the move
//! and rolls the checker back (the rollback is not timed). Also the whole `weft_plan::plan`
//! (moves found from two states, checker built, end state built and proven).
//!
//! Run: `cargo bench -p weft-bench --bench migrate`.

#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::{Duration, Instant};
use weft_bench::{compiled, example};
use weft_plan::migrate::{moves, Marking, Migrator};
use weft_verifier::Scope;

/// The 11 664-node tree with VMs `web` and `db` placed as given.
fn with_vms(src: &str, web: &str) -> String {
    let i = src.rfind('}').unwrap();
    format!(
        "{}    tenant cloud {{\n        pkey = 0x8001\n        vms on [cn00001, cn00002, cn11664] {{ vfs_per_host = 4 }}\n        vm web on {web}\n        vm db on cn00002\n    }}\n}}\n",
        &src[..i]
    )
}

fn migration(c: &mut Criterion) {
    let mut g = c.benchmark_group("migrate");
    g.sample_size(20);
    let src = example("cluster-11664.weft");
    let old = compiled(&with_vms(&src, "cn00001"));
    let far = compiled(&with_vms(&src, "cn11664"));
    let mv = moves(&old, &far).unwrap().unwrap();
    let built = Instant::now();
    let mut m = Migrator::new(&old, Scope::All);
    eprintln!("11664 checker built in {:?}", built.elapsed());
    m.checkpoint();
    let p = m.migrate(&mv, &far.lids.vports, Marking::Skyline).unwrap();
    m.rollback();
    eprintln!(
        "11664 worst-case move: {} steps, {} LFT SMPs on {} switches of {} marked, every step proven: {}",
        p.steps.len(),
        p.steps.iter().flat_map(|s| &s.writes).filter(|w| matches!(w, weft_formats::plan::SmpWrite::Lft { .. })).count(),
        p.moves[0].updated,
        p.moves[0].marked,
        p.checks.iter().all(|c| c.is_proven())
    );
    g.bench_function("11664 worst-case move, every step proven", |b| {
        b.iter_custom(|n| {
            let mut spent = Duration::ZERO;
            for _ in 0..n {
                m.checkpoint();
                let t = Instant::now();
                black_box(m.migrate(&mv, &far.lids.vports, Marking::Skyline).unwrap());
                spent += t.elapsed();
                m.rollback();
            }
            spent
        })
    });
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    let opts = weft_plan::Options::default();
    g.bench_function("11664 worst-case move, whole plan from two states", |b| {
        b.iter(|| black_box(weft_plan::plan(&old, &far, &opts).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, migration);
criterion_main!(benches);

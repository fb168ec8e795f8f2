//! Verifier speed on DESIGN.md's fabric sizes (issue 4's targets on this 2-core machine):
//!
//! * the 11 664-node / 1 620-switch three-level fat-tree (`examples/cluster-11664.weft`): all
//!   HCA and switch LID pairs, deadlock freedom + connectivity + certificate — target < 1 s;
//! * the ≈48 000-LID fabric (`examples/cluster-45056.weft`) — target < 10 s and < 4 GiB
//!   (peak RSS is printed after the first run);
//! * the certificate checker on the 11 664-node fabric;
//! * the 11 664-node fabric with its IPoIB broadcast group and 64 more multicast groups, side
//!   by side with unicast alone (`WEFT_BENCH_FABRICS=multicast`) — target < 25 % more;
//! * the z3 engine: how large a fabric it decides within 60 s (a one-off table, printed).
//!
//! States come from weft's own compiler (LIDs + routing, `weft_compiler::build`); the verifier
//! itself never depends on the compiler.
//!
//! Run: `cargo bench -p weft-bench --bench verify` (`WEFT_BENCH_Z3=0` skips the z3 table,
//! `WEFT_BENCH_FABRICS=11664` picks fabrics).

#![expect(
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::time::{Duration, Instant};
use weft_bench::example;
use weft_fabric::ValidState;
use weft_verifier::{certificate, verify, Options, Property};

/// The state weft compiles for an example.
fn compiled(name: &str) -> ValidState {
    compiled_text(name, &example(name))
}

/// The state weft compiles for a program.
fn compiled_text(name: &str, text: &str) -> ValidState {
    weft_bench::compiled_as(name, text)
}

fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}

fn explicit(c: &mut Criterion) {
    let opts = Options::default();
    let mut g = c.benchmark_group("verify");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let only = std::env::var("WEFT_BENCH_FABRICS").unwrap_or_default();
    for name in ["cluster-11664.weft", "cluster-45056.weft"] {
        if !only.is_empty() && !only.split(',').any(|o| name.contains(o)) {
            continue;
        }
        let st = compiled(name);
        let t = Instant::now();
        let r = verify(&st, &opts);
        let once = t.elapsed();
        assert!(r.is_proven(), "{name}: {:?}", r.verdict);
        let cert = r.certificate.as_ref().expect("certificate");
        eprintln!(
            "{name}: {} switches, {} destinations, {} routes, {} channels, {} dependencies; \
             first run {:.3} s; certificate {} channels x {} destinations; peak RSS {} MiB",
            st.fabric.switch_count(),
            r.stats.destinations,
            r.stats.routes,
            r.stats.channels,
            r.stats.dependencies,
            once.as_secs_f64(),
            cert.deadlock_free.channels.len(),
            cert.connected.destinations.len(),
            peak_rss_mib()
        );
        g.bench_function(format!("{name} (all pairs, with certificate)"), |b| {
            b.iter(|| verify(black_box(&st), &opts))
        });
        if name == "cluster-11664.weft" {
            // A failure to report: one switch-to-switch link down, tables not rerouted.
            let mut broken = st.clone().into_inner();
            let l = broken
                .fabric
                .links()
                .iter()
                .position(|l| {
                    broken.fabric.node(l.a.node).is_switch()
                        && broken.fabric.node(l.b.node).is_switch()
                })
                .unwrap();
            let mut b = weft_fabric::FabricBuilder::from(broken.fabric.clone());
            b.set_link_down(weft_fabric::LinkId(l as u32));
            broken.fabric = b.finish();
            let broken = weft_verifier::testkit::valid(broken);
            let t = Instant::now();
            let r = verify(&broken, &opts);
            eprintln!(
                "{name} with one switch link down (not rerouted): {} failed routes in {} groups, \
                 {} credit loops, in {:.3} s",
                r.failed_routes,
                r.failures.len(),
                r.credit_loops.len(),
                t.elapsed().as_secs_f64()
            );
            let t = Instant::now();
            let json = cert.to_json();
            eprintln!(
                "{name}: certificate.json {} MiB in {:.3} s",
                json.len() >> 20,
                t.elapsed().as_secs_f64()
            );
            g.bench_function(format!("{name} certificate check"), |b| {
                b.iter(|| certificate::check(black_box(&st), cert, &Default::default()).unwrap())
            });
        }
    }
    // Multicast (issue 28's target: the broadcast group and 64 more cost < 25 % over unicast
    // alone). Side by side: the same tables with and without the groups.
    if only.is_empty() || only.split(',').any(|o| o == "multicast") {
        let name = "cluster-11664.weft";
        let unicast = compiled(name);
        let st = weft_bench::with_multicast(&unicast, 64);
        let opts = Options {
            properties: Property::defaults(&st),
            ..Options::default()
        };
        let t = Instant::now();
        let r = verify(&st, &opts);
        assert!(r.is_proven(), "{name} + multicast: {:?}", r.verdict);
        let m = r.multicast.as_ref().unwrap();
        eprintln!(
            "{name} + {}: {} (sender, receiver) pairs, {} route states, {} dependencies in all; \
             first run {:.3} s",
            r.traffic.describe(),
            m.pairs,
            m.states,
            r.stats.dependencies,
            t.elapsed().as_secs_f64()
        );
        g.bench_function(
            format!("{name} unicast alone (all pairs, with certificate)"),
            |b| b.iter(|| verify(black_box(&unicast), &Options::default())),
        );
        g.bench_function(
            format!("{name} + broadcast and 64 groups (all pairs, with certificate)"),
            |b| b.iter(|| verify(black_box(&st), &opts)),
        );
    }
    // Path-SL sets: the 11 664-node tree with QoS lanes (issue 9's target: vFtree < 1.5 s).
    if only.is_empty() || only.split(',').any(|o| o == "qos") {
        for (what, sections) in [
            ("vFtree 4 lanes", weft_bench::QOS_VFTREE),
            ("3 classes", weft_bench::QOS_THREE_CLASSES),
        ] {
            let name = "cluster-11664.weft";
            let st = compiled_text(name, &weft_bench::example_with(name, sections));
            let t = Instant::now();
            let r = verify(&st, &opts);
            assert!(r.is_proven(), "{name} + {what}: {:?}", r.verdict);
            eprintln!(
                "{name} + {what}: {} routes, {} channels, {} VLs, {} per-switch path-SL ranges; \
                 first run {:.3} s",
                r.stats.routes,
                r.stats.channels,
                r.stats.vls,
                st.path_sl.by_switch.len(),
                t.elapsed().as_secs_f64()
            );
            g.bench_function(
                format!("{name} + {what} (all pairs, with certificate)"),
                |b| b.iter(|| verify(black_box(&st), &opts)),
            );
        }
    }
    g.finish();
}

/// How far the z3 engine gets in 60 s: fat-trees of growing size, routed up/down.
fn z3_scaling(_: &mut Criterion) {
    if std::env::var("WEFT_BENCH_Z3").is_ok_and(|v| v == "0") {
        return;
    }
    let z3 = weft_verifier::z3::Z3 { timeout_ms: 60_000 };
    eprintln!("z3 engine (timeout 60 s per property):");
    for (spines, leaves, hosts) in [
        (2, 4, 4),
        (6, 12, 6),
        (12, 24, 12),
        (18, 36, 18),
        (24, 48, 24),
        (32, 64, 32),
        (48, 96, 48),
    ] {
        let f = weft_verifier::testkit::fat_tree2(spines, leaves, hosts);
        let st = weft_verifier::testkit::valid(weft_verifier::testkit::route_updown(
            &f,
            weft_verifier::testkit::sequential_lids(&f),
        ));
        let t = Instant::now();
        let r = z3.run(&st, &Options::default());
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "  fat-tree {spines} spines x {leaves} leaves x {hosts} hosts ({} nodes), up/down: \
             {} routes, {} dependencies: {:?}/{:?} in {secs:.2} s",
            f.nodes().len(),
            r.routes,
            r.dependencies,
            r.verdict.deadlock_free,
            r.verdict.connected
        );
        if secs > 60.0 {
            break;
        }
    }
    // Unsatisfiable (a credit loop, unsat core → cycle): min-hop rings.
    for n in [8, 32, 128, 512] {
        let f = weft_verifier::testkit::ring(n, 1);
        let st = weft_verifier::testkit::valid(weft_verifier::testkit::route_minhop(
            &f,
            weft_verifier::testkit::sequential_lids(&f),
        ));
        let t = Instant::now();
        let r = z3.run(&st, &Options::default());
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "  ring of {n} switches, min-hop: {} routes, {} dependencies: {:?}/{:?}, cycle of {} \
             in {secs:.2} s",
            r.routes,
            r.dependencies,
            r.verdict.deadlock_free,
            r.verdict.connected,
            r.credit_loop.as_ref().map_or(0, |l| l.cycle.len())
        );
        if secs > 60.0 {
            break;
        }
    }
}

criterion_group!(benches, explicit, z3_scaling);
criterion_main!(benches);

//! `weft_traffic::simulate` against the independent reference simulator of `reference/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod reference;

use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_fabric::FabricState;
use weft_traffic::{simulate, HostModel, Params, Report, Traffic};

const PRELUDE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\n";

fn compile(text: &str) -> FabricState {
    let c = check("t.weft", text, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    build(&c.elaborated.unwrap()).unwrap().state.into_inner()
}

/// A two-level fat tree of `radix`-port switches with `hosts` hosts (0: full), on vFtree
/// lanes when `vls` is above 1, with a multicast group of every host.
fn tree(radix: u32, hosts: u32, vls: u8) -> FabricState {
    let qos = if vls > 1 {
        format!("    vls {{ budget = {vls} }}\n    qos {{ class compute {{ lanes = vftree(maxvl: {vls}) }} }}\n")
    } else {
        String::new()
    };
    compile(&format!(
        "{PRELUDE}fabric t {{\n    topology = fat_tree(levels: 2, radix: {radix}, switch: sb7800, hca: connectx5, hosts: {hosts})\n{qos}    multicast {{\n        group all {{ mlid = 0xc001, members = all }}\n    }}\n}}\n"
    ))
}

/// One switch, four hosts.
fn star() -> FabricState {
    compile(&format!(
        "{PRELUDE}fabric star {{\n    topology {{\n        switch sw : sb7800\n        hca cn[1..=4] : connectx5\n        for n in 1..=4 {{ link cn[n].p[1] <-> sw.p[n] }}\n    }}\n}}\n"
    ))
}

struct Case {
    name: String,
    report: Report,
    refr: reference::Outcome,
}

fn run(name: &str, st: &FabricState, traffic: &str, p: &Params, seed: u64) -> Case {
    let t = Traffic::parse(traffic).unwrap();
    let mut p = p.clone();
    p.top = 100_000;
    let report = simulate(st, &t, &p, seed).unwrap();
    let refr = reference::run(st, &t, &p, seed).unwrap();
    Case {
        name: format!("{name} {traffic} seed {seed}"),
        report,
        refr,
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

#[test]
#[allow(clippy::print_stderr)]
fn explore() {
    let base = Params {
        duration_ns: 30_000,
        warmup_ns: Some(5_000),
        ..Params::default()
    };
    let star = star();
    let t8 = tree(4, 0, 1);
    let t8v2 = tree(4, 0, 2);
    let t32v4 = tree(8, 0, 4);
    let t32v8 = tree(8, 0, 8);
    let t64 = tree(12, 64, 1);
    let mut configs: Vec<(&str, &FabricState, &str)> = Vec::new();
    for tr in ["uniform", "hotspot:1"] {
        configs.push(("star4", &star, tr));
    }
    for tr in ["uniform", "hotspot:1", "hotspot:2", "multicast:0xc001:20%"] {
        configs.push(("ft8", &t8, tr));
        configs.push(("ft8v2", &t8v2, tr));
    }
    for tr in ["uniform", "hotspot:1", "multicast:0xc001:5%"] {
        configs.push(("ft32v4", &t32v4, tr));
        configs.push(("ft32v8", &t32v8, tr));
        configs.push(("ft64", &t64, tr));
    }
    let seeds = 0..6u64;
    for (name, st, tr) in configs {
        let t = Traffic::parse(tr).unwrap();
        let (mut tm, mut rm, mut ratios, mut dt, mut drf) = (0.0, 0.0, Vec::new(), 0.0, 0.0);
        let (mut tmc, mut rmc) = (0.0, 0.0);
        for seed in seeds.clone() {
            let a = std::time::Instant::now();
            let report = simulate(st, &t, &base, seed).unwrap();
            let b = std::time::Instant::now();
            let f = reference::run(st, &t, &base, seed).unwrap();
            dt += (b - a).as_secs_f64();
            drf += b.elapsed().as_secs_f64();
            let m = mean(&f.sent_gbps);
            tm += report.throughput_per_node_gbps.mean;
            rm += m;
            ratios.push(report.throughput_per_node_gbps.mean / m - 1.0);
            if let Some(mc) = &report.multicast {
                tmc += mc.delivered_gbps_per_receiver.mean;
                rmc += mean(&f.group_gbps.iter().flatten().copied().collect::<Vec<_>>());
            }
        }
        let n = seeds.clone().count() as f64;
        let sd = (ratios.iter().map(|r| r * r).sum::<f64>() / n).sqrt();
        let worst = ratios.iter().fold(0.0f64, |a, r| a.max(r.abs()));
        eprintln!(
            "{name:8} {tr:22} traffic {:7.3} ref {:7.3} diff {:+6.2}% rms {:5.2}% worst {:5.2}% mc {:7.3} {:7.3} time {:.2}s {:.2}s",
            tm / n,
            rm / n,
            (tm / rm - 1.0) * 100.0,
            sd * 100.0,
            worst * 100.0,
            tmc / n,
            rmc / n,
            dt,
            drf
        );
    }
    let _ = HostModel::Refuse;
    let _ = run;
}

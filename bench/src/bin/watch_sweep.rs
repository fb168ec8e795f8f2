//! `weft watch`'s light sweep on the largest example: the 11 664-host three-level tree
//! (`examples/cluster-11664.weft`) on the in-process fabric (issue 47).
//!
//! ```text
//! cargo run --release -p weft-bench --bin watch_sweep -- [--sweeps N]
//! ```
//!
//! Prints the SMPs and wall time of the first full read (discovery and every table), then of
//! N light sweeps with nothing changed (SMPs each, mean and worst wall time; resident memory
//! after 100 and after N), of the sweep after a cable between two switches is pulled (the
//! switches whose routes crossed it rerouted around it, the switches that changed read) and
//! of the sweep after that.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use std::time::Instant;
use weft_deploy::sim::SimFabric;
use weft_deploy::watch::Watcher;

/// This process's resident memory in KiB (`VmRSS` of `/proc/self/status`), if readable.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let mut sweeps = 20usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next().and_then(|v| v.parse().ok())) {
            ("--sweeps", Some(n)) => sweeps = n,
            _ => {
                eprintln!("usage: watch_sweep [--sweeps N]");
                std::process::exit(2)
            }
        }
    }
    let t0 = Instant::now();
    let st = weft_bench::compiled_as(
        "cluster-11664.weft",
        &weft_bench::example("cluster-11664.weft"),
    );
    let f = &st.fabric;
    let switches = f.nodes().iter().filter(|n| n.is_switch()).count();
    println!(
        "cluster-11664: {} nodes, {switches} switches (compiled in {:.1} s)",
        f.nodes().len(),
        t0.elapsed().as_secs_f64()
    );
    let Some(sm) = weft_deploy::sim::default_sm_port(f) else {
        eprintln!("no SM port");
        std::process::exit(1)
    };
    let mut sim = SimFabric::new(&st, sm).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let t = Instant::now();
    let (mut w, smps) = Watcher::start(&mut sim, "cluster-11664").unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    println!(
        "  first read   {smps} SMPs, {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let mut times = Vec::with_capacity(sweeps);
    let mut counts = Vec::with_capacity(sweeps);
    let mut rss_at_100 = None;
    for k in 0..sweeps {
        if k == 100 {
            rss_at_100 = rss_kib();
        }
        let g0 = sim.counts().gets;
        let t = Instant::now();
        let s = w.sweep(&mut sim, false);
        times.push(t.elapsed().as_secs_f64());
        counts.push((s.light.smps(), sim.counts().gets - g0, s.changes.len()));
    }
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    let worst = times.iter().copied().fold(0.0, f64::max);
    let all_same = counts.windows(2).all(|w| w[0] == w[1]);
    if let Some((light, answered, changes)) = counts.first() {
        println!(
            "  light sweep  {light} SMPs ({switches} SwitchInfo; {answered} answered, {changes} changes{}), mean {:.3} ms, worst {:.3} ms over {sweeps}",
            if all_same { ", every sweep alike" } else { ", sweeps differ" },
            mean * 1e3,
            worst * 1e3
        );
    }
    println!(
        "  memory       VmRSS {} KiB after 100 sweeps, {} KiB after {sweeps}",
        rss_at_100.map_or_else(|| "?".to_owned(), |r| r.to_string()),
        rss_kib().map_or_else(|| "?".to_owned(), |r| r.to_string())
    );
    // A cable between two switches pulled: the sweep that finds it.
    if let Some(l) = f
        .links()
        .iter()
        .find(|l| f.node(l.a.node).is_switch() && f.node(l.b.node).is_switch())
    {
        sim.unlink(f.node(l.a.node).guid().0, l.a.port.0);
        let g0 = sim.counts().gets;
        let t = Instant::now();
        let s = w.sweep(&mut sim, false);
        let took = t.elapsed().as_secs_f64();
        let heavy = s.heavy.as_ref();
        let unanswered = s
            .changes
            .iter()
            .filter(|c| matches!(c, weft_deploy::watch::Change::Unanswered { .. }))
            .count();
        println!(
            "  cable pulled {} changes ({unanswered} switches unanswered, {} rerouted), light {} SMPs + heavy {} SMPs ({}; {} answered), {:.2} ms",
            s.changes.len(),
            heavy.map_or(0, |h| h.rerouted.len()),
            s.light.smps(),
            heavy.map_or(0, |h| h.smps),
            match heavy {
                Some(h) if h.full => format!(
                    "full read: {}",
                    h.because.as_ref().map_or_else(String::new, ToString::to_string)
                ),
                Some(h) => format!("partial: {} switches read", h.switches.len()),
                None => "none".to_owned(),
            },
            sim.counts().gets - g0,
            took * 1e3
        );
        // The sweep after: the light sweep on the new routes.
        let g0 = sim.counts().gets;
        let t = Instant::now();
        let s = w.sweep(&mut sim, false);
        println!(
            "  next sweep   {} changes, light {} SMPs + heavy {} SMPs ({} answered), {:.3} ms",
            s.changes.len(),
            s.light.smps(),
            s.heavy.as_ref().map_or(0, |h| h.smps),
            sim.counts().gets - g0,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}

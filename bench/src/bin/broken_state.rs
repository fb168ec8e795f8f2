//! `weft verify` on a catastrophically broken state: the fabric weft routes for an example
//! (default `examples/cluster-11664.weft`), then every linear forwarding table entry of every
//! switch rewritten to port 1. Nearly every route fails; the report must stay bounded (issue 7:
//! < 10 s and < 2 GB on the 11 664-node tree).
//!
//! ```text
//! bench/broken-state.sh [--runs N] [--keep DIR] [FILE.weft]
//! ```
//!
//! The state is written once as `broken.json`; then, `--runs` times (default 3), the release
//! `weft verify --state broken.json` runs in human and in JSON format under GNU `time`. Prints
//! medians of wall time and peak RSS, the output sizes, and weft's verdict lines.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::panic,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use std::path::PathBuf;
use weft_bench::{median, timed, weft_binary};
use weft_compiler::NoFiles;
use weft_fabric::{Lid, PortNum};
use weft_formats::state_json as json;

fn usage() -> ! {
    eprintln!("usage: broken_state [--runs N] [--keep DIR] [FILE.weft]");
    std::process::exit(2)
}

fn main() {
    let mut file = PathBuf::from("examples/cluster-11664.weft");
    let mut runs = 3usize;
    let mut keep = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--keep" => keep = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            s if s.starts_with('-') => usage(),
            f => file = PathBuf::from(f),
        }
    }
    let weft = weft_binary().unwrap_or_else(|| {
        eprintln!("build the release `weft` binary first (bench/broken-state.sh does)");
        std::process::exit(2)
    });
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        eprintln!("{}: {e}", file.display());
        std::process::exit(2)
    });
    let c = weft_compiler::check(&file.display().to_string(), &text, &NoFiles);
    let Some(e) = c
        .elaborated
        .filter(|_| !c.diagnostics.iter().any(|d| d.is_error()))
    else {
        eprintln!("{} does not check", file.display());
        std::process::exit(2)
    };
    let built = weft_compiler::build::build(&e).unwrap_or_else(|d| {
        eprintln!("{} does not route: {d:?}", file.display());
        std::process::exit(2)
    });
    let mut state = built.state.into_inner();
    let mut entries = 0u64;
    for sw in state.switches.values_mut() {
        let top = sw.lft.top().0;
        for lid in 1..=top {
            sw.lft.set(Lid(lid), PortNum(1));
            entries += 1;
        }
    }
    let dir = keep.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("weft-broken-state-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut out = Vec::new();
    json::write(&state, &mut out, &[]).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join("broken.json"), &out).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "== {}: {} switches, {} LFT entries set to port 1; broken.json {:.1} MB",
        file.display(),
        state.fabric.switch_count(),
        entries,
        out.len() as f64 / 1e6
    );
    for format in ["human", "json"] {
        let args = ["verify", "--state", "broken.json", "--format", format];
        let (mut secs, mut rss) = (Vec::new(), Vec::new());
        let mut last = None;
        for _ in 0..runs {
            let t = timed(&weft, &args, &dir);
            secs.push(t.secs);
            rss.push(t.rss_mib);
            last = Some(t);
        }
        let Some(last) = last else { continue };
        println!(
            "weft verify --format {format}: median {:.2} s, peak RSS {:.0} MiB over {runs} run(s) \
             (all: {}); exit {:?}; {} lines, {:.1} kB of output",
            median(secs.clone()),
            median(rss),
            secs.iter()
                .map(|s| format!("{s:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
            last.code,
            last.stdout.lines().count(),
            last.stdout.len() as f64 / 1e3
        );
        if format == "human" {
            for l in last.stdout.lines().filter(|l| {
                l.starts_with('×')
                    || l.starts_with('✓')
                    || l.starts_with('?')
                    || l.contains("HCA→HCA")
            }) {
                println!("  {l}");
            }
        }
    }
}

//! weft's verifier against `ibdmchk` (ibutils), side by side on the same OpenSM dump files.
//!
//! ```text
//! bench/vs-ibdmchk.sh [--runs N] [--engine ftree] [--keep DIR] [FILE.weft]
//! ```
//!
//! 1. The fabric (default `examples/cluster-5832.weft`) is written as an ibnetdiscover
//!    topology and loaded in ibsim; the real OpenSM routes it once (`opensm -o -R <engine>
//!    -D 0x43 --dump_files_dir DIR`, a private `OSM_CACHE_DIR`), leaving `opensm-lfts.dump`,
//!    `opensm-subnet.lst`, `opensm.fdbs`, `opensm.mcfdbs` and its `guid2lid`.
//! 2. On those same files, each `--runs` times (default 3), in turn:
//!    * `weft verify --topology topology.net --lfts opensm-lfts.dump --guid2lid guid2lid`
//!      (the release binary beside this one: all pairs, HCA and switch LIDs);
//!    * `ibdmchk -s opensm-subnet.lst -f opensm.fdbs -m opensm.mcfdbs -a` (`-a`: switch
//!      paths too).
//!
//!    Wall time and peak RSS of each child come from `wait4`'s rusage (through GNU `time`).
//! 3. A table of medians, the ratio, and what each said (weft's verdict lines and exit code;
//!    ibdmchk's summary lines).

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::panic,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use std::path::{Path, PathBuf};
use std::time::Duration;
use weft_bench::{median, timed, weft_binary};
use weft_compiler::NoFiles;
use weft_tests::ibsim::{Ibsim, Limits, Tools};

struct Opts {
    file: PathBuf,
    runs: usize,
    engine: String,
    keep: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!("usage: vs_ibdmchk [--runs N] [--engine ENGINE] [--keep DIR] [FILE.weft]");
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        file: PathBuf::from("examples/cluster-5832.weft"),
        runs: 3,
        engine: "ftree".to_owned(),
        keep: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => {
                o.runs = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--engine" => o.engine = args.next().unwrap_or_else(|| usage()),
            "--keep" => o.keep = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            s if s.starts_with('-') => usage(),
            f => o.file = PathBuf::from(f),
        }
    }
    o
}

fn main() {
    let o = parse_args();
    let tools = match Tools::find(&["ibsim", "opensm", "ibdmchk"]) {
        Ok(t) => t,
        Err(missing) => {
            eprintln!("missing tools: {}", missing.join(", "));
            std::process::exit(2);
        }
    };
    let ibdmchk = tools
        .programs
        .iter()
        .find(|(n, _)| n == "ibdmchk")
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| PathBuf::from("ibdmchk"));
    let weft = weft_binary().unwrap_or_else(|| {
        eprintln!("build the release `weft` binary first (bench/vs-ibdmchk.sh does)");
        std::process::exit(2)
    });
    let fabric = checked_fabric(&o);
    let net = weft_formats::ibnetdiscover::write(&fabric, None).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let dir = match &o.keep {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("weft-vs-ibdmchk-{}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    std::fs::write(dir.join("topology.net"), &net).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "== {}: {} hosts, {} switches; OpenSM `{}` on ibsim",
        o.file.display(),
        fabric.hca_count(),
        fabric.switch_count(),
        o.engine
    );
    run_opensm(&o, &tools, &fabric, &net, &dir);
    compare(&o, &weft, &ibdmchk, &dir);
    if o.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The fabric of `o.file`, which must check; exits 2 otherwise.
fn checked_fabric(o: &Opts) -> weft_fabric::Fabric {
    let text = std::fs::read_to_string(&o.file).unwrap_or_else(|e| {
        eprintln!("{}: {e}", o.file.display());
        std::process::exit(2)
    });
    let c = weft_compiler::check(&o.file.display().to_string(), &text, &NoFiles);
    let Some(e) = c
        .elaborated
        .filter(|_| !c.diagnostics.iter().any(|d| d.is_error()))
    else {
        eprintln!("{} does not check", o.file.display());
        std::process::exit(2)
    };
    e.fabric
}

/// OpenSM (`o.engine`) on ibsim over `net`, its dumps into `dir`; prints its time and the
/// dumps' sizes.
fn run_opensm(o: &Opts, tools: &Tools, fabric: &weft_fabric::Fabric, net: &str, dir: &Path) {
    let sim = Ibsim::start(tools, net, Some(Limits::for_fabric(fabric)))
        .unwrap_or_else(|e| panic!("ibsim: {e}"));
    let cache = format!("OSM_CACHE_DIR={}", dir.display());
    let log = dir.join("osm.log").display().to_string();
    let dir_s = dir.display().to_string();
    let t = std::time::Instant::now();
    sim.run(
        "env",
        &[
            cache.as_str(),
            "opensm",
            "-o",
            "-R",
            &o.engine,
            "-D",
            "0x43",
            "-f",
            &log,
            "--dump_files_dir",
            &dir_s,
        ],
        Duration::from_secs(1800),
    )
    .unwrap_or_else(|e| panic!("opensm: {e}"));
    println!("   OpenSM run: {:.1} s", t.elapsed().as_secs_f64());
    drop(sim);
    for f in [
        "opensm-lfts.dump",
        "opensm-subnet.lst",
        "opensm.fdbs",
        "guid2lid",
    ] {
        let size = std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0);
        println!("   {f}: {:.1} MB", size as f64 / 1e6);
    }
}

/// `weft verify` and `ibdmchk -a` on the dumps in `dir`, `o.runs` times each: prints their
/// medians and the last run's summary lines.
fn compare(o: &Opts, weft: &Path, ibdmchk: &Path, dir: &Path) {
    let weft_args = [
        "verify",
        "--topology",
        "topology.net",
        "--lfts",
        "opensm-lfts.dump",
        "--guid2lid",
        "guid2lid",
    ];
    let ibdm_args = [
        "-s",
        "opensm-subnet.lst",
        "-f",
        "opensm.fdbs",
        "-m",
        "opensm.mcfdbs",
        "-a",
    ];
    let (mut wt, mut wr, mut it, mut ir) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut last_weft = None;
    let mut last_ibdm = None;
    for run in 0..o.runs {
        let w = timed(weft, &weft_args, dir);
        let i = timed(ibdmchk, &ibdm_args, dir);
        eprintln!(
            "   run {}: weft {:.2} s / {:.0} MiB, ibdmchk {:.2} s / {:.0} MiB",
            run + 1,
            w.secs,
            w.rss_mib,
            i.secs,
            i.rss_mib
        );
        wt.push(w.secs);
        wr.push(w.rss_mib);
        it.push(i.secs);
        ir.push(i.rss_mib);
        last_weft = Some(w);
        last_ibdm = Some(i);
    }
    let (w, i) = (median(wt), median(it));
    println!(
        "\n{:<30} {:>12} {:>14}\n{:<30} {:>12.2} {:>14.2}\n{:<30} {:>12.0} {:>14.0}\n{:<30} {:>12} {:>14.1}x",
        "",
        "weft verify",
        "ibdmchk -a",
        "wall, median (s)",
        w,
        i,
        "peak RSS, median (MiB)",
        median(wr),
        median(ir),
        "speed-up",
        "",
        i / w
    );
    if let Some(r) = last_weft {
        println!("\nweft (exit {:?}):", r.code);
        for l in r.stdout.lines().filter(|l| {
            l.starts_with('×') || l.starts_with('✓') || l.starts_with('?') || l.contains("HCA→HCA")
        }) {
            println!("  {l}");
        }
        println!("  ({} lines of output)", r.stdout.lines().count());
    }
    if let Some(r) = last_ibdm {
        println!("\nibdmchk (exit {:?}), summary lines:", r.code);
        for l in r
            .stdout
            .lines()
            .filter(|l| {
                l.contains("-I-")
                    && (l.contains("Total") || l.contains("credit") || l.contains("paths"))
            })
            .take(12)
        {
            println!("  {l}");
        }
        println!("  ({} lines of output)", r.stdout.lines().count());
    }
}

//! Deploying a fabric: `weft apply --target mad` against OpenSM distributing the same tables,
//! side by side on ibsim and the same machine.
//!
//! ```text
//! bench/deploy-vs-opensm.sh [--runs N] [--windows W,W…] [FILE.weft…]
//!                       # default examples/cluster-{648,5832,11664}.weft, one run each
//! ```
//!
//! 1. `weft build FILE` once (the release `weft` beside this binary).
//! 2. Per run, each side on a fresh simulator loaded with the build's `topology.net` (weft's
//!    LIDs; switches forwarding nothing):
//!    * **weft**: `weft apply BUILD --target mad` (discovery, reading every LFT, planning the
//!      initial deployment with every step proven, journal, the writes, read-back of every
//!      block), timed as a whole process; its SMP count is what it reports (the reads of
//!      planning, then the apply's Gets and Sets), and SMPs per second is that count over the
//!      wall time (planning CPU time included). The first run's tables are read back with
//!      `dump_fts` and must equal the build's.
//!    * **OpenSM** (3.3.23): `opensm -o -R file -U BUILD/lfts.dump` with the build's
//!      `guid2lid` as its cache (the same LIDs), timed as a whole process (it also activates
//!      ports, sets up multicast and the SA: more than distributing tables), and from its log
//!      (`-D 0x7`) the interval from `building routing with 'file'` to `SWITCHES CONFIGURED
//!      FOR UNICAST` (loading the file and distributing the LFT blocks until every one was
//!      acknowledged).
//!    * **mad alone**: this binary again under the same simulator (`--child-rate W`): 2 000
//!      LFT-block Gets, then 2 000 Sets, to a switch one hop away, one SMP at a time; then
//!      the same 2 000 Gets as one batch (`get_all`) and the 2 000 Sets as one batch
//!      (`set_all`), up to W in flight (`MadOptions::window`; by default its default, and
//!      `--windows 1,4,16` measures each one given, a child per window).
//! 3. Per fabric, medians over `--runs` (default 1), min and max, and SMPs per LFT block
//!    written (blocks holding a set entry in the build); then one table of every fabric:
//!    seconds each side, the ratio, SMPs, SMPs per block and SMPs per second.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]
use weft_formats::state_json::FromJson;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use weft_bench::{log_span_ms, log_time, median, weft_binary};
use weft_formats::build_dir;
use weft_tests::ibsim::{self, Ibsim, Limits};

/// Under ibsim (re-run by `main` with `--child-rate W`): LFT-block Gets and Sets per second
/// through `mad` to a switch one hop from the SM's node, one SMP at a time, then in batches
/// with up to `window` in flight.
fn child_rate(window: u32) {
    use weft_deploy::{Attr, DrPath, Mad, MadOptions, Target, Transport, TransportExt};
    let mut mad = Mad::open(&MadOptions {
        window,
        ..MadOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let local = mad.node_info(&DrPath::local()).unwrap();
    let port = (1..=local.num_ports)
        .find(|&p| {
            mad.node_info(&DrPath(vec![p]))
                .is_ok_and(|n| n.node_type == weft_deploy::smp::NodeType::Switch)
        })
        .expect("a switch one hop away");
    let t = Target {
        path: DrPath(vec![port]),
        attr: Attr::Lft,
        modifier: 0,
    };
    let block = mad.get(&t).unwrap();
    for _ in 0..20 {
        mad.get(&t).unwrap();
    }
    const N: u32 = 2000;
    let start = Instant::now();
    for _ in 0..N {
        mad.get(&t).unwrap();
    }
    let get = f64::from(N) / start.elapsed().as_secs_f64();
    let start = Instant::now();
    for _ in 0..N {
        mad.set(&t, &block).unwrap();
    }
    let set = f64::from(N) / start.elapsed().as_secs_f64();
    println!("rate {get:.0} {set:.0}");
    let gets = vec![t.clone(); N as usize];
    let sets = vec![(t.clone(), block); N as usize];
    let start = Instant::now();
    assert!(mad.get_all(&gets).iter().all(|r| r.as_ref() == Ok(&block)));
    let get = f64::from(N) / start.elapsed().as_secs_f64();
    let start = Instant::now();
    assert!(mad.set_all(&sets).iter().all(|r| r.as_ref() == Ok(&block)));
    let set = f64::from(N) / start.elapsed().as_secs_f64();
    println!("batch {get:.0} {set:.0}");
}

/// The two numbers after `key ` on a line of `out`.
fn rates(out: &str, key: &str) -> Option<(f64, f64)> {
    let r: Vec<f64> = out
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))?
        .split(' ')
        .filter_map(|x| x.parse().ok())
        .collect();
    match r.as_slice() {
        [g, s] => Some((*g, *s)),
        _ => None,
    }
}

/// One fabric's medians.
struct Row {
    name: String,
    nodes: usize,
    blocks: usize,
    weft_s: f64,
    smps: f64,
    osm_s: f64,
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--child-rate") {
        let window = std::env::args()
            .nth(2)
            .and_then(|w| w.parse().ok())
            .unwrap_or(weft_deploy::MadOptions::DEFAULT_WINDOW);
        child_rate(window);
        return;
    }
    let usage = "usage: deploy_vs_opensm [--runs N] [--windows W,W…] [FILE.weft…]";
    let mut runs = 1usize;
    let mut windows = vec![weft_deploy::MadOptions::DEFAULT_WINDOW];
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(1),
            "--windows" => {
                windows = args
                    .next()
                    .map(|w| w.split(',').filter_map(|n| n.parse().ok()).collect())
                    .filter(|w: &Vec<u32>| !w.is_empty())
                    .unwrap_or_else(|| panic!("{usage}"))
            }
            _ if a.starts_with('-') => panic!("{usage}"),
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        files = ["648", "5832", "11664"]
            .iter()
            .map(|n| weft_bench::root().join(format!("examples/cluster-{n}.weft")))
            .collect();
    }
    let tools = ibsim::Tools::find(&["opensm", "dump_fts"])
        .unwrap_or_else(|missing| panic!("missing: {}", missing.join(", ")));
    let weft = weft_binary()
        .expect("the release weft binary beside this one (bench/deploy-vs-opensm.sh builds it)");
    let rows: Vec<Row> = files
        .iter()
        .map(|f| one_fabric(f, runs, &windows, &tools, &weft))
        .collect();
    println!();
    println!(
        "| fabric | nodes | LFT blocks written | weft apply (s) | OpenSM whole run (s) | ratio | weft SMPs | SMPs per block | SMPs/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.2}× | {:.0} | {:.2} | {:.0} |",
            r.name,
            r.nodes,
            r.blocks,
            r.weft_s,
            r.osm_s,
            r.weft_s / r.osm_s,
            r.smps,
            r.smps / r.blocks.max(1) as f64,
            r.smps / r.weft_s
        );
    }
}

/// LFT blocks holding at least one set entry: the blocks a first deployment writes.
fn blocks_written(state: &weft_fabric::ValidState) -> usize {
    let mut blocks = std::collections::BTreeSet::new();
    for ((g, lid), _) in weft_tests::lft_entries(state) {
        blocks.insert((g, lid / 64));
    }
    blocks.len()
}

/// Runs `file` `runs` times (see the module's doc), prints its lines and returns its medians.
fn one_fabric(
    file: &std::path::Path,
    runs: usize,
    windows: &[u32],
    tools: &ibsim::Tools,
    weft: &std::path::Path,
) -> Row {
    let b = Built::make(file, weft);
    let mut s = Samples::new(windows.len());
    for run in 0..runs {
        let (secs, n) = weft_run(&b, file, run, windows, tools, weft, &mut s);
        opensm_run(&b, run, tools, &mut s);
        eprintln!(
            "{} run {}: weft {:.3} s ({} SMPs), opensm {:.3} s",
            file.display(),
            run + 1,
            secs,
            n,
            s.osm_s.last().unwrap()
        );
    }
    print_summary(file, runs, windows, &b, &s);
    let _ = std::fs::remove_dir_all(&b.work);
    Row {
        name: file
            .file_stem()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        nodes: b.state.fabric.nodes().len(),
        blocks: b.blocks,
        weft_s: median(s.weft_s),
        smps: median(s.smps),
        osm_s: median(s.osm_s),
    }
}

/// A fabric built once for every run: its work directory, build directory, state and
/// ibsim topology.
struct Built {
    work: PathBuf,
    build: PathBuf,
    state: weft_fabric::ValidState,
    net: String,
    limits: Limits,
    /// The LFT blocks a first deployment writes.
    blocks: usize,
}

impl Built {
    /// Builds `file` with `weft` into a fresh work directory.
    fn make(file: &std::path::Path, weft: &std::path::Path) -> Built {
        let work = std::env::temp_dir().join(format!("weft-deploy-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let build = work.join("build");
        let o = std::process::Command::new(weft)
            .args([
                "build",
                file.to_str().unwrap(),
                "-o",
                build.to_str().unwrap(),
                "-q",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let state = weft_fabric::ValidState::from_json(
            &std::fs::read_to_string(build.join(build_dir::STATE)).unwrap(),
        )
        .unwrap();
        let net = std::fs::read_to_string(build.join(build_dir::TOPOLOGY)).unwrap();
        let limits = Limits::for_fabric(&state.fabric);
        let blocks = blocks_written(&state);
        Built {
            work,
            build,
            state,
            net,
            limits,
            blocks,
        }
    }
}

/// Every run's measurements.
struct Samples {
    weft_s: Vec<f64>,
    smps: Vec<f64>,
    osm_s: Vec<f64>,
    osm_dist: Vec<f64>,
    gets: Vec<f64>,
    sets: Vec<f64>,
    /// Per window: batched Gets/s and Sets/s.
    batched: Vec<(Vec<f64>, Vec<f64>)>,
}

impl Samples {
    /// No runs yet, for `windows` windows.
    fn new(windows: usize) -> Samples {
        Samples {
            weft_s: Vec::new(),
            smps: Vec::new(),
            osm_s: Vec::new(),
            osm_dist: Vec::new(),
            gets: Vec::new(),
            sets: Vec::new(),
            batched: vec![(Vec::new(), Vec::new()); windows],
        }
    }
}

/// Run `run` of weft on a fresh ibsim: `weft apply`, the read-back (first run), then the raw
/// SMP rates through `mad`. Returns its seconds and the SMPs it sent.
fn weft_run(
    b: &Built,
    file: &std::path::Path,
    run: usize,
    windows: &[u32],
    tools: &ibsim::Tools,
    weft: &std::path::Path,
    s: &mut Samples,
) -> (f64, u64) {
    let sim = Ibsim::start(tools, &b.net, Some(b.limits)).unwrap();
    let t = Instant::now();
    let o = sim
        .run_env(
            weft.to_str().unwrap(),
            &[
                "apply",
                b.build.to_str().unwrap(),
                "--target",
                "mad",
                "--lock-dir",
                b.work.to_str().unwrap(),
                "--journal",
                b.work.join(format!("j{run}")).to_str().unwrap(),
            ],
            &[],
            Duration::from_secs(1800),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let secs = t.elapsed().as_secs_f64();
    s.weft_s.push(secs);
    // The Gets it reports include discovery and the reads planning made.
    let n = count(&o.stdout, "landed, ", " Set") + count(&o.stdout, "Set and ", " Get");
    s.smps.push(n as f64);
    if run == 0 {
        let fts = sim.run("dump_fts", &[], Duration::from_secs(600)).unwrap();
        assert_eq!(
            weft_tests::parse_fts(&fts.stdout),
            weft_tests::lft_entries(&b.state),
            "weft's deployment reads back equal"
        );
        eprintln!(
            "{}: dump_fts reads back the build's tables, entry for entry",
            file.display()
        );
    }
    // Raw SMP rate through `mad`, on the deployed fabric.
    let me = std::env::current_exe().unwrap();
    for (w, (bg, bs)) in windows.iter().zip(&mut s.batched) {
        let o = sim
            .run_env(
                me.to_str().unwrap(),
                &["--child-rate", &w.to_string()],
                &[],
                Duration::from_secs(600),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        if let Some((g, set)) = rates(&o.stdout, "rate") {
            s.gets.push(g);
            s.sets.push(set);
        }
        if let Some((g, s)) = rates(&o.stdout, "batch") {
            bg.push(g);
            bs.push(s);
        }
    }
    drop(sim);
    (secs, n)
}

/// Run `run` of OpenSM on a fresh ibsim, routing from the build's LFT file.
fn opensm_run(b: &Built, run: usize, tools: &ibsim::Tools, s: &mut Samples) {
    let sim = Ibsim::start(tools, &b.net, Some(b.limits)).unwrap();
    let cache = b.work.join(format!("osm{run}"));
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::copy(b.build.join(build_dir::GUID2LID), cache.join("guid2lid")).unwrap();
    let log = cache.join("osm.log");
    let t = Instant::now();
    sim.run_env(
        "opensm",
        &[
            "-o",
            "-R",
            "file",
            "-U",
            b.build.join(build_dir::LFTS).to_str().unwrap(),
            "-D",
            "0x7",
            "-f",
            log.to_str().unwrap(),
        ],
        &[("OSM_CACHE_DIR", cache.to_str().unwrap())],
        Duration::from_secs(1800),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    s.osm_s.push(t.elapsed().as_secs_f64());
    if let Some(ms) = distribution_ms(&std::fs::read_to_string(&log).unwrap_or_default()) {
        s.osm_dist.push(ms);
    }
    drop(sim);
}

/// Prints the medians [min, max] of every measurement.
fn print_summary(file: &std::path::Path, runs: usize, windows: &[u32], b: &Built, s: &Samples) {
    let stat = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{:.3} [{:.3}, {:.3}]", median(v.to_vec()), lo, hi)
    };
    let rate: Vec<f64> = s.smps.iter().zip(&s.weft_s).map(|(n, s)| n / s).collect();
    let per_block: Vec<f64> = s.smps.iter().map(|n| n / b.blocks.max(1) as f64).collect();
    println!(
        "fabric: {} ({} switches, {} nodes, {} LFT blocks written), {runs} runs, medians [min, max]",
        file.display(),
        b.state.fabric.switch_count(),
        b.state.fabric.nodes().len(),
        b.blocks
    );
    println!(
        "weft apply --target mad (whole process, s):      {}",
        stat(&s.weft_s)
    );
    println!(
        "  SMPs it sent (reads, writes, read-back):        {}",
        stat(&s.smps).replace(".000", "")
    );
    println!(
        "  SMPs per LFT block written:                     {}",
        stat(&per_block)
    );
    println!(
        "  SMPs per second (over the whole process):       {}",
        stat(&rate)
    );
    println!(
        "mad alone, one SMP at a time (LFT block, 1 hop): {} Gets/s, {} Sets/s",
        stat(&s.gets),
        stat(&s.sets)
    );
    for (w, (bg, bs)) in windows.iter().zip(&s.batched) {
        println!(
            "  a batch of 2 000, up to {w:>4} in flight:        {} Gets/s, {} Sets/s",
            stat(bg),
            stat(bs)
        );
    }
    println!(
        "opensm -o -R file (whole process, s):             {}",
        stat(&s.osm_s)
    );
    println!(
        "  routing from the file + LFTs acknowledged (ms): {}",
        stat(&s.osm_dist)
    );
    println!(
        "ratio weft / opensm (whole process, medians):     {:.2}",
        median(s.weft_s.clone()) / median(s.osm_s.clone())
    );
}

/// The number between `before` and `after` in `text`, or 0.
fn count(text: &str, before: &str, after: &str) -> u64 {
    text.split(before)
        .nth(1)
        .and_then(|r| r.split(after).next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// From OpenSM's log: `building routing with 'file'` to `SWITCHES CONFIGURED FOR UNICAST`, ms.
/// (The banner has no time: the last timed line before it counts.)
fn distribution_ms(log: &str) -> Option<f64> {
    let start = log
        .lines()
        .find(|l| l.contains("building routing with 'file'"))
        .and_then(log_time)?;
    let mut end = None;
    for l in log.lines() {
        if l.contains("SWITCHES CONFIGURED FOR UNICAST") {
            break;
        }
        if let Some(t) = log_time(l) {
            end = Some(t);
        }
    }
    Some(log_span_ms(start, end?))
}

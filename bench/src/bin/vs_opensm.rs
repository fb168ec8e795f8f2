//! weft against OpenSM, side by side on the same fabric and the same machine.
//!
//! ```text
//! cargo run --release -p weft-bench --bin vs_opensm -- [OPTIONS] [FILE.weft …]
//! bench/vs-opensm.sh examples/cluster-648.weft examples/cluster-11664.weft
//! ```
//!
//! For each fabric (default: `examples/cluster-648.weft`; a file not ending in `.weft` is an
//! ibnetdiscover dump, imported as `weft import` does, with no edits):
//!
//! 1. **weft**: parse + check once, then time LID assignment alone and LID assignment +
//!    routing (`build::build`: the engine, sFtree completion for `fat_tree`, the state), the
//!    median (and min/max) over `--runs` runs; then the quality metrics of the result.
//! 2. **OpenSM** (3.3.23 on ibsim 0.10), per engine (`--engines`, default
//!    `ftree,updn,minhop,dfsssp`), on a fresh simulator each time:
//!    * the topology is written with `weft_formats::ibnetdiscover::write`, and ibsim is started
//!      with its node/switch/port limits raised for the fabric (`Limits::for_fabric`);
//!    * `opensm -o -R <engine> -D 0x7 -f <log> --dump_files_dir <dir>` with
//!      `OSM_CACHE_DIR=<dir>` (a fresh, private cache: OpenSM otherwise reloads LIDs from
//!      `/var/cache/opensm`), killed after `--timeout` seconds;
//!    * **routing time** from OpenSM's log: from the first
//!      `ucast_mgr_route: building routing with '<engine>' routing algorithm...` (VERBOSE, hence
//!      `-D 0x7`) to `osm_ucast_mgr_process: <engine> tables configured on all switches` (INFO).
//!      In OpenSM 3.3.23 (`osm_ucast_mgr.c`) that interval is `ucast_mgr_route()`: the engine's
//!      `build_lid_matrices` (or the min-hop matrices) and `ucast_build_fwd_tables`, plus
//!      queueing the changed LFT blocks (`osm_ucast_mgr_set_fwd_tables`; the MADs are sent
//!      asynchronously, and the wait for them ends at `SWITCHES CONFIGURED FOR UNICAST`, which
//!      is not counted). Discovery and LID assignment are not in it; weft's time includes LID
//!      assignment. If the engine fails and OpenSM falls back (to `minhop`), the engine named in
//!      the `tables configured` line says so and the table marks the column;
//!    * OpenSM's LFTs read back from the simulated switches with `dump_fts` (under the
//!      libumad2sim preload) and OpenSM's LIDs from the `guid2lid` it wrote, assembled with
//!      `weft_formats::opensm::assemble` onto weft's own `Fabric` (same nodes, same order: the
//!      traffic patterns pair the same hosts on both sides).
//! 3. The same metrics (`weft_metrics::quality`, same seed) on every state, and one
//!    comparison table; `--json FILE` writes everything as JSON.
//! 4. Layers (VLs) each routing needs: weft's (1, or what `layered` found) and, from OpenSM's
//!    log, LASH's `Lanes needed`, DFSSSP's `Virtual Lanes needed` and the virtual layers Nue
//!    processed (Nue runs with QoS on, `-Q`, and `--nue_max_num_vls` = weft's layers: it routes
//!    on the VLs it is given, one being enough with its escape paths, so it is compared at equal
//!    VLs; its log runs at DEBUG, `-D 0xf`, to name them, which slows its routing time). For
//!    `layered`: `vs_opensm --engines lash,dfsssp,nue bench/fabrics/*.weft` (4×4 and 5×5 tori,
//!    a ring, the degraded mesh, a fat-tree whose faults break up*/down*, two irregular
//!    fabrics); at 1 000 switches, the `irregular` binary's fabric with `--engines
//!    lash,dfsssp`.
//!
//! Options: `--runs N` (weft timing runs, default 5), `--osm-runs N` (OpenSM runs per engine
//! for the routing-time median; default 3 below 2 000 hosts, else 1), `--engines a,b`,
//! `--timeout SECS` (each OpenSM and `dump_fts` run, default 1800), `--weft-only`,
//! `--partial` (dumps read as `weft import --partial` reads them: a cable to a node the dump
//! does not describe is left out),
//! `--keep DIR` (keep OpenSM's logs and dumps there), `--json FILE`, `--seed N`.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use weft_compiler::NoFiles;
use weft_fabric::{Fabric, LidAssignment};
use weft_metrics::{self as metrics, Quality, QualityOptions};
use weft_tests::ibsim::{Ibsim, Limits, Tools};

#[derive(Debug)]
struct Opts {
    files: Vec<PathBuf>,
    runs: usize,
    osm_runs: Option<usize>,
    engines: Vec<String>,
    timeout: Duration,
    weft_only: bool,
    keep: Option<PathBuf>,
    json: Option<PathBuf>,
    seed: Option<u64>,
    bisections: Option<usize>,
    /// Dumps are read as `weft import --partial` reads them.
    partial: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: vs_opensm [--runs N] [--osm-runs N] [--engines ftree,updn,minhop,dfsssp] \
         [--timeout SECS] [--weft-only] [--partial] [--keep DIR] [--json FILE] [--seed N] [--bisections N] [FILE.weft …]"
    );
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        files: Vec::new(),
        runs: 5,
        osm_runs: None,
        engines: ["ftree", "updn", "minhop", "dfsssp"]
            .map(String::from)
            .to_vec(),
        timeout: Duration::from_secs(1800),
        weft_only: false,
        keep: None,
        json: None,
        seed: None,
        bisections: None,
        partial: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--runs" => o.runs = value().parse().unwrap_or_else(|_| usage()),
            "--osm-runs" => o.osm_runs = Some(value().parse().unwrap_or_else(|_| usage())),
            "--engines" => o.engines = value().split(',').map(String::from).collect(),
            "--timeout" => {
                o.timeout = Duration::from_secs(value().parse().unwrap_or_else(|_| usage()))
            }
            "--weft-only" => o.weft_only = true,
            "--partial" => o.partial = true,
            "--keep" => o.keep = Some(PathBuf::from(value())),
            "--json" => o.json = Some(PathBuf::from(value())),
            "--seed" => o.seed = Some(value().parse().unwrap_or_else(|_| usage())),
            "--bisections" => o.bisections = Some(value().parse().unwrap_or_else(|_| usage())),
            "-h" | "--help" => usage(),
            f if !f.starts_with('-') => o.files.push(PathBuf::from(f)),
            _ => usage(),
        }
    }
    if o.files.is_empty() {
        o.files
            .push(weft_bench::root().join("examples/cluster-648.weft"));
    }
    o.runs = o.runs.max(1);
    o
}

/// Median, min and max of some durations, in milliseconds.
#[derive(Clone, Copy, Debug, Serialize)]
struct Stat {
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    runs: usize,
}

impl Stat {
    fn of(mut ms: Vec<f64>) -> Option<Stat> {
        if ms.is_empty() {
            return None;
        }
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        let median = if n % 2 == 1 {
            ms[n / 2]
        } else {
            (ms[n / 2 - 1] + ms[n / 2]) / 2.0
        };
        Some(Stat {
            median_ms: median,
            min_ms: ms[0],
            max_ms: ms[n - 1],
            runs: n,
        })
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// weft's timings, collected before and between the OpenSM runs.
#[derive(Default)]
struct WeftTimer {
    lids: Vec<f64>,
    build: Vec<f64>,
    build_1t: Vec<f64>,
}

impl WeftTimer {
    /// Times LID assignment, then a build on the default thread pool, then one on one thread.
    fn once(
        &mut self,
        e: &weft_compiler::Elaborated,
        one_thread: &rayon::ThreadPool,
    ) -> Result<weft_compiler::build::Built, String> {
        let fail = |d: Vec<weft_compiler::diagnostic::Diagnostic>| {
            format!(
                "weft cannot build: {}",
                d.first().map_or("", |x| x.message.as_str())
            )
        };
        let t = Instant::now();
        let l = weft_compiler::lids::assign(e);
        self.lids.push(ms(t.elapsed()));
        drop(l);
        let t = Instant::now();
        let b1 = one_thread
            .install(|| weft_compiler::build::build(e))
            .map_err(fail)?;
        self.build_1t.push(ms(t.elapsed()));
        drop(b1);
        let t = Instant::now();
        let b = weft_compiler::build::build(e).map_err(fail)?;
        self.build.push(ms(t.elapsed()));
        Ok(b)
    }
}

#[derive(Debug, Serialize)]
struct WeftRun {
    engine: String,
    /// Layers (VLs) the routing needs: 1, or what `layered` found.
    layers: u8,
    /// LID assignment alone.
    lids: Stat,
    /// LID assignment + routing (+ sFtree) + the state: `build::build`, default thread pool.
    build: Stat,
    /// The same on one thread.
    build_one_thread: Stat,
    /// Parse + elaborate + check, once.
    check_ms: f64,
    /// The quality metrics, once.
    metrics_ms: f64,
    /// Whether weft's verifier proves the tables deadlock-free (on the VLs they use).
    deadlock_free: bool,
    quality: Quality,
}

#[derive(Debug, Serialize)]
struct OsmRun {
    /// The engine asked for (`-R`).
    engine: String,
    /// The engine OpenSM says configured the tables (differs after a fallback).
    engine_used: Option<String>,
    /// Routing time from the log, one per run.
    routing: Option<Stat>,
    /// Wall time of the whole `opensm -o` run (discovery, LIDs, routing, LFT MADs), first run.
    opensm_wall_ms: Option<f64>,
    /// Wall time of `dump_fts`.
    dump_fts_ms: Option<f64>,
    /// What went wrong or is worth knowing.
    notes: Vec<String>,
    quality: Option<Quality>,
    /// Whether weft's verifier proves the LFTs read back deadlock-free on one VL (OpenSM's SL
    /// and VL choices are not read back, so an engine that needs more VLs is not proven).
    deadlock_free: Option<bool>,
    /// Layers (VLs) the engine used, from its log: LASH's `Lanes needed`, DFSSSP's `Virtual
    /// Lanes needed`, Nue's highest `Processing virtual layer` + 1; 1 for engines without.
    layers: Option<u8>,
}

#[derive(Debug, Serialize)]
struct FabricRun {
    file: String,
    /// `/proc/loadavg` when the fabric's run started (the machine may be shared).
    loadavg: Option<String>,
    fabric: String,
    hosts: usize,
    switches: usize,
    weft: WeftRun,
    opensm: Vec<OsmRun>,
}

fn main() {
    let opts = parse_args();
    let mut results = Vec::new();
    for file in &opts.files {
        match run_fabric(file, &opts) {
            Ok(r) => {
                print!("{}", table(&r));
                results.push(r);
            }
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                std::process::exit(1);
            }
        }
    }
    if let Some(p) = &opts.json {
        let text = serde_json::to_string_pretty(&results).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::write(p, text) {
            eprintln!("cannot write {}: {e}", p.display());
            std::process::exit(1);
        }
    }
}

fn run_fabric(file: &Path, opts: &Opts) -> Result<FabricRun, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let name = file.display().to_string();
    let loadavg = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    // A dump (anything not `.weft`) is imported as `weft import` does, with no edits.
    let text = if file.extension().is_some_and(|x| x == "weft") {
        text
    } else {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        weft_compiler::import_ibnetdiscover_with(
            &text,
            &name,
            weft_compiler::diagnostic::SourceId(0),
            None,
            &stem,
            weft_compiler::ImportOptions {
                partial: opts.partial,
                strict: false,
            },
            &[],
        )
        .map_err(|d| {
            format!(
                "weft import: {}",
                d.first().map_or("", |x| x.message.as_str())
            )
        })?
        .0
    };
    let t = Instant::now();
    let c = weft_compiler::check(&name, &text, &NoFiles);
    let check_ms = ms(t.elapsed());
    if c.has_errors() {
        return Err(format!("{} error(s) in the fabric", c.diagnostics.len()));
    }
    let e = c.elaborated.ok_or("no fabric")?;
    let fabric = e.fabric.clone();
    eprintln!(
        "== {name}: {} hosts, {} switches",
        fabric.hca_count(),
        fabric.switch_count()
    );

    // weft: LIDs alone, then LIDs + routing, medians.
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| e.to_string())?;
    let mut timer = WeftTimer::default();
    let mut built = None;
    for _ in 0..opts.runs {
        built = Some(timer.once(&e, &one_thread)?);
    }
    let built = built.ok_or("no build")?;
    let mut qopts = QualityOptions::default();
    if let Some(s) = opts.seed {
        qopts.seed = s;
    }
    if opts.bisections.is_some() {
        qopts.bisections = opts.bisections;
    }
    let t = Instant::now();
    let quality = metrics::quality(&built.state, &qopts);
    let metrics_ms = ms(t.elapsed());
    let weft_deadlock_free = deadlock_free(&built.state);
    eprintln!(
        "   weft {}: build median {:.1} ms, metrics {:.0} ms",
        built.engine,
        Stat::of(timer.build.clone()).map_or(0.0, |s| s.median_ms),
        metrics_ms
    );

    let mut opensm = Vec::new();
    if !opts.weft_only {
        match Tools::find(&["opensm", "dump_fts", "env"]) {
            Err(missing) => eprintln!(
                "   OpenSM side skipped: missing {} (install opensm, ibsim-utils, \
                 libumad2sim0, infiniband-diags)",
                missing.join(", ")
            ),
            Ok(tools) => {
                let osm_runs =
                    opts.osm_runs
                        .unwrap_or(if fabric.hca_count() < 2000 { 3 } else { 1 });
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                for engine in &opts.engines {
                    let r = run_opensm(
                        &tools,
                        &fabric,
                        engine,
                        osm_runs,
                        &stem,
                        &qopts,
                        opts,
                        built.lanes.layers,
                    );
                    // Another weft run in the same conditions (the machine may be shared).
                    timer.once(&e, &one_thread)?;
                    eprintln!(
                        "   opensm {engine}: routing {} ({} run(s)){}",
                        r.routing
                            .map_or("-".to_owned(), |s| format!("{:.1} ms", s.median_ms)),
                        r.routing.map_or(0, |s| s.runs),
                        if r.notes.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", r.notes.join("; "))
                        }
                    );
                    opensm.push(r);
                }
            }
        }
    }
    let weft = WeftRun {
        engine: built.engine.name().to_owned(),
        layers: built.lanes.layers,
        lids: Stat::of(timer.lids).ok_or("no runs")?,
        build: Stat::of(timer.build).ok_or("no runs")?,
        build_one_thread: Stat::of(timer.build_1t).ok_or("no runs")?,
        check_ms,
        metrics_ms,
        deadlock_free: weft_deadlock_free,
        quality,
    };
    Ok(FabricRun {
        file: name,
        loadavg,
        fabric: fabric.name.clone(),
        hosts: fabric.hca_count(),
        switches: fabric.switch_count(),
        weft,
        opensm,
    })
}

/// Whether weft's verifier proves `state`'s routes deadlock-free (every required route, the
/// channel dependencies on the VLs the state declares).
fn deadlock_free(state: &weft_fabric::ValidState) -> bool {
    let opts = weft_verifier::Options {
        properties: vec![weft_verifier::Property::DeadlockFree],
        certificate: false,
        ..weft_verifier::Options::default()
    };
    weft_verifier::verify(state, &opts).is_proven()
}

/// A private work directory for one OpenSM run.
fn work_dir(opts: &Opts, stem: &str, engine: &str, run: usize) -> Result<PathBuf, String> {
    let base = match &opts.keep {
        Some(k) => k.clone(),
        None => std::env::temp_dir().join(format!("weft-vs-opensm-{}", std::process::id())),
    };
    let dir = base.join(format!("{stem}-{engine}-{run}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
fn run_opensm(
    tools: &Tools,
    fabric: &Fabric,
    engine: &str,
    runs: usize,
    stem: &str,
    qopts: &QualityOptions,
    opts: &Opts,
    nue_vls: u8,
) -> OsmRun {
    let mut out = OsmRun {
        engine: engine.to_owned(),
        engine_used: None,
        routing: None,
        opensm_wall_ms: None,
        dump_fts_ms: None,
        notes: Vec::new(),
        quality: None,
        deadlock_free: None,
        layers: None,
    };
    let net = match weft_formats::ibnetdiscover::write(fabric, None) {
        Ok(n) => n,
        Err(e) => {
            out.notes.push(format!("cannot write the topology: {e}"));
            return out;
        }
    };
    let mut times = Vec::new();
    for run in 0..runs {
        match opensm_once(
            tools, fabric, &net, engine, run, stem, qopts, opts, nue_vls, &mut out,
        ) {
            Ok(Some(t)) => times.push(t),
            Ok(None) => {}
            Err(e) => {
                out.notes.push(e);
                break;
            }
        }
    }
    out.routing = Stat::of(times);
    if opts.keep.is_none() {
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("weft-vs-opensm-{}", std::process::id())),
        );
    }
    out
}

/// One OpenSM run on a fresh simulator: its routing time, and on the first run the LFTs
/// and their quality.
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
fn opensm_once(
    tools: &Tools,
    fabric: &Fabric,
    net: &str,
    engine: &str,
    run: usize,
    stem: &str,
    qopts: &QualityOptions,
    opts: &Opts,
    nue_vls: u8,
    out: &mut OsmRun,
) -> Result<Option<f64>, String> {
    let dir = work_dir(opts, stem, engine, run)?;
    let sim = Ibsim::start(tools, net, Some(Limits::for_fabric(fabric))).map_err(|e| {
        format!(
            "ibsim did not start: {}",
            e.to_string().lines().next().unwrap_or("")
        )
    })?;
    let log = dir.join("osm.log");
    let cache = format!("OSM_CACHE_DIR={}", dir.display());
    let log_s = log.display().to_string();
    let dir_s = dir.display().to_string();
    let mut args = vec![
        cache.as_str(),
        "opensm",
        "-o",
        "-R",
        engine,
        "-D",
        // Nue names the virtual layers it processes at DEBUG only.
        if engine == "nue" { "0xf" } else { "0x7" },
        "-f",
        &log_s,
        "--dump_files_dir",
        &dir_s,
    ];
    // Nue routes on the VLs it is given (escape paths make one enough) and only with QoS on:
    // give it weft's layer count, so eBB compares at equal VLs.
    let nue_vls = nue_vls.to_string();
    if engine == "nue" {
        args.extend(["-Q", "--nue_max_num_vls", &nue_vls]);
    }
    let t = Instant::now();
    let res = sim.run("env", &args, opts.timeout);
    let wall = ms(t.elapsed());
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    if let Err(e) = res {
        let first = e.to_string().lines().next().unwrap_or("").to_owned();
        return Err(format!("opensm: {first}"));
    }
    out.layers = layers_used(engine, &log_text);
    let timing = routing_time(&log_text);
    let Some((used, t_ms)) = timing else {
        return Err(
            "opensm's log has no routing interval (no engine configured the tables?)".to_owned(),
        );
    };
    if run > 0 {
        return Ok(Some(t_ms));
    }
    out.opensm_wall_ms = Some(wall);
    if used != engine {
        out.notes
            .push(format!("`{engine}` failed; OpenSM fell back to `{used}`"));
    }
    out.engine_used = Some(used);
    // The tables as the switches hold them.
    let t = Instant::now();
    let fts = sim
        .run("dump_fts", &[], opts.timeout)
        .map_err(|e| format!("dump_fts: {}", e.to_string().lines().next().unwrap_or("")))?;
    out.dump_fts_ms = Some(ms(t.elapsed()));
    if opts.keep.is_some() {
        let _ = std::fs::write(dir.join("dump_fts.txt"), &fts.stdout);
    }
    let mut g2l = std::fs::read_to_string(dir.join("guid2lid")).ok();
    if g2l.is_none() {
        out.notes
            .push("no guid2lid in OpenSM's cache; LIDs from the dump only".to_owned());
    }
    // ibsim gave the CAs' ports GUIDs of its own: back to the topology's, by OpenSM's list.
    if let (Some(text), Ok(list)) = (&g2l, std::fs::read_to_string(dir.join("opensm-subnet.lst"))) {
        let (onto, renamed) = weft_bench::guid2lid_onto(text, &list, fabric);
        if renamed > 0 {
            g2l = Some(onto);
        }
    }
    let lids = LidAssignment {
        lmc: fabric.lmc,
        base: Default::default(),
        vports: Vec::new(),
    };
    let dumps = weft_formats::opensm::Dumps {
        lfts: &fts.stdout,
        guid2lid: g2l.as_deref(),
        mfts: None,
        mcmembers: None,
        ..Default::default()
    };
    match weft_formats::opensm::assemble(fabric.clone(), lids, &dumps) {
        Ok((state, warnings)) => {
            if !warnings.is_empty() {
                out.notes.push(format!(
                    "{} warning(s) reading OpenSM's files, first: {}",
                    warnings.len(),
                    warnings[0]
                ));
            }
            out.quality = Some(metrics::quality(&state, qopts));
            out.deadlock_free = Some(deadlock_free(&state));
        }
        Err(e) => out.notes.push(format!(
            "cannot read OpenSM's tables: {}",
            e.to_string().lines().next().unwrap_or("")
        )),
    }
    Ok(Some(t_ms))
}

/// The layers an engine's log says it used (1 for engines that do not use layers).
fn layers_used(engine: &str, log: &str) -> Option<u8> {
    let after = |key: &str| -> Option<u8> {
        log.lines().rev().find_map(|l| {
            let rest = &l[l.find(key)? + key.len()..];
            rest.trim()
                .trim_end_matches(", Balancing")
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
    };
    match engine {
        "lash" => after("Lanes needed: "),
        "dfsssp" | "sssp" => after("Virtual Lanes needed: ").or(Some(1)),
        "nue" => log
            .lines()
            .filter_map(|l| {
                let rest = &l[l.find("Processing virtual layer ")? + 25..];
                rest.trim().parse::<u8>().ok()
            })
            .max()
            .map(|v| v + 1),
        _ => Some(1),
    }
}

/// The engine that configured the tables and OpenSM's routing time in ms: from the first
/// `building routing with` to `tables configured on all switches`.
fn routing_time(log: &str) -> Option<(String, f64)> {
    let mut start = None;
    for line in log.lines() {
        if start.is_none() && line.contains("ucast_mgr_route: building routing with '") {
            start = weft_bench::log_time(line);
        }
        if let Some(pos) = line.find(" tables configured on all switches") {
            let head = line.get(..pos)?;
            let engine = head.rsplit(' ').next()?.to_owned();
            let end = weft_bench::log_time(line)?;
            return Some((engine, weft_bench::log_span_ms(start?, end)));
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// The comparison table.

/// `1234567` as `1.23M`, for narrow columns (the JSON has the exact numbers).
fn short(n: u64) -> String {
    match n {
        0..=99_999 => n.to_string(),
        100_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

fn yes_no(b: Option<bool>) -> String {
    match b {
        Some(true) => "yes".to_owned(),
        Some(false) => "no".to_owned(),
        None => "-".to_owned(),
    }
}

fn table(r: &FabricRun) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\n{} (`{}`): {} hosts, {} switches; weft timing over {} runs, OpenSM {}",
        r.file,
        r.fabric,
        r.hosts,
        r.switches,
        r.weft.build.runs,
        if r.opensm.is_empty() {
            "not run".to_owned()
        } else {
            format!(
                "over {} run(s) per engine",
                r.opensm
                    .iter()
                    .filter_map(|o| o.routing.map(|s| s.runs))
                    .max()
                    .unwrap_or(0)
            )
        }
    );
    let mut cols: Vec<(String, Option<&Quality>)> =
        vec![(format!("weft {}", r.weft.engine), Some(&r.weft.quality))];
    for o in &r.opensm {
        let name = match &o.engine_used {
            Some(u) if *u != o.engine => format!("osm {}→{u}", o.engine),
            _ => format!("osm {}", o.engine),
        };
        cols.push((name, o.quality.as_ref()));
    }
    let mut rows: Vec<(String, Vec<String>)> =
        vec![(String::new(), cols.iter().map(|c| c.0.clone()).collect())];
    run_rows(r, &mut rows);
    quality_rows(&cols, &mut rows);
    render_rows(&rows, &mut t);
    for e in footnotes(r) {
        let _ = writeln!(t, "  {e}");
    }
    t
}

/// The rows of the runs themselves: layers, deadlock freedom, routing times and ratios.
fn run_rows(r: &FabricRun, rows: &mut Vec<(String, Vec<String>)>) {
    let mut row = |label: &str, cells: Vec<String>| rows.push((label.to_owned(), cells));
    let weft_ms = r.weft.build.median_ms;
    let mut times = vec![format!("{weft_ms:.1}")];
    let mut ratios = vec!["1.0".to_owned()];
    for o in &r.opensm {
        match o.routing {
            Some(s) => {
                times.push(format!("{:.1}", s.median_ms));
                ratios.push(format!("{:.1}", s.median_ms / weft_ms));
            }
            None => {
                times.push("-".to_owned());
                ratios.push("-".to_owned());
            }
        }
    }
    let mut layers = vec![r.weft.layers.to_string()];
    for o in &r.opensm {
        layers.push(o.layers.map_or("-".to_owned(), |l| l.to_string()));
    }
    row("layers (VLs)", layers);
    let mut free = vec![yes_no(Some(r.weft.deadlock_free))];
    for o in &r.opensm {
        free.push(yes_no(o.deadlock_free));
    }
    row("deadlock-free (proven)", free);
    row("routing ms (median)", times);
    row("  vs weft (×)", ratios);
    let one = r.weft.build_one_thread.median_ms;
    let mut ratios1 = vec![format!("{one:.1} ms")];
    for o in &r.opensm {
        ratios1.push(
            o.routing
                .map_or("-".to_owned(), |s| format!("{:.1}", s.median_ms / one)),
        );
    }
    row("  vs weft on 1 thread (×)", ratios1);
}

/// The rows of the routing's quality, one cell per column (`-` without one).
fn quality_rows(cols: &[(String, Option<&Quality>)], rows: &mut Vec<(String, Vec<String>)>) {
    let mut row = |label: &str, cells: Vec<String>| rows.push((label.to_owned(), cells));
    let q = |f: &dyn Fn(&Quality) -> String| -> Vec<String> {
        cols.iter()
            .map(|(_, q)| q.map_or_else(|| "-".to_owned(), f))
            .collect()
    };
    row(
        "unbalanced switches",
        q(&|q| format!("{}/{}", q.balance.unbalanced, q.balance.switches)),
    );
    row(
        "  by direction",
        q(&|q| {
            format!(
                "{}/{}",
                q.balance.unbalanced_by_direction, q.balance.switches
            )
        }),
    );
    row(
        "  max spread (dir)",
        q(&|q| {
            format!(
                "{} ({})",
                q.balance.max_spread, q.balance.max_spread_by_direction
            )
        }),
    );
    row(
        "shift max load",
        q(&|q| {
            format!(
                "{} ({}{})",
                q.shift.max_load,
                q.shift.shifts,
                if q.shift.all { " all" } else { "" }
            )
        }),
    );
    row(
        "  mean max load",
        q(&|q| format!("{:.3}", q.shift.mean_max_load)),
    );
    row(
        "all-to-all max load",
        q(&|q| q.all_to_all.max_load.to_string()),
    );
    row(
        "  mean load",
        q(&|q| format!("{:.1}", q.all_to_all.mean_load)),
    );
    row(
        "bisection max load",
        q(&|q| {
            format!(
                "{} (mean {:.2})",
                q.bisections.max_load, q.bisections.mean_max_load
            )
        }),
    );
    row(
        "eBB",
        q(&|q| {
            q.bisections
                .ebb
                .map_or_else(|| "n/a".to_owned(), |e| format!("{e:.4}"))
        }),
    );
    row("  bisections", q(&|q| q.bisections.count.to_string()));
    row(
        "hops mean / max",
        q(&|q| format!("{:.3} / {}", q.hops.mean, q.hops.max)),
    );
    row(
        "hop histogram",
        q(&|q| {
            q.hops
                .histogram
                .iter()
                .map(|(k, v)| format!("{k}:{}", short(*v)))
                .collect::<Vec<_>>()
                .join(" ")
        }),
    );
    row(
        "unroutable host pairs",
        q(&|q| q.hops.unroutable.total().to_string()),
    );
    row(
        "unroutable switch pairs",
        q(&|q| {
            format!(
                "{}/{}",
                q.switch_to_switch.unroutable.total(),
                q.switch_to_switch.pairs
            )
        }),
    );
}

/// The rows as a table: labels left, cells right-aligned in equal columns.
fn render_rows(rows: &[(String, Vec<String>)], t: &mut String) {
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0) + 2;
    let w = rows
        .iter()
        .flat_map(|r| r.1.iter().map(|c| c.chars().count()))
        .max()
        .unwrap_or(0)
        .max(16)
        + 2;
    for (label, cells) in rows {
        let _ = write!(t, "{label:<w0$}");
        for c in cells {
            let _ = write!(t, "{c:>w$}");
        }
        t.push('\n');
    }
}

/// The lines under the table: weft's and each OpenSM engine's timings, the load average.
fn footnotes(r: &FabricRun) -> Vec<String> {
    let mut extra = vec![format!(
        "weft: LIDs {:.2} ms, LIDs + routing {:.1} ms (min {:.1}, max {:.1}; one thread {:.1}), {} runs; check {:.0} ms; metrics {:.0} ms",
        r.weft.lids.median_ms,
        r.weft.build.median_ms,
        r.weft.build.min_ms,
        r.weft.build.max_ms,
        r.weft.build_one_thread.median_ms,
        r.weft.build.runs,
        r.weft.check_ms,
        r.weft.metrics_ms
    )];
    for o in &r.opensm {
        let mut s = format!("osm {}:", o.engine);
        if let Some(rt) = o.routing {
            let _ = write!(
                s,
                " routing {:.1} ms (min {:.1}, max {:.1}, {} run(s));",
                rt.median_ms, rt.min_ms, rt.max_ms, rt.runs
            );
        }
        if let Some(w) = o.opensm_wall_ms {
            let _ = write!(s, " whole opensm -o run {:.1} s;", w / 1e3);
        }
        if let Some(d) = o.dump_fts_ms {
            let _ = write!(s, " dump_fts {:.1} s;", d / 1e3);
        }
        for n in &o.notes {
            let _ = write!(s, " {n};");
        }
        extra.push(s);
    }
    if let Some(l) = &r.loadavg {
        extra.push(format!("load average at the start: {l}"));
    }
    extra
}

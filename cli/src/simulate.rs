//! `weft simulate FILE.weft|BUILD_DIR|STATE.json --traffic SPEC`: run the packet simulator
//! (`weft_traffic`) over a state and print what the traffic got: throughput per node, latency,
//! link utilisation, stalls, and on a state with dFtree lanes what dFtree's run-time loop did
//! (`--no-dftree-loop`, `--dftree-oracle`); `--compare OTHER` runs a second state on the same
//! traffic and prints the gain.

use crate::report::Format;
use crate::{out, ColorChoice, Fatal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_fabric::code::Coded as _;
use weft_fabric::ValidState;
use weft_traffic::{self as traffic, DftreeMode, Params, Report, Traffic};

/// `weft simulate` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The state to simulate: a `.weft` file (compiled here), a `weft build` directory, or a
    /// `state.json`.
    input: PathBuf,
    /// Traffic: `uniform`, `hotspot:N[:SHARE][@FROM-UNTIL]` (SHARE in %, default 5; the hot-spot
    /// traffic only from FROM until UNTIL, such as `@0-300us` or `@50us-`), `shift:K`,
    /// `all-to-all`, `permutation` or `multicast:MLID[:SHARE]` (the members of the state's group
    /// MLID send SHARE, default 100 %, to it; switches replicate by their MFTs); or a per-job
    /// traffic file (`file:PATH`, or a path that
    /// is not a pattern): one job a line, `job NAME hosts LIST pattern SPEC [load F] [from T]
    /// [until T]`.
    #[arg(long, value_name = "SPEC")]
    traffic: String,
    /// Seed of the traffic (destinations, start times, the permutation).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// A setting of the parameters below: `papers` (the vFtree and dFtree papers'
    /// simulations as this simulator reproduces them; every parameter it sets is listed in
    /// docs/simulate.md). An option given beside it overrides its value.
    #[arg(long, value_name = "NAME")]
    preset: Option<String>,
    /// Simulated time: `1ms`, `200us`, `500ns` (default 100us).
    #[arg(long, value_name = "T")]
    duration: Option<String>,
    /// Warm-up not measured (default: a fifth of the duration; `0`: measured from the start).
    #[arg(long, value_name = "T")]
    warmup: Option<String>,
    /// Offered load per host, a fraction of its link rate (default 1: full load).
    #[arg(long, value_name = "F")]
    load: Option<f64>,
    /// What a host does with a packet its source queue has no room for: `refuse` (one queue
    /// per VL; the packet is not generated and the host goes on), `block` (one queue per VL;
    /// the host waits until it fits), `fifo` (one send queue in generation order; its head
    /// holds back the rest) or `unbounded` (one queue per VL without a bound: every packet is
    /// queued and the host goes on). Default `refuse`.
    #[arg(long, value_name = "MODEL")]
    host_model: Option<String>,
    /// How a switch keeps an input port's packets of one VL: `fifo` (one queue; only its
    /// head competes for an output) or `voq` (one queue per output in the VL's credits; the
    /// oldest packet for each output competes for it). Default `fifo`.
    #[arg(long, value_name = "MODEL")]
    switch_buffers: Option<String>,
    /// Packets one switch input port may be sending at once, over its VLs and outputs
    /// (default: no limit).
    #[arg(long, value_name = "N")]
    parallel_sends: Option<u32>,
    /// Source queue length in packets: per VL (`refuse`, `block`), or the one send queue
    /// (`fifo`). Default 4.
    #[arg(long, value_name = "N")]
    source_queue: Option<u32>,
    /// Input buffer per switch port and VL, in bytes (default 8448: four 2 KiB packets).
    #[arg(long, value_name = "BYTES")]
    buffer_bytes: Option<u32>,
    /// Hottest links and most stalled ports listed.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// A second state (same forms as the input) run on the same traffic and seed; the gain
    /// printed is the input's throughput per node over this one's.
    #[arg(long, value_name = "OTHER")]
    compare: Option<PathBuf>,
    /// An end node's receive rate, a fraction of its link rate (1: it sinks at line rate).
    /// Below 1, the switch port facing an end node asked for more waits for credits, which
    /// is how dFtree's loop sees an end-node hot-spot. Default 1.
    #[arg(long, value_name = "F")]
    receive_rate: Option<f64>,
    /// dFtree lanes: turn the run-time loop off (every flow on its fast lane).
    #[arg(long, conflicts_with = "dftree_oracle")]
    no_dftree_loop: bool,
    /// dFtree lanes: the papers' best case instead of the loop (every packet toward a
    /// hot-spot of the traffic on its slow lane from the start).
    #[arg(long)]
    dftree_oracle: bool,
    /// dFtree's loop: time between performance sweeps (default 10us).
    #[arg(long, value_name = "T")]
    dftree_sweep: Option<String>,
    /// dFtree's loop: from a sweep to its moves reaching the sources' new packets (default
    /// 1us).
    #[arg(long, value_name = "T")]
    dftree_repath: Option<String>,
    /// dFtree's loop: congestion threshold in XmitWait ticks (64 bytes' time) per second
    /// (default 10000000).
    #[arg(long, value_name = "TICKS")]
    dftree_threshold: Option<f64>,
    /// dFtree's loop: sweeps below the threshold before a hot-spot's flows move back
    /// (default 2).
    #[arg(long, value_name = "N")]
    dftree_release: Option<u32>,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: Format,
}

/// A state from a `.weft` file, a build directory (its `state.json`) or a `state.json`.
fn load(path: &Path, color: ColorChoice) -> Result<ValidState, Fatal> {
    if path.is_dir() {
        return crate::plan::load_state(&path.join("state.json"));
    }
    if path.extension().is_some_and(|e| e == "json") {
        return crate::plan::load_state(path);
    }
    Ok(crate::compile_and_build(path, color)?.state)
}

/// `--traffic`: `file:PATH` is a per-job traffic file; a pattern spec is a pattern; anything
/// else naming a file is a per-job traffic file.
fn traffic_of(spec: &str) -> Result<Traffic, Fatal> {
    let file = match spec.strip_prefix("file:") {
        Some(path) => path,
        None => match Traffic::parse(spec) {
            Ok(t) => return Ok(t),
            Err(e) if !Path::new(spec).is_file() => return Err(fail(e)),
            Err(_) => spec,
        },
    };
    let text =
        weft_driver::input::read_regular(Path::new(file), weft_driver::input::MAX_SOURCE_BYTES)
            .map_err(|e| Fatal::Run(format!("cannot read `{file}`: {e}")))?;
    Ok(Traffic::Jobs(
        traffic::Jobs::parse(file, &text).map_err(fail)?,
    ))
}

/// An input the simulator cannot use: a finding under its code (exit 1, in the command's output
/// format), placed at the line and column of a job file.
pub(crate) fn fail(e: traffic::SimError) -> Fatal {
    let message = match &e {
        traffic::SimError::JobFile { why, .. } => why.clone(),
        other => other.to_string(),
    };
    let mut f = crate::findings::of_input(e.code(), None, message);
    if let traffic::SimError::JobFile {
        file, line, column, ..
    } = &e
    {
        let (line, column) = (
            u32::try_from(*line).unwrap_or(u32::MAX),
            u32::try_from(*column).unwrap_or(u32::MAX),
        );
        f.place = Some(crate::findings::Place {
            file: file.clone(),
            line,
            column,
            end_line: line,
            end_column: column,
        });
    }
    Fatal::Input(vec![f], None)
}

/// Runs `weft simulate`.
pub fn run(args: Args, color: ColorChoice) -> Result<ExitCode, Fatal> {
    // Everything about the options first: nothing is compiled for a spec that cannot run.
    let traffic = traffic_of(args.traffic.trim())?;
    // A preset's values, else the defaults; an option given beside it wins.
    let defaults = match &args.preset {
        Some(name) => Params::preset(name).map_err(fail)?,
        None => Params::default(),
    };
    let duration_ns = match &args.duration {
        Some(d) => traffic::parse_duration(d).map_err(fail)?,
        None => defaults.duration_ns,
    };
    let duration = |d: &Option<String>| {
        d.as_deref()
            .map(traffic::parse_duration)
            .transpose()
            .map_err(fail)
    };
    let warmup_ns = match &args.warmup {
        Some(w) => Some(traffic::parse_span(w).map_err(fail)?),
        None => defaults.warmup_ns,
    };
    let host = match &args.host_model {
        Some(m) => traffic::HostModel::parse(m).map_err(fail)?,
        None => defaults.host,
    };
    let switch_buffers = match &args.switch_buffers {
        Some(m) => traffic::SwitchBuffers::parse(m).map_err(fail)?,
        None => defaults.switch_buffers,
    };
    if args.parallel_sends == Some(0) {
        return Err(Fatal::Run(
            "--parallel-sends must be at least 1 packet".to_owned(),
        ));
    }
    if args.source_queue == Some(0) {
        return Err(Fatal::Run(
            "--source-queue must be at least 1 packet".to_owned(),
        ));
    }
    let dftree = if args.no_dftree_loop {
        DftreeMode::Off
    } else if args.dftree_oracle {
        DftreeMode::Oracle
    } else {
        DftreeMode::Loop
    };
    let loop_flags = [
        ("--dftree-sweep", args.dftree_sweep.is_some()),
        ("--dftree-repath", args.dftree_repath.is_some()),
        ("--dftree-threshold", args.dftree_threshold.is_some()),
        ("--dftree-release", args.dftree_release.is_some()),
    ];
    if dftree != DftreeMode::Loop {
        if let Some((flag, _)) = loop_flags.iter().find(|f| f.1) {
            return Err(Fatal::Run(format!(
                "{flag} sets dFtree's run-time loop, which {} turns off",
                if args.no_dftree_loop {
                    "--no-dftree-loop"
                } else {
                    "--dftree-oracle"
                }
            )));
        }
    }
    let params = Params {
        duration_ns,
        warmup_ns,
        load: args.load.unwrap_or(defaults.load),
        top: args.top,
        receive_rate: args.receive_rate.unwrap_or(defaults.receive_rate),
        dftree,
        dftree_sweep_ns: duration(&args.dftree_sweep)?.unwrap_or(defaults.dftree_sweep_ns),
        dftree_repath_ns: duration(&args.dftree_repath)?.unwrap_or(defaults.dftree_repath_ns),
        dftree_threshold_ticks_per_s: args
            .dftree_threshold
            .unwrap_or(defaults.dftree_threshold_ticks_per_s),
        dftree_release_sweeps: args
            .dftree_release
            .unwrap_or(defaults.dftree_release_sweeps),
        host,
        switch_buffers,
        parallel_sends: args.parallel_sends.or(defaults.parallel_sends),
        source_queue: args.source_queue.unwrap_or(defaults.source_queue),
        buffer_bytes: args.buffer_bytes.unwrap_or(defaults.buffer_bytes),
        ..defaults
    };
    let state = load(&args.input, color)?;
    // dFtree's switches act on a state with dFtree lanes: refused when neither state has any.
    let used = [
        ("--no-dftree-loop", args.no_dftree_loop),
        ("--dftree-oracle", args.dftree_oracle),
    ]
    .into_iter()
    .chain(loop_flags)
    .find(|f| f.1);
    if let Some((flag, _)) = used {
        let base = args.compare.as_ref().map(|o| load(o, color)).transpose()?;
        let lanes = traffic::dftree::has_lanes(&state)
            || base.as_ref().is_some_and(|b| traffic::dftree::has_lanes(b));
        if !lanes {
            return Err(Fatal::Run(format!(
                "{flag}: the state has no dFtree lanes (no pair has more than one path SL), so \
                 there is no dFtree loop to set; declare a class with `lanes = dftree`"
            )));
        }
    }
    crate::term::phase("simulating");
    let (report, baseline) = match &args.compare {
        None => (
            traffic::simulate(&state, &traffic, &params, args.seed).map_err(fail)?,
            None,
        ),
        Some(other) => {
            let base = load(other, color)?;
            crate::term::phase("simulating both");
            let (a, b) = traffic::simulate_pair(&state, &base, &traffic, &params, args.seed)
                .map_err(fail)?;
            (a, Some(b))
        }
    };
    let gain = baseline.as_ref().map(|b| {
        traffic::gain_percent(
            report.throughput_per_node_gbps.mean,
            b.throughput_per_node_gbps.mean,
        )
    });
    let text = match args.format {
        Format::Human => {
            let mut t = report.human();
            t += &speed(&report);
            if let (Some(b), Some(g), Some(other)) = (&baseline, gain, &args.compare) {
                t += &format!("\ncompared with `{}`:\n", other.display());
                t += &b.human();
                t += &speed(b);
                t += &format!(
                    "\ngain      {g:+.1} % throughput per node ({:.3} against {:.3} Gb/s)\n",
                    report.throughput_per_node_gbps.mean, b.throughput_per_node_gbps.mean
                );
            }
            t
        }
        Format::Json => {
            let mut v = serde_json::to_value(&report)?;
            if let (Some(b), Some(g)) = (&baseline, gain) {
                v["baseline"] = serde_json::to_value(b)?;
                v["gain_percent"] = serde_json::json!(g);
            }
            serde_json::to_string_pretty(&crate::findings::document("simulate", v))? + "\n"
        }
    };
    out(None, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// The wall-clock figures (for people only: the JSON is byte-identical for a seed).
fn speed(r: &Report) -> String {
    let s = r.wall.as_secs_f64();
    format!(
        "  speed       {} packets simulated in {:.2} s ({:.0} packets/s, {} events)\n",
        r.packets.injected,
        s,
        r.packets.injected as f64 / s.max(1e-9),
        r.events
    )
}

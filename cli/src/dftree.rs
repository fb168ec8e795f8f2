//! `weft dftree FILE.weft|BUILD_DIR|STATE.json --target mad --interval T`: dFtree's run-time
//! loop on a live fabric. The loop is `weft_deploy::dftree::Loop` (the wire check before the
//! first sweep, the counter-trust rules, `qos-policy.conf`, `repath.txt` and `repath.log`);
//! this command reads the arguments and the state, builds the controller
//! (`weft_traffic::dftree`) and the policy maker (`weft_compiler::qos::with_slow_flows`: the
//! build's policy with the moved flows answered on their slow SL), discovers the fabric
//! through libibmad, keeps the clock (a sweep every `--interval`, until interrupted by SIGINT
//! or SIGTERM, or `--sweeps N`) and renders each sweep (a line per move, or a JSON object per
//! sweep).

use crate::audit::MadArgs;
use crate::Fatal;
use clap::ValueEnum;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use weft_compiler::qos::SlowFlow;
use weft_deploy::dftree::{Loop, LoopError, PolicyFn, Sweep};
use weft_deploy::Mad;
use weft_fabric::code::Coded as _;
use weft_fabric::{FabricState, Guid, PortNum};
use weft_traffic::dftree::{Config, Controller, DftreeError, Flow, Moves};

/// `weft dftree` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The fabric: a `.weft` file (compiled), a `weft build` directory, or a `state.json`
    /// (with the build's `qos-policy.conf` beside it).
    input: PathBuf,
    /// Where to read counters: `mad` (PMA Gets through libibmad on the local HCA port).
    /// `sim` and `opensm` are not built yet (`weft simulate` runs the loop on simulated
    /// traffic).
    #[arg(long)]
    target: DftreeTarget,
    /// How MADs go out.
    #[command(flatten)]
    mad: MadArgs,
    /// Time between sweeps: a number and `ms` or `s` (`500ms`, `2s`), from 10 ms to 1 day.
    #[arg(long)]
    interval: String,
    /// Stop after this many sweeps (default: until interrupted).
    #[arg(long)]
    sweeps: Option<u64>,
    /// Where `qos-policy.conf`, `repath.txt` and `repath.log` are written (a directory;
    /// created if missing; not the one the build's policy is read from).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Congestion threshold in XmitWait ticks per second (default 100000, Paper IV's).
    #[arg(long)]
    threshold: Option<f64>,
    /// Utilisation below which a congested sender is a contributor (default 0.5).
    #[arg(long)]
    max_utilisation: Option<f64>,
    /// Sweeps a hot-spot stays below the threshold before its flows move back (default 2).
    #[arg(long)]
    release_sweeps: Option<u32>,
    /// Output: `human` (a line per move) or `json` (a JSON object per sweep, one per line).
    #[arg(long, default_value = "human")]
    pub(crate) format: crate::report::Format,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum DftreeTarget {
    Mad,
    Sim,
    Opensm,
}

/// Parses `--interval`: a duration ([`weft_fabric::input::duration_ns`]) from 10 ms to one day.
fn interval(text: &str) -> Result<Duration, String> {
    let secs = weft_fabric::input::duration_ns(text).map(|ns| ns / 1e9);
    match secs {
        Some(secs) if (0.01..=86_400.0).contains(&secs) => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "--interval `{text}`: give a number of milliseconds or seconds (`500ms`, `2s`), \
             from 10ms to 86400s"
        )),
    }
}

/// Where the policy the moves go into comes from.
enum Base {
    /// Written now from the compiled fabric.
    Text(String),
    /// The build's `qos-policy.conf` in this directory.
    Beside(PathBuf),
}

impl Base {
    /// Refuses `--out` when it is the directory the base policy is read from (both
    /// canonicalized): the policy written there would replace the build's, and the next run
    /// would add its moves to a policy holding the last run's.
    fn refuse_out(&self, out: &Path) -> Result<(), Fatal> {
        let Base::Beside(dir) = self else {
            return Ok(());
        };
        let (Ok(o), Ok(d)) = (out.canonicalize(), dir.canonicalize()) else {
            return Ok(());
        };
        if o == d {
            return Err(Fatal::Run(format!(
                "--out `{}` is the directory the build's QoS policy is read from (`{}`): dFtree's policy would replace the build's `qos-policy.conf`, which its moves are added to; give another directory (the one OpenSM's `-Y` names)",
                out.display(),
                d.display()
            )));
        }
        Ok(())
    }

    fn read(self) -> Result<String, Fatal> {
        match self {
            Base::Text(t) => Ok(t),
            Base::Beside(dir) => {
                let p = dir.join("qos-policy.conf");
                weft_driver::input::read_regular(&p, weft_driver::input::MAX_DUMP_BYTES).map_err(
                    |e| {
                        Fatal::Run(format!(
                            "cannot read `{}` (the build's QoS policy, which dFtree's moves \
                             are added to; `weft build` writes it for a fabric with QoS \
                             classes): {e}",
                            p.display()
                        ))
                    },
                )
            }
        }
    }
}

/// The state, and where the policy the moves go into comes from: a `.weft` file (compiled),
/// a build directory or a `state.json` (the `qos-policy.conf` beside it).
fn load(path: &Path, color: crate::ColorChoice) -> Result<(FabricState, Base), Fatal> {
    if path.is_dir() {
        let st = crate::plan::load_state(&path.join("state.json"))?;
        return Ok((st.state().clone(), Base::Beside(path.to_path_buf())));
    }
    if path.extension().is_some_and(|e| e == "json") {
        let st = crate::plan::load_state(path)?;
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        return Ok((st.state().clone(), Base::Beside(dir)));
    }
    let built = crate::compile_and_build(path, color)?;
    let st = built.state.state().clone();
    let policy = weft_compiler::qos::qos_policy(&st, &built.lanes, built.layers.as_ref())
        .map_err(|e| Fatal::Run(format!("cannot write the QoS policy: {e}")))?;
    Ok((st, Base::Text(policy)))
}

/// A flow as OpenSM's port groups name its source (the port GUID).
fn slow_flow(st: &FabricState, f: &Flow) -> Option<SlowFlow> {
    let n = st.fabric.find_guid(Guid(f.src_guid))?;
    let node = st.fabric.nodes().get(n.index())?;
    let guid = node
        .port(PortNum(f.src_port))
        .map_or(f.src_guid, |p| p.guid.0);
    Some(SlowFlow {
        src_port_guid: guid,
        dst_lid: f.dst_lid,
        fast_sl: f.fast_sl,
        slow_sl: f.slow_sl,
    })
}

/// Runs `weft dftree`.
pub fn run(args: Args, color: crate::ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    // The options first: nothing is read for a loop that cannot run.
    match args.target {
        DftreeTarget::Mad => {}
        DftreeTarget::Sim | DftreeTarget::Opensm => {
            return Err(Fatal::Run(format!(
                "`weft dftree --target {}` is not built yet: the loop runs on a live fabric \
                 (`--target mad`); `weft simulate` runs dFtree on simulated traffic",
                if args.target == DftreeTarget::Sim {
                    "sim"
                } else {
                    "opensm"
                }
            )))
        }
    }
    let every = interval(&args.interval).map_err(Fatal::Run)?;
    if args.sweeps == Some(0) {
        return Err(Fatal::Run("--sweeps must be at least 1".into()));
    }
    let defaults = Config::default();
    let config = Config {
        threshold_ticks_per_s: args.threshold.unwrap_or(defaults.threshold_ticks_per_s),
        max_utilisation: args.max_utilisation.unwrap_or(defaults.max_utilisation),
        release_sweeps: args.release_sweeps.unwrap_or(defaults.release_sweeps),
    };
    crate::term::phase("reading the fabric's description");
    let (st, base) = load(&args.input, color)?;
    base.refuse_out(&args.out)?;
    let controller = Controller::new(&st, config).map_err(|e| match e {
        DftreeError::NoLanes => Fatal::Input(
            vec![crate::findings::of_input(
                "weft::dftree_no_lanes",
                Some(&args.input.display().to_string()),
                e.to_string(),
            )],
            None,
        ),
        e => Fatal::Run(e.to_string()),
    })?;
    let base = base.read()?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Fatal::Run(format!("cannot create `{}`: {e}", args.out.display())))?;
    let mut mad = Mad::open_pm(&args.mad.options()).map_err(|e| Fatal::coded(&e))?;
    crate::term::phase("discovering the fabric");
    let found = weft_deploy::discover(&mut mad).map_err(|e| Fatal::coded(&e))?;
    let json = args.format == crate::report::Format::Json;
    let policy_state = st.clone();
    let policy: PolicyFn = Box::new(move |slow: &[Flow]| {
        let flows: Vec<SlowFlow> = slow
            .iter()
            .filter_map(|f| slow_flow(&policy_state, f))
            .collect();
        weft_compiler::qos::with_slow_flows(&base, &policy_state, &flows).map_err(|e| e.to_string())
    });
    // The loop refuses a fabric that is not the state's before the first sweep, and writes
    // the base policy (every flow on its fast lane).
    let mut run = Loop::new(&st, controller, &found, mad, &args.out, policy)
        .map_err(|e| loop_error(e, &args.input))?;
    if !quiet && !json {
        say(&format!(
            "weft dftree: {} live port(s) on {}, a sweep every {:?}",
            run.ports().len(),
            run.pma().device(),
            every
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _interrupt = crate::term::stop_on_interrupt_saying(
        stop.clone(),
        "weft: interrupted: stopping after this sweep (interrupt again to stop at once)",
    );
    let start = Instant::now();
    loop {
        crate::term::phase("reading port counters");
        let at_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let s = run
            .sweep(at_ns, SystemTime::now())
            .map_err(|e| loop_error(e, &args.input))?;
        crate::term::clear();
        if json {
            crate::out(None, &format!("{}\n", sweep_json(&s, at_ns)))?;
        } else {
            for u in &s.news {
                say(&format!("weft dftree: sweep {}: {u}", s.number));
            }
            for e in &s.unread {
                say(&format!("weft dftree: sweep {}: not read: {e}", s.number));
            }
            crate::out(None, &human(&format!("sweep {}", s.number), &s.moves))?;
        }
        {
            use std::io::Write as _;
            std::io::stdout().flush()?;
        }
        if args.sweeps.is_some_and(|n| s.number >= n) || stop.load(Ordering::SeqCst) {
            break;
        }
        // Wait for the next sweep, watching for an interruption.
        let next = start + every * u32::try_from(s.number).unwrap_or(u32::MAX);
        crate::term::phase("waiting for the next sweep");
        while Instant::now() < next && !stop.load(Ordering::SeqCst) {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    let (ports, sweeps) = (run.ports().len(), run.sweeps());
    let back = run
        .stop(SystemTime::now())
        .map_err(|e| loop_error(e, &args.input))?;
    if !back.moves.to_fast.is_empty() {
        if json {
            let line = serde_json::json!({
                "stop": true,
                "sweep": sweeps,
                "to_fast": back.moves.to_fast.iter().map(|f| flow_json(f, f.fast_sl)).collect::<Vec<_>>(),
                "slow_flows": 0,
                "wrote": true,
            });
            crate::out(None, &format!("{line}\n"))?;
        } else {
            crate::out(None, &human("stop", &back.moves))?;
        }
    }
    if !quiet && !json {
        say(&format!(
            "weft dftree: {sweeps} sweep(s) of {ports} port(s); {} flow(s) moved back to their \
             fast lane at the stop; qos-policy.conf and repath.txt written {} time(s) in `{}`",
            back.moves.to_fast.len(),
            back.writes,
            args.out.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// A sweep as one JSON object, `at_ns` after the start.
fn sweep_json(s: &Sweep, at_ns: u64) -> serde_json::Value {
    let moves = &s.moves;
    serde_json::json!({
        "sweep": s.number,
        "at_ms": at_ns / 1_000_000,
        "ports_read": s.read.len(),
        "pma_gets": s.gets,
        "extended_xmit_data": s.read.iter().filter(|c| c.extended).count(),
        "saturated": s.judged.saturated.iter().map(|(g, p)| format!("{g}:{p}")).collect::<Vec<_>>(),
        "no_xmit_wait": s.judged.no_xmit_wait.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "unread": s.unread.iter().map(|e| serde_json::json!({"code": e.code(), "message": e.to_string()})).collect::<Vec<_>>(),
        "hotspots_marked": moves.hotspots_marked.iter().map(|(g, p)| format!("{g:#018x}:{p}")).collect::<Vec<_>>(),
        "hotspots_cleared": moves.hotspots_cleared.iter().map(|(g, p)| format!("{g:#018x}:{p}")).collect::<Vec<_>>(),
        "to_slow": moves.to_slow.iter().map(|f| flow_json(f, f.slow_sl)).collect::<Vec<_>>(),
        "to_fast": moves.to_fast.iter().map(|f| flow_json(f, f.fast_sl)).collect::<Vec<_>>(),
        "slow_flows": s.slow_flows,
        "wrote": s.wrote,
    })
}

/// The loop's error as the CLI reports it: a fabric that is not the input's is an input
/// finding per difference; a PMA failure a failed run with its code.
fn loop_error(e: LoopError, input: &Path) -> Fatal {
    let input = input.display().to_string();
    match e {
        LoopError::WrongFabric(differences) => Fatal::Input(
            differences
                .into_iter()
                .map(|d| {
                    crate::findings::of_input(
                        "weft::deploy::wrong_fabric",
                        Some(&input),
                        format!(
                            "the fabric is not the one `{input}` is for (no sweep was taken, \
                             nothing written): {d}"
                        ),
                    )
                })
                .collect(),
            None,
        ),
        LoopError::Ports(e) => Fatal::coded(&e),
        LoopError::NothingRead { ref first, .. } => Fatal::failed(first.code(), e.to_string()),
        e => Fatal::Run(e.to_string()),
    }
}

/// A flow in the JSON output, on `sl`.
fn flow_json(f: &Flow, sl: u8) -> serde_json::Value {
    serde_json::json!({
        "src_guid": format!("{:#018x}", f.src_guid),
        "src_port": f.src_port,
        "dst_lid": f.dst_lid,
        "sl": sl,
    })
}

/// A sweep's moves for people, a line each, after `at` (`sweep 7`, `stop`).
fn human(at: &str, moves: &Moves) -> String {
    let mut t = String::new();
    for (g, p) in &moves.hotspots_marked {
        t += &format!("{at}: hot-spot {g:#018x} port {p}\n");
    }
    for (g, p) in &moves.hotspots_cleared {
        t += &format!("{at}: hot-spot {g:#018x} port {p} cleared\n");
    }
    for f in &moves.to_slow {
        t += &format!(
            "{at}: {:#018x} port {} → LID {} to the slow lane (SL {})\n",
            f.src_guid, f.src_port, f.dst_lid, f.slow_sl
        );
    }
    for f in &moves.to_fast {
        t += &format!(
            "{at}: {:#018x} port {} → LID {} back to the fast lane (SL {})\n",
            f.src_guid, f.src_port, f.dst_lid, f.fast_sl
        );
    }
    t
}

/// A line for people on standard error.
fn say(line: &str) {
    use std::io::Write as _;
    crate::term::clear();
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_per_move() {
        let flow = |src: u64, dst: u16| Flow {
            src_guid: src,
            src_port: 1,
            src_lid: 9,
            dst_lid: dst,
            slow_sl: 1,
            fast_sl: 0,
        };
        let moves = Moves {
            hotspots_marked: vec![(0x700, 1)],
            hotspots_cleared: vec![(0x600, 1)],
            to_slow: vec![flow(0x400, 4)],
            to_fast: vec![flow(0x500, 3)],
        };
        assert_eq!(
            human("sweep 7", &moves),
            "sweep 7: hot-spot 0x0000000000000700 port 1\n\
             sweep 7: hot-spot 0x0000000000000600 port 1 cleared\n\
             sweep 7: 0x0000000000000400 port 1 → LID 4 to the slow lane (SL 1)\n\
             sweep 7: 0x0000000000000500 port 1 → LID 3 back to the fast lane (SL 0)\n"
        );
        assert_eq!(human("sweep 8", &Moves::default()), "");
    }

    #[test]
    fn intervals() {
        assert_eq!(interval("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(interval("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(interval("0.25s"), Ok(Duration::from_millis(250)));
        for bad in ["", "5", "0s", "1ms", "2 min", "-1s", "1e9s", "nans"] {
            assert!(interval(bad).is_err(), "{bad}");
        }
    }
}

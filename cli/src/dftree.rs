//! `weft dftree FILE.weft|BUILD_DIR|STATE.json --target mad --interval T`: dFtree's run-time
//! loop on a live fabric. Each sweep reads every live port's counters from its PMA
//! (`weft_deploy::pma`: PortCounters' XmitWait, PortCountersExtended's XmitData where the
//! node has it), feeds them to dFtree's controller (`weft_traffic::dftree`), and when the set
//! of flows on their slow lane changes, writes `qos-policy.conf` (the build's policy with the
//! moved flows answered on their slow SL: `weft_compiler::qos::with_slow_flows`) and
//! `repath.txt` (the flows whose SL changed, for the hosts to re-path their QPs), each
//! atomically (a temporary file renamed over the old one). It runs until interrupted
//! (SIGINT, SIGTERM) or `--sweeps N`.

use crate::audit::MadArgs;
use crate::Fatal;
use clap::ValueEnum;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_compiler::qos::SlowFlow;
use weft_deploy::pma::{self, CounterReader};
use weft_deploy::Mad;
use weft_fabric::{FabricState, Guid, PortNum};
use weft_traffic::dftree::{Config, Controller, DftreeError, Flow, Moves, PortCounters};

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
    /// Where `qos-policy.conf` and `repath.txt` are written (a directory; created if
    /// missing).
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

/// Parses `--interval`: a number and `ms` or `s`, from 10 ms to one day.
fn interval(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "--interval `{text}`: give a number of milliseconds or seconds (`500ms`, `2s`), \
             from 10ms to 86400s"
        )
    };
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(bad());
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let secs = v * scale;
    if !(0.01..=86_400.0).contains(&secs) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
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
                "--out `{}` is the directory the build's QoS policy is read from (`{}`):                  dFtree's policy would replace the build's `qos-policy.conf`, which its moves                  are added to; give another directory (the one OpenSM's `-Y` names)",
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

/// `repath.txt`: one line per flow whose SL changed at `sweep`.
fn repath(sweep: u64, moves: &Moves) -> String {
    let mut t = format!(
        "# weft dftree, sweep {sweep}: flows to re-path. Each line: the source node GUID, its \
         port, the destination LID, the SL every QP from that port toward that LID takes now.\n"
    );
    for (f, sl) in moves
        .to_slow
        .iter()
        .map(|f| (f, f.slow_sl))
        .chain(moves.to_fast.iter().map(|f| (f, f.fast_sl)))
    {
        t += &format!("{:#018x} {} {} {sl}\n", f.src_guid, f.src_port, f.dst_lid);
    }
    t
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
    let mut controller = Controller::new(&st, config).map_err(|e| match e {
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
    let mut mad =
        Mad::open_pm(&args.mad.options()).map_err(|e| Fatal::failed(e.code(), e.to_string()))?;
    crate::term::phase("discovering the fabric");
    let found =
        weft_deploy::discover(&mut mad).map_err(|e| Fatal::failed(e.code(), e.to_string()))?;
    let ports = pma::live_ports(&found).map_err(|e| Fatal::failed(e.code(), e.to_string()))?;
    let json = args.format == crate::report::Format::Json;
    if !quiet && !json {
        say(&format!(
            "weft dftree: {} live port(s) on {}, a sweep every {:?}",
            ports.len(),
            mad.device(),
            every
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _interrupt = crate::term::stop_on_interrupt_saying(
        stop.clone(),
        "weft: interrupted: stopping after this sweep (interrupt again to stop at once)",
    );
    let mut reader = CounterReader::new();
    let start = Instant::now();
    let mut slow: BTreeSet<Flow> = BTreeSet::new();
    let mut sweep = 0u64;
    let mut writes = 0u64;
    loop {
        sweep += 1;
        let due = start + every * u32::try_from(sweep - 1).unwrap_or(u32::MAX);
        crate::term::phase("reading port counters");
        let gets_before = reader.gets;
        let (read, unread) = reader.read(&mut mad, &ports);
        if read.is_empty() {
            // Not one port answered: the fabric (or the local port) is gone.
            if let Some(e) = unread.first() {
                return Err(Fatal::failed(
                    e.code(),
                    format!("sweep {sweep}: no port's counters could be read; the first: {e}"),
                ));
            }
        }
        let at_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let counters: Vec<PortCounters> = read
            .iter()
            .map(|c| PortCounters {
                guid: c.at.guid.0,
                port: c.at.port,
                xmit_wait: c.xmit_wait,
                xmit_data_words: c.xmit_data_words,
            })
            .collect();
        let moves = controller.sweep(at_ns, &counters);
        let now: BTreeSet<Flow> = controller.slow_flows().into_iter().collect();
        let changed = now != slow;
        if changed {
            let flows: Vec<SlowFlow> = now.iter().filter_map(|f| slow_flow(&st, f)).collect();
            let policy = weft_compiler::qos::with_slow_flows(&base, &st, &flows)
                .map_err(|e| Fatal::Run(format!("cannot write the QoS policy: {e}")))?;
            crate::output::write_file(&args.out.join("qos-policy.conf"), policy.as_bytes())
                .map_err(Fatal::Run)?;
            crate::output::write_file(
                &args.out.join("repath.txt"),
                repath(sweep, &moves).as_bytes(),
            )
            .map_err(Fatal::Run)?;
            writes += 1;
            slow = now;
        }
        crate::term::clear();
        if json {
            let flow = |f: &Flow, sl: u8| {
                serde_json::json!({
                    "src_guid": format!("{:#018x}", f.src_guid),
                    "src_port": f.src_port,
                    "dst_lid": f.dst_lid,
                    "sl": sl,
                })
            };
            let line = serde_json::json!({
                "sweep": sweep,
                "at_ms": at_ns / 1_000_000,
                "ports_read": read.len(),
                "pma_gets": reader.gets - gets_before,
                "extended_xmit_data": read.iter().filter(|c| c.extended).count(),
                "saturated": read.iter().filter(|c| c.saturated()).count(),
                "unread": unread.iter().map(|e| serde_json::json!({"code": e.code(), "message": e.to_string()})).collect::<Vec<_>>(),
                "hotspots_marked": moves.hotspots_marked.iter().map(|(g, p)| format!("{g:#018x}:{p}")).collect::<Vec<_>>(),
                "hotspots_cleared": moves.hotspots_cleared.iter().map(|(g, p)| format!("{g:#018x}:{p}")).collect::<Vec<_>>(),
                "to_slow": moves.to_slow.iter().map(|f| flow(f, f.slow_sl)).collect::<Vec<_>>(),
                "to_fast": moves.to_fast.iter().map(|f| flow(f, f.fast_sl)).collect::<Vec<_>>(),
                "slow_flows": slow.len(),
                "wrote": changed,
            });
            crate::out(None, &format!("{line}\n"))?;
        } else {
            for e in &unread {
                say(&format!("weft dftree: sweep {sweep}: not read: {e}"));
            }
            let t = human(sweep, &moves);
            crate::out(None, &t)?;
        }
        {
            use std::io::Write as _;
            std::io::stdout().flush()?;
        }
        if args.sweeps.is_some_and(|n| sweep >= n) || stop.load(Ordering::SeqCst) {
            break;
        }
        // Wait for the next sweep, watching for an interruption.
        let next = due + every;
        crate::term::phase("waiting for the next sweep");
        while Instant::now() < next && !stop.load(Ordering::SeqCst) {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
    }
    if !quiet && !json {
        say(&format!(
            "weft dftree: {sweep} sweep(s) of {} port(s); {} flow(s) on their slow lane; \
             qos-policy.conf and repath.txt written {writes} time(s) in `{}`",
            ports.len(),
            slow.len(),
            args.out.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// A sweep's moves for people, a line each.
fn human(sweep: u64, moves: &Moves) -> String {
    let mut t = String::new();
    for (g, p) in &moves.hotspots_marked {
        t += &format!("sweep {sweep}: hot-spot {g:#018x} port {p}\n");
    }
    for (g, p) in &moves.hotspots_cleared {
        t += &format!("sweep {sweep}: hot-spot {g:#018x} port {p} cleared\n");
    }
    for f in &moves.to_slow {
        t += &format!(
            "sweep {sweep}: {:#018x} port {} → LID {} to the slow lane (SL {})\n",
            f.src_guid, f.src_port, f.dst_lid, f.slow_sl
        );
    }
    for f in &moves.to_fast {
        t += &format!(
            "sweep {sweep}: {:#018x} port {} → LID {} back to the fast lane (SL {})\n",
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
    fn a_line_per_move_and_repath_lines() {
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
            human(7, &moves),
            "sweep 7: hot-spot 0x0000000000000700 port 1\n\
             sweep 7: hot-spot 0x0000000000000600 port 1 cleared\n\
             sweep 7: 0x0000000000000400 port 1 → LID 4 to the slow lane (SL 1)\n\
             sweep 7: 0x0000000000000500 port 1 → LID 3 back to the fast lane (SL 0)\n"
        );
        let r = repath(7, &moves);
        assert!(r.starts_with("# weft dftree, sweep 7: "), "{r}");
        assert_eq!(
            r.lines().skip(1).collect::<Vec<_>>(),
            ["0x0000000000000400 1 4 1", "0x0000000000000500 1 3 0"]
        );
        assert_eq!(human(8, &Moves::default()), "");
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

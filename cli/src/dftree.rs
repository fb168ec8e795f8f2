//! `weft dftree FILE.weft|BUILD_DIR|STATE.json --target mad --interval T`: dFtree's run-time
//! loop on a live fabric. After discovery the fabric is compared with the state the
//! controller is built from (its wire view, as `weft apply` checks a plan's, and the port GUIDs
//! of the end ports it watches): a fabric that is not the state's is refused before the first
//! sweep. Each sweep reads every live port's counters from its PMA (`weft_deploy::pma`:
//! PortCounters' XmitWait, PortCountersExtended's XmitData where the node has it) and feeds
//! the ports it may judge to dFtree's controller (`weft_traffic::dftree`): not a port with a
//! saturated 32-bit counter, nor one whose node does not count XmitWait. `qos-policy.conf`
//! (the build's policy with the moved flows answered on their slow SL:
//! `weft_compiler::qos::with_slow_flows`) and `repath.txt` (the flows whose SL changed, for the
//! hosts to re-path their QPs) are written at the start (no flow moved), whenever the set of
//! flows on their slow lane changes, and at a clean stop (every flow back on its fast lane),
//! each atomically (a temporary file renamed over the old one); every move is also appended
//! to `repath.log`. It runs until interrupted (SIGINT, SIGTERM) or `--sweeps N`.

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

/// `repath.txt`, write `seq` (0 at the start, one more at each write), at `sweep` (0: before
/// the first), with `note` after it in the header: one line per flow whose SL changed.
fn repath(seq: u64, sweep: u64, note: &str, moves: &Moves) -> String {
    let mut t = format!(
        "# weft dftree write {seq}, sweep {sweep}{note}: flows to re-path. Each line: the \
         source node GUID, its port, the destination LID, the SL every QP from that port toward \
         that LID takes now.\n"
    );
    for (f, sl) in moved(moves) {
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
    // The controller knows the fabric from the state: refuse a fabric that is not the
    // state's before the first sweep (or its hot-spots and flows would be another fabric's).
    let differences = fabric_differences(&st, &found, &controller.ports());
    if !differences.is_empty() {
        let input = args.input.display().to_string();
        return Err(Fatal::Input(
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
        ));
    }
    // Utilisation against each link's live rate, as discovery read it off the switch port.
    controller.use_live_rates(|guid, port| {
        let end = (weft_fabric::Guid(guid), weft_fabric::PortNum(port));
        let width = found.widths.get(&end)?;
        let speed = found.speeds.get(&end)?;
        Some(f64::from(width.lanes()) * f64::from(speed.lane_mbps()))
    });
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
    // OpenSM pointed at the output has the base policy from the start, every flow on its
    // fast lane.
    let mut files = Files {
        out: args.out.clone(),
        base,
        writes: 0,
    };
    files.write(&st, &BTreeSet::new(), 0, "", &Moves::default())?;
    let stop = Arc::new(AtomicBool::new(false));
    let _interrupt = crate::term::stop_on_interrupt_saying(
        stop.clone(),
        "weft: interrupted: stopping after this sweep (interrupt again to stop at once)",
    );
    let mut reader = CounterReader::new();
    let start = Instant::now();
    let mut slow: BTreeSet<Flow> = BTreeSet::new();
    let mut sweep = 0u64;
    let mut named = Named::default();
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
        let judged = judged(&read);
        if !json {
            for line in named.news(&read) {
                say(&format!("weft dftree: sweep {sweep}: {line}"));
            }
        }
        let moves = controller.sweep(at_ns, &judged.counters);
        let now: BTreeSet<Flow> = controller.slow_flows().into_iter().collect();
        let changed = now != slow;
        if changed {
            files.write(&st, &now, sweep, "", &moves)?;
            slow = now;
        }
        crate::term::clear();
        if json {
            let line = serde_json::json!({
                "sweep": sweep,
                "at_ms": at_ns / 1_000_000,
                "ports_read": read.len(),
                "pma_gets": reader.gets - gets_before,
                "extended_xmit_data": read.iter().filter(|c| c.extended).count(),
                "saturated": judged.saturated.iter().map(|(g, p)| format!("{g}:{p}")).collect::<Vec<_>>(),
                "no_xmit_wait": judged.no_xmit_wait.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "unread": unread.iter().map(|e| serde_json::json!({"code": e.code(), "message": e.to_string()})).collect::<Vec<_>>(),
                "hotspots_marked": moves.hotspots_marked.iter().map(|(g, p)| format!("{g:#018x}:{p}")).collect::<Vec<_>>(),
                "hotspots_cleared": moves.hotspots_cleared.iter().map(|(g, p)| format!("{g:#018x}:{p}")).collect::<Vec<_>>(),
                "to_slow": moves.to_slow.iter().map(|f| flow_json(f, f.slow_sl)).collect::<Vec<_>>(),
                "to_fast": moves.to_fast.iter().map(|f| flow_json(f, f.fast_sl)).collect::<Vec<_>>(),
                "slow_flows": slow.len(),
                "wrote": changed,
            });
            crate::out(None, &format!("{line}\n"))?;
        } else {
            for e in &unread {
                say(&format!("weft dftree: sweep {sweep}: not read: {e}"));
            }
            let t = human(&format!("sweep {sweep}"), &moves);
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
    // A clean stop: every flow still on its slow lane moves back (the base policy again), so
    // nothing stays slowed with no loop left to release it.
    let back = Moves {
        to_fast: slow.iter().copied().collect(),
        ..Moves::default()
    };
    if !back.to_fast.is_empty() {
        files.write(&st, &BTreeSet::new(), sweep, " (stop)", &back)?;
        if json {
            let line = serde_json::json!({
                "stop": true,
                "sweep": sweep,
                "to_fast": back.to_fast.iter().map(|f| flow_json(f, f.fast_sl)).collect::<Vec<_>>(),
                "slow_flows": 0,
                "wrote": true,
            });
            crate::out(None, &format!("{line}\n"))?;
        } else {
            crate::out(None, &human("stop", &back))?;
        }
    }
    if !quiet && !json {
        say(&format!(
            "weft dftree: {sweep} sweep(s) of {} port(s); {} flow(s) moved back to their fast \
             lane at the stop; qos-policy.conf and repath.txt written {} time(s) in `{}`",
            ports.len(),
            back.to_fast.len(),
            files.writes,
            args.out.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
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

/// Every way the fabric `d` discovered differs from `st`, the state the controller was
/// built from: its wire view (nodes, live links, LIDs, as `weft apply` checks a plan's
/// fabric), and the port GUID of each end port the controller watches.
fn fabric_differences(
    st: &FabricState,
    d: &weft_deploy::Discovery,
    watched: &[weft_traffic::dftree::EndPort],
) -> Vec<String> {
    let wire = weft_fabric::WireView::of(st);
    let mut out: Vec<String> = wire
        .diff(&d.view.fold_vswitches(&wire))
        .iter()
        .map(ToString::to_string)
        .collect();
    for p in watched {
        let expected = st
            .fabric
            .find_guid(Guid(p.guid))
            .and_then(|n| st.fabric.nodes().get(n.index()))
            .and_then(|n| n.port(PortNum(p.port)))
            .map(|x| x.guid.0);
        // A node or port not found is a wire difference already.
        if let (Some(e), Some(f)) = (expected, d.port_guid(Guid(p.guid), p.port)) {
            if e != f {
                out.push(format!(
                    "node {:#018x} port {} has port GUID {f:#018x}, not {e:#018x}",
                    p.guid, p.port
                ));
            }
        }
    }
    out
}

/// What of a sweep's readings the controller is told.
#[derive(Debug, Default, PartialEq)]
struct Judged {
    /// The ports it judges.
    counters: Vec<PortCounters>,
    /// Ports read with a saturated 32-bit counter: not judged (told nothing, as if unread).
    saturated: Vec<(Guid, u8)>,
    /// Nodes whose PMA does not count PortXmitWait: their ports are not judged.
    no_xmit_wait: BTreeSet<Guid>,
}

/// Splits a sweep's readings into what the controller judges and what it must not: a port
/// whose node does not count PortXmitWait (its congestion would read 0), and a port with a
/// saturated counter (its XmitWait or 32-bit XmitData stopped at `0xFFFFFFFF` and would read
/// as no change: no congestion, a false release; no data, a false contributor).
fn judged(read: &[pma::PortCounters]) -> Judged {
    let mut j = Judged::default();
    for c in read {
        if !c.xmit_wait_supported {
            j.no_xmit_wait.insert(c.at.guid);
        } else if c.saturated() {
            j.saturated.push((c.at.guid, c.at.port));
        } else {
            j.counters.push(PortCounters {
                guid: c.at.guid.0,
                port: c.at.port,
                xmit_wait: c.xmit_wait,
                xmit_data_words: c.xmit_data_words,
            });
        }
    }
    j
}

/// The ports and nodes already named as not judged, so each is named once.
#[derive(Default)]
struct Named {
    saturated: BTreeSet<(Guid, u8)>,
    no_xmit_wait: BTreeSet<Guid>,
}

impl Named {
    /// Lines for people about the ports and nodes of `read` not named before.
    fn news(&mut self, read: &[pma::PortCounters]) -> Vec<String> {
        let mut out = Vec::new();
        for c in read {
            if !c.xmit_wait_supported {
                if self.no_xmit_wait.insert(c.at.guid) {
                    out.push(format!(
                        "node {:#018x} (LID {}) does not count PortXmitWait (its PMA's \
                         ClassPortInfo CapabilityMask lacks bit 12): its ports' congestion is \
                         not judged",
                        c.at.guid.0, c.at.lid
                    ));
                }
            } else if c.saturated() && self.saturated.insert((c.at.guid, c.at.port)) {
                let which = match (c.xmit_wait_saturated(), c.xmit_data_saturated()) {
                    (true, true) => "PortXmitWait and the 32-bit PortXmitData are",
                    (true, false) => "PortXmitWait is",
                    _ => "the 32-bit PortXmitData is",
                };
                out.push(format!(
                    "node {:#018x} port {} (LID {}): {which} saturated at 0xFFFFFFFF (weft \
                     does not reset counters): the port is not judged until they are reset",
                    c.at.guid.0, c.at.port, c.at.lid
                ));
            }
        }
        out
    }
}

/// Where `qos-policy.conf`, `repath.txt` and `repath.log` go, and the base policy.
struct Files {
    out: PathBuf,
    base: String,
    /// Writes so far (the sequence number in `repath.txt`'s header).
    writes: u64,
}

impl Files {
    /// Writes the policy with `slow` on their slow lane and `repath.txt` with `moves`
    /// (`sweep`, and `note` after it, in its header), and appends the moves to
    /// `repath.log`.
    fn write(
        &mut self,
        st: &FabricState,
        slow: &BTreeSet<Flow>,
        sweep: u64,
        note: &str,
        moves: &Moves,
    ) -> Result<(), Fatal> {
        let flows: Vec<SlowFlow> = slow.iter().filter_map(|f| slow_flow(st, f)).collect();
        let policy = weft_compiler::qos::with_slow_flows(&self.base, st, &flows)
            .map_err(|e| Fatal::Run(format!("cannot write the QoS policy: {e}")))?;
        crate::output::write_file(&self.out.join("qos-policy.conf"), policy.as_bytes())
            .map_err(Fatal::Run)?;
        let seq = self.writes;
        crate::output::write_file(
            &self.out.join("repath.txt"),
            repath(seq, sweep, note, moves).as_bytes(),
        )
        .map_err(Fatal::Run)?;
        self.writes += 1;
        let lines = repath_log(&utc_now(), sweep, moves);
        if lines.is_empty() {
            return Ok(());
        }
        let path = self.out.join("repath.log");
        let append = || -> std::io::Result<()> {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            f.write_all(lines.as_bytes())?;
            f.sync_data()
        };
        append().map_err(|e| Fatal::Run(format!("cannot append to `{}`: {e}", path.display())))
    }
}

/// Every move of `moves` (to the slow lane, then back), with the SL each flow takes now.
fn moved(moves: &Moves) -> impl Iterator<Item = (&Flow, u8)> {
    moves
        .to_slow
        .iter()
        .map(|f| (f, f.slow_sl))
        .chain(moves.to_fast.iter().map(|f| (f, f.fast_sl)))
}

/// `repath.log`'s lines for `moves` at `sweep`: the time (UTC), the sweep, then
/// `repath.txt`'s columns.
fn repath_log(time: &str, sweep: u64, moves: &Moves) -> String {
    moved(moves)
        .map(|(f, sl)| {
            format!(
                "{time} {sweep} {:#018x} {} {} {sl}\n",
                f.src_guid, f.src_port, f.dst_lid
            )
        })
        .collect()
}

/// Now, in UTC, to the millisecond: `2026-11-27T16:20:01.123Z`.
fn utc_now() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    utc(d.as_millis())
}

/// `ms` milliseconds after the Unix epoch, in UTC (the proleptic Gregorian calendar).
fn utc(ms: u128) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Days since 1970-01-01 to a civil date (eras of 400 years, from March).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
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
            human("sweep 7", &moves),
            "sweep 7: hot-spot 0x0000000000000700 port 1\n\
             sweep 7: hot-spot 0x0000000000000600 port 1 cleared\n\
             sweep 7: 0x0000000000000400 port 1 → LID 4 to the slow lane (SL 1)\n\
             sweep 7: 0x0000000000000500 port 1 → LID 3 back to the fast lane (SL 0)\n"
        );
        let r = repath(3, 7, "", &moves);
        assert!(r.starts_with("# weft dftree write 3, sweep 7: "), "{r}");
        assert_eq!(
            r.lines().skip(1).collect::<Vec<_>>(),
            ["0x0000000000000400 1 4 1", "0x0000000000000500 1 3 0"]
        );
        assert_eq!(human("sweep 8", &Moves::default()), "");
        // The log: a line per move, with the time and the sweep.
        assert_eq!(
            repath_log("2026-11-27T16:20:01.123Z", 7, &moves),
            "2026-11-27T16:20:01.123Z 7 0x0000000000000400 1 4 1\n\
             2026-11-27T16:20:01.123Z 7 0x0000000000000500 1 3 0\n"
        );
        assert_eq!(repath_log("t", 8, &Moves::default()), "");
    }

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(utc(1_795_796_401_123), "2026-11-27T16:20:01.123Z");
        assert_eq!(utc(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }

    /// Saturated ports and nodes without PortXmitWait are not judged (the controller is told
    /// nothing of them), and each is named once.
    #[test]
    fn saturated_ports_and_nodes_without_xmit_wait_are_not_judged() {
        let c = |guid: u64, port: u8, wait: u64, data: u64, extended: bool, counted: bool| {
            pma::PortCounters {
                at: pma::PortAt {
                    guid: Guid(guid),
                    port,
                    lid: 9,
                    switch: false,
                },
                xmit_wait: wait,
                xmit_data_words: data,
                extended,
                xmit_wait_supported: counted,
            }
        };
        let max = u64::from(u32::MAX);
        let read = [
            c(1, 1, 5, 6, true, true),
            c(2, 1, max, 6, true, true),
            c(3, 1, 5, max, false, true),
            // 64-bit XmitData at 2^32 - 1 words is not saturated.
            c(4, 1, 5, max, true, true),
            c(5, 1, 0, 6, true, false),
            c(5, 2, max, max, false, false),
        ];
        let j = judged(&read);
        assert_eq!(
            j.counters,
            [(1, 5, 6), (4, 5, max)]
                .iter()
                .map(|&(guid, xmit_wait, xmit_data_words)| PortCounters {
                    guid,
                    port: 1,
                    xmit_wait,
                    xmit_data_words,
                })
                .collect::<Vec<_>>()
        );
        assert_eq!(j.saturated, [(Guid(2), 1), (Guid(3), 1)]);
        assert_eq!(j.no_xmit_wait, BTreeSet::from([Guid(5)]));
        let mut named = Named::default();
        let lines = named.news(&read);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "node 0x0000000000000002 port 1 (LID 9): PortXmitWait is saturated at 0xFFFFFFFF"
            ),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with(
                "node 0x0000000000000003 port 1 (LID 9): the 32-bit PortXmitData is saturated"
            ),
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("node 0x0000000000000005 (LID 9) does not count PortXmitWait"),
            "{lines:?}"
        );
        // Once each.
        assert!(named.news(&read).is_empty());
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

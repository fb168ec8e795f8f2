//! `weft apply PLAN --target sim|mad`: writes a `weft plan` file to a fabric as a
//! transaction — discover and compare, snapshot and journal, the steps in order with every
//! block read back, rollback on any failure — and says which state the fabric ends in.
//! `--recover JOURNAL` finishes what a crashed apply left (back by default, `--forward` to
//! finish the plan); `--dry-run` lists the SMPs without writing.

use crate::{out, Fatal};
use clap::ValueEnum;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_deploy::apply::{self, ApplyError, ApplyOptions, Direction, Final, Progress, Report};
use weft_deploy::sim::{Fault, FaultKind, SimFabric, STATUS_INVALID};
use weft_deploy::{Mad, Paced, Retrying, Transport};
use weft_fabric::plan::Plan;
use weft_fabric::{NodeKind, PortNum, PortRef, ValidState};

/// `weft apply` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The plan (`weft plan -o plan.json`), or a `weft build` directory: make the fabric run
    /// its `state.json` (its tables read, the way there planned and proven, then applied).
    /// Not with `--recover`.
    #[arg(required_unless_present = "recover")]
    plan: Option<PathBuf>,
    /// Where to write: `sim` (an in-process fabric loaded from `--fabric`, for rehearsals and
    /// fault drills) or `mad` (real SMPs through libibmad on the local HCA port).
    #[arg(long, default_value = "sim")]
    target: TargetArg,
    /// `sim`: the state the simulated fabric holds when the apply starts (a `state.json`).
    #[arg(long)]
    fabric: Option<PathBuf>,
    /// `sim`: the end port the SM sits on (`NODE/PORT`); by default the first HCA port on a
    /// live link.
    #[arg(long)]
    sm: Option<String>,
    /// `sim`: a fault to inject, `KIND@N` striking the N-th Set (from 0): drop, drop-all
    /// (every retry too), delay, delay-all, reject, corrupt, crash.
    #[arg(long)]
    inject: Vec<String>,
    /// How SMPs go out (`mad`: the local HCA port, M_Key, timeout; every target: tries).
    #[command(flatten)]
    mad: crate::audit::MadArgs,
    /// Wait this many milliseconds before every Set (a rate limit for fabrics that must not
    /// see SMPs at full speed).
    #[arg(long, default_value_t = 0)]
    smp_gap_ms: u64,
    /// `mad`: how many SMPs of a step (and of its read-back) are in flight together (default
    /// 16; 1: one at a time).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    window: Option<u32>,
    /// The journal; by default beside the plan (`PLAN.journal`).
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Recover from this journal (a crashed apply): put every block back as it was.
    #[arg(long, conflicts_with = "dry_run")]
    recover: Option<PathBuf>,
    /// With `--recover`: finish the plan instead of rolling it back.
    #[arg(long, requires = "recover")]
    forward: bool,
    /// Do not prove a plan file's steps again on the fabric as it runs (read over SMPs, every
    /// path on VL 0) before writing: for plans whose safety rests on virtual lanes, which
    /// that reading cannot see. The plan's own proof is then trusted.
    #[arg(long)]
    no_reprove: bool,
    /// Discover and list the SMPs the plan sends, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// `opensm`: the configuration file the running OpenSM was started with (`-F`; default
    /// /etc/opensm/opensm.conf).
    #[arg(long)]
    opensm_conf: Option<PathBuf>,
    /// `opensm`: the running OpenSM's process ID, to signal (SIGHUP) once its files are
    /// written; without it, the files are written and OpenSM is left to be signalled.
    #[arg(long)]
    opensm_pid: Option<u32>,
    /// `opensm`: its log file, to wait for the sweep the signal starts to bring the subnet up.
    #[arg(long, requires = "opensm_pid")]
    opensm_log: Option<PathBuf>,
    /// `opensm`: seconds to wait for that sweep (default 120).
    #[arg(long, requires = "opensm_log")]
    wait_s: Option<u64>,
    /// Where lock files go (one per SM port: two applies through one port exclude each other):
    /// a directory only you can write, created 0700 if missing (default `$WEFT_RUN_DIR`, else
    /// /run/weft as root, else `$XDG_RUNTIME_DIR/weft`).
    #[arg(long)]
    lock_dir: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum TargetArg {
    Sim,
    Mad,
    Opensm,
}

fn parse_fault(s: &str) -> Result<Fault, Fatal> {
    let bad = || {
        Fatal(format!(
            "--inject `{s}`: write KIND@N, KIND one of drop, drop-all, delay, delay-all, \
             reject, corrupt, crash"
        ))
    };
    let (kind, at) = s.split_once('@').ok_or_else(bad)?;
    let at_set: usize = at.parse().map_err(|_| bad())?;
    let kind = match kind {
        "drop" => FaultKind::Drop { times: 1 },
        "drop-all" => FaultKind::Drop { times: u32::MAX },
        "delay" => FaultKind::Delay { times: 1 },
        "delay-all" => FaultKind::Delay { times: u32::MAX },
        "reject" => FaultKind::Reject {
            status: STATUS_INVALID,
        },
        "corrupt" => FaultKind::CorruptReadback,
        "crash" => FaultKind::Crash,
        _ => return Err(bad()),
    };
    Ok(Fault { at_set, kind })
}

fn read_plan(path: &Path) -> Result<Plan, Fatal> {
    let text = crate::input::read_regular(path, crate::input::MAX_DUMP_BYTES)
        .map_err(|e| Fatal(format!("cannot read `{}`: {e}", path.display())))?;
    Plan::from_json(&text).map_err(|e| Fatal(format!("`{}`: {e}", path.display())))
}

/// The SM's port in a simulated fabric.
fn sm_port(state: &ValidState, sm: Option<&str>) -> Result<PortRef, Fatal> {
    let f = &state.fabric;
    if let Some(text) = sm {
        let (name, port) = text
            .split_once('/')
            .and_then(|(n, p)| Some((n, p.parse::<u8>().ok()?)))
            .ok_or_else(|| Fatal(format!("--sm `{text}`: write NODE/PORT")))?;
        let id = f
            .nodes()
            .iter()
            .position(|n| n.name() == name)
            .ok_or_else(|| Fatal(format!("--sm `{text}`: no node `{name}` in the fabric")))?;
        return Ok(PortRef {
            node: weft_fabric::NodeId(id as u32),
            port: PortNum(port),
        });
    }
    f.nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind() == NodeKind::Hca && !n.down)
        .flat_map(|(i, n)| {
            (1..=n.spec.port_count).map(move |p| PortRef::new(weft_fabric::NodeId(i as u32), p))
        })
        .find(|&p| {
            f.peer(p)
                .is_some_and(|(_, l)| f.link(l).state == weft_fabric::LinkState::Up)
        })
        .ok_or_else(|| Fatal("the fabric has no HCA port on a live link for the SM".into()))
}

/// For a `weft build` directory: reads what the fabric runs (LFTs, the P_Keys of the ports the
/// desired state sets) and plans the way to the directory's `state.json` (every step proven),
/// or says why not (exit 1).
fn plan_live(
    t: &mut impl Transport,
    dir: &Path,
    d: &weft_deploy::Discovery,
    vfs: bool,
    quiet: bool,
) -> Result<Result<(Plan, usize), ExitCode>, Fatal> {
    use weft_deploy::read::{read_lfts, read_pkeys};
    let desired = crate::plan::load_state(&dir.join("state.json"))?;
    let st = desired.state();
    let qos = st
        .switches
        .values()
        .any(weft_fabric::SwitchState::has_sl2vl)
        || st
            .ports
            .values()
            .any(|p| p.sl2vl.is_some() || p.vlarb.is_some());
    if qos {
        return Err(Fatal(
            "not built yet: writing SL→VL and VL arbitration tables over SMPs; hand the \
             state's opensm.conf to OpenSM (`opensm -Q -F`)"
                .into(),
        ));
    }
    let wire = weft_fabric::WireView::of(st);
    let diffs = wire.diff(&d.view.fold_vswitches(&wire));
    if !diffs.is_empty() {
        crate::term::clear();
        let mut err = String::from(
            "error: the fabric is not the one this state is for (assigning LIDs is not built \
             yet); nothing was written:\n",
        );
        for x in &diffs {
            let _ = writeln!(err, "  {x}");
        }
        eprint_text(&err);
        return Ok(Err(ExitCode::from(1)));
    }
    crate::term::phase("reading the fabric");
    let mut smps = 0;
    let lfts = read_lfts(t, d, &mut smps).map_err(|e| Fatal(e.to_string()))?;
    let mut cur = st.clone();
    for (id, sw) in &mut cur.switches {
        let g = cur.fabric.node(*id).guid();
        sw.lft.ports = lfts.get(&g).cloned().unwrap_or_default();
    }
    let ports: Vec<(PortRef, usize)> = cur
        .ports
        .iter()
        .filter_map(|(p, s)| Some((*p, s.pkeys.as_ref()?.len())))
        .collect();
    for (p, len) in ports {
        let g = cur.fabric.node(p.node).guid();
        let blocks = len.div_ceil(weft_deploy::smp::PKEY_BLOCK).max(1) as u16;
        let keys =
            read_pkeys(t, d, g, p.port.0, blocks, &mut smps).map_err(|e| Fatal(e.to_string()))?;
        if let Some(s) = cur.ports.get_mut(&p) {
            s.pkeys = keys.map(|k| k.into_iter().map(weft_fabric::PKey).collect());
        }
    }
    // The VFs: each LID and P_Key table as the fabric holds it.
    let vf_ports = d.vf_ports(&wire);
    let ids: Vec<weft_deploy::read::VfId> = cur
        .lids
        .vports
        .iter()
        .map(|v| {
            (
                (cur.fabric.node(v.host.node).guid(), v.host.port.0),
                (v.vf, v.guid),
            )
        })
        .collect();
    let read = weft_deploy::read::read_vfs(t, d, &vf_ports, &ids, vfs, &mut smps);
    for (v, r) in cur.lids.vports.iter_mut().zip(read) {
        match r {
            Ok(Ok((lid, keys))) => {
                v.lid = lid.map(weft_fabric::Lid);
                // No table stands for the default one: keep the state's form when equal.
                let now: Vec<u16> = v.pkeys.as_ref().map_or_else(
                    || vec![weft_fabric::PKey::DEFAULT.0],
                    |k| k.iter().map(|k| k.0).collect(),
                );
                if keys != now {
                    v.pkeys = Some(keys.into_iter().map(weft_fabric::PKey).collect());
                }
            }
            Ok(Err(e @ weft_deploy::discover::VfError::NotFound { .. })) => {
                return Err(Fatal(format!(
                    "not built yet: reading {e} (`{}` port {}; a vSwitch shown as a switch with \
                     one adapter per VF is read by directed route; vendor vPort attributes are \
                     not built)",
                    cur.fabric.node(v.host.node).name(),
                    v.host.port.0
                )))
            }
            Ok(Err(e)) => {
                return Err(Fatal(format!(
                    "{e} (`{}` port {}); nothing was written",
                    cur.fabric.node(v.host.node).name(),
                    v.host.port.0
                )))
            }
            Err(e) => return Err(Fatal(e.to_string())),
        }
    }
    let current = match ValidState::new(cur) {
        Ok(v) => v,
        Err(e) => {
            eprint_text(&format!(
                "error: what the fabric runs is not a valid state for this fabric; nothing was \
                 written:\n{e}\n"
            ));
            return Ok(Err(ExitCode::from(1)));
        }
    };
    crate::term::phase("planning");
    let opts = weft_plan::Options {
        full: true,
        ..weft_plan::Options::default()
    };
    match weft_plan::plan(&current, &desired, &opts) {
        Ok(p) => {
            if !quiet {
                crate::term::clear();
                eprint_text(&format!(
                    "weft: read {} switches' tables ({} SMPs); planned {} step(s), {} SMPs, every \
                     step proven\n",
                    lfts.len(),
                    smps + d.smps + 1,
                    p.plan.steps.len(),
                    p.plan.smps()
                ));
            }
            Ok(Ok((p.plan, smps)))
        }
        Err(e) => {
            eprint_text(&format!("error: no plan from what the fabric runs: {e}\n"));
            Ok(Err(ExitCode::from(1)))
        }
    }
}

fn eprint_text(text: &str) {
    use std::io::Write as _;
    crate::term::clear();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Proves a plan file's steps again on the fabric as it runs (read over SMPs: LIDs, LFTs;
/// every path on VL 0): the SMPs it took, or exit 1 naming the step that is not safe.
fn reprove(
    t: &mut impl Transport,
    d: &weft_deploy::Discovery,
    plan: &Plan,
    vfs: bool,
    quiet: bool,
) -> Result<Result<usize, ExitCode>, Fatal> {
    crate::term::phase("proving the plan on the fabric");
    let mut a = weft_deploy::audit::state_of(t, d, &plan.fabric, plan.wire.as_ref())
        .map_err(|e| Fatal(e.to_string()))?;
    if vfs {
        a.smps += weft_deploy::audit::vfs_through_hosts(t, d, plan, &mut a.state)
            .map_err(|e| Fatal(e.to_string()))?;
    }
    let start = match ValidState::new(a.state) {
        Ok(s) => s,
        Err(e) => {
            eprint_text(&format!(
                "error: what the fabric runs is not a state the plan can be proven on; nothing \
                 was written:\n{e}\n"
            ));
            return Ok(Err(ExitCode::from(1)));
        }
    };
    let steps: Vec<Vec<weft_fabric::plan::Write>> =
        plan.steps.iter().map(|s| s.writes.clone()).collect();
    let checks = weft_plan::check_steps(&start, &steps, weft_verifier::Scope::All);
    if let Some((i, c)) = checks.iter().enumerate().find(|(_, c)| !c.is_proven()) {
        eprint_text(&format!(
            "error: step {} of the plan is not safe on the fabric as it runs: {}; nothing was \
             written (a plan whose safety rests on virtual lanes needs `--no-reprove`: the \
             fabric's SL→VL tables are not read)\n",
            i + 1,
            weft_plan::why(c)
        ));
        return Ok(Err(ExitCode::from(1)));
    }
    // VFs the plan's fabric has but this one does not show (a vSwitch addressed in vendor
    // ways): routes toward their LIDs were proven when the plan was made, not again here.
    let declared: usize = plan
        .wire
        .as_ref()
        .map_or(0, |w| w.vf_hosts.values().map(|&n| usize::from(n)).sum());
    let seen = start.lids.vports.len();
    if declared > seen && !quiet {
        crate::term::clear();
        eprint_text(&format!(
            "weft: note: {} of the {declared} VFs of the plan's vSwitch hypervisors are not on \
             the fabric as read; routes toward their LIDs were proven when the plan was made, \
             not again on the fabric\n",
            declared - seen
        ));
    }
    Ok(Ok(a.smps))
}

/// Runs `weft apply`.
pub fn run(args: Args, quiet: bool) -> Result<ExitCode, Fatal> {
    match args.target {
        TargetArg::Opensm => opensm(&args, quiet),
        TargetArg::Sim => {
            let mut hca = args.mad.hca_options();
            if args.window.is_some() {
                hca.push("--window");
            }
            if !hca.is_empty() {
                return Err(Fatal(format!("{}: only for --target mad", hca.join(", "))));
            }
            refuse_opensm_options(&args, "sim")?;
            let path = args.fabric.as_deref().ok_or_else(|| {
                Fatal(
                    "--target sim needs --fabric STATE.json: the state the simulated fabric holds"
                        .into(),
                )
            })?;
            let state = crate::plan::load_state(path)?;
            let sm = sm_port(&state, args.sm.as_deref())?;
            let mut sim = SimFabric::new(&state, sm).map_err(|e| Fatal(e.to_string()))?;
            for f in &args.inject {
                sim.inject(parse_fault(f)?);
            }
            let code = go(&args, &mut sim, true, quiet)?;
            Ok(code)
        }
        TargetArg::Mad => {
            if !args.inject.is_empty() || args.fabric.is_some() || args.sm.is_some() {
                return Err(Fatal(
                    "--fabric, --sm and --inject are for --target sim".into(),
                ));
            }
            refuse_opensm_options(&args, "mad")?;
            let mut options = args.mad.options();
            if let Some(w) = args.window {
                options.window = w;
            }
            let mut mad = Mad::open(&options).map_err(|e| Fatal(e.to_string()))?;
            go(&args, &mut mad, false, quiet)
        }
    }
}

/// Refuses the `opensm` target's options on another target (they would have no effect).
fn refuse_opensm_options(args: &Args, target: &str) -> Result<(), Fatal> {
    let given: Vec<&str> = [
        (args.opensm_conf.is_some(), "--opensm-conf"),
        (args.opensm_pid.is_some(), "--opensm-pid"),
    ]
    .into_iter()
    .filter_map(|(given, name)| given.then_some(name))
    .collect();
    if given.is_empty() {
        Ok(())
    } else {
        Err(Fatal(format!(
            "{}: only for --target opensm, not {target}",
            given.join(", ")
        )))
    }
}

/// The hand-off to a running OpenSM.
fn opensm(args: &Args, quiet: bool) -> Result<ExitCode, Fatal> {
    let Some(dir) = args.plan.as_deref().filter(|p| p.is_dir()) else {
        return Err(Fatal(
            "--target opensm takes a `weft build` directory (OpenSM routes the whole fabric \
             from weft's files; a plan's steps are for --target sim or mad)"
                .into(),
        ));
    };
    let mut other: Vec<&str> = [
        (args.recover.is_some(), "--recover"),
        (args.dry_run, "--dry-run"),
        (!args.inject.is_empty(), "--inject"),
        (args.fabric.is_some(), "--fabric"),
        (args.sm.is_some(), "--sm"),
        (args.journal.is_some(), "--journal"),
        (args.lock_dir.is_some(), "--lock-dir"),
        (args.no_reprove, "--no-reprove"),
        (args.smp_gap_ms != 0, "--smp-gap-ms"),
        (args.mad.tries.is_some(), "--tries"),
    ]
    .into_iter()
    .filter_map(|(given, name)| given.then_some(name))
    .collect();
    other.extend(args.mad.hca_options());
    if args.window.is_some() {
        other.push("--window");
    }
    if !other.is_empty() {
        return Err(Fatal(format!(
            "{}: not for --target opensm (OpenSM writes the fabric)",
            other.join(", ")
        )));
    }
    if dir.join("UNPROVEN").exists() {
        return Err(Fatal(format!(
            "`{}` holds an unproven state (see its UNPROVEN file); weft hands OpenSM only \
             proven states",
            dir.display()
        )));
    }
    // The state must be one weft can read (and the build's own files beside it).
    crate::plan::load_state(&dir.join("state.json"))?;
    let written = weft_deploy::opensm::hand_off(
        dir,
        args.opensm_conf
            .as_deref()
            .unwrap_or(Path::new("/etc/opensm/opensm.conf")),
    )
    .map_err(|e| Fatal(e.to_string()))?;
    let mut text = String::new();
    for w in &written {
        let _ = writeln!(text, "wrote {}", w.display());
    }
    let Some(pid) = args.opensm_pid else {
        let _ = writeln!(
            text,
            "OpenSM was not signalled: `kill -HUP <its pid>` makes it read these and sweep"
        );
        out(None, &text)?;
        return Ok(ExitCode::SUCCESS);
    };
    let count = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|t| (t.matches("SUBNET UP").count(), t.len()))
            .unwrap_or((0, 0))
    };
    let before = args.opensm_log.as_deref().map(count);
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .output()
        .map_err(|e| Fatal(format!("cannot run `kill`: {e}")))?;
    if !hup.status.success() {
        return Err(Fatal(format!(
            "the files are written, but OpenSM (pid {pid}) could not be signalled: {}",
            String::from_utf8_lossy(&hup.stderr).trim()
        )));
    }
    let _ = writeln!(text, "sent SIGHUP to OpenSM (pid {pid})");
    let wait_s = args.wait_s.unwrap_or(120);
    if let (Some(log), Some((ups, len))) = (args.opensm_log.as_deref(), before) {
        crate::term::phase("waiting for OpenSM's sweep");
        let start = std::time::Instant::now();
        loop {
            let (now, _) = count(log);
            if now > ups {
                break;
            }
            if start.elapsed().as_secs() >= wait_s {
                out(None, &text)?;
                return Err(Fatal(format!(
                    "OpenSM did not bring the subnet up within {} s of the signal (see {})",
                    wait_s,
                    log.display()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let new = std::fs::read_to_string(log).unwrap_or_default();
        let errors: Vec<&str> = new
            .get(len..)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" ERR "))
            .collect();
        if !errors.is_empty() {
            for e in &errors {
                let _ = writeln!(text, "  {e}");
            }
            let _ = writeln!(text, "OpenSM swept again with errors");
            out(None, &text)?;
            return Ok(ExitCode::from(1));
        }
        let _ = writeln!(text, "OpenSM swept again: SUBNET UP");
    }
    if !quiet {
        out(None, &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Applies (or recovers, or lists) through `t`: the in-process fabric when `sim` (which
/// addresses VFs, and whose timeouts weft retries), else MADs (libibmad retries by itself).
fn go(args: &Args, t: &mut impl Transport, sim: bool, quiet: bool) -> Result<ExitCode, Fatal> {
    let vfs = sim;
    let mut t = Retrying {
        inner: Paced {
            inner: t,
            gap: std::time::Duration::from_millis(args.smp_gap_ms),
        },
        tries: if sim { args.mad.tries() } else { 1 },
    };
    let lock_dir = weft_deploy::files::run_dir(args.lock_dir.as_deref())
        .map_err(|e| Fatal(format!("lock directory: {e}")))?;
    let mut progress = |p: Progress| {
        if quiet {
            return;
        }
        match p {
            Progress::Discovered { .. } => crate::term::phase("snapshotting"),
            Progress::Step { step, of, smps } => crate::term::progress(
                "applying",
                format!("step {} of {of} ({smps} SMPs)", step + 1),
            ),
            Progress::Undo { step } => {
                crate::term::progress("rolling back", format!("undoing step {}", step + 1))
            }
        }
    };
    if let Some(j) = &args.recover {
        crate::term::phase("recovering");
        let direction = if args.forward {
            Direction::Forward
        } else {
            Direction::Back
        };
        let r = apply::recover(&mut t, j, direction, &lock_dir, &mut progress)
            .map_err(|e| Fatal(e.to_string()))?;
        // Recovery that ends where it was asked to is a success.
        let want = match direction {
            Direction::Back => Final::Old,
            Direction::Forward => Final::New,
        };
        return report(&r, quiet, None, r.state == want);
    }
    let plan_path = args.plan.as_deref().unwrap_or(Path::new("plan.json"));
    // The fabric is discovered once, under the lock: a build directory is read and planned
    // against; a plan file is checked against it and its steps proven again on it.
    crate::term::phase("discovering");
    let local = weft_deploy::TransportExt::node_info(&mut t, &weft_deploy::DrPath::local())
        .map_err(|e| Fatal(e.to_string()))?;
    let _lock = apply::lock(&lock_dir, local.node_guid, local.local_port)
        .map_err(|e| Fatal(e.to_string()))?;
    let d = weft_deploy::discover(&mut t).map_err(|e| Fatal(e.to_string()))?;
    let mut gets = d.smps + 1;
    let plan = if plan_path.is_dir() {
        match plan_live(&mut t, plan_path, &d, vfs, quiet)? {
            Ok((p, reads)) => {
                gets += reads;
                p
            }
            Err(code) => return Ok(code),
        }
    } else {
        let p = read_plan(plan_path)?;
        if let Err(e) = apply::check_wire(&p, &d) {
            eprint_text(&format!("error: {e}\n"));
            return Ok(ExitCode::from(1));
        }
        if !args.no_reprove {
            match reprove(&mut t, &d, &p, vfs, quiet)? {
                Ok(reads) => gets += reads,
                Err(code) => return Ok(code),
            }
        }
        p
    };
    if plan.steps.is_empty() {
        if !quiet {
            out(
                None,
                "the fabric already runs this state: nothing to write\n",
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        let smps = apply::smps_of(&plan, &d, vfs).map_err(|e| Fatal(e.to_string()))?;
        let mut text = String::new();
        for (step, target, what) in &smps {
            let _ = writeln!(text, "step {:>3}  Set {target}  ({what})", step + 1);
        }
        let _ = writeln!(
            text,
            "{} SMPs in {} steps; nothing was written (dry run)",
            smps.len(),
            plan.steps.len()
        );
        out(None, &text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let journal = args.journal.clone().unwrap_or_else(|| {
        let mut p = plan_path.as_os_str().to_owned();
        p.push(".journal");
        PathBuf::from(p)
    });
    let opts = ApplyOptions {
        journal: journal.clone(),
        lock_dir: lock_dir.clone(),
        vfs,
    };
    match apply::apply_discovered(&mut t, &plan, &opts, &d, gets, &mut progress) {
        Ok(r) => report(&r, quiet, Some(&journal), r.state == Final::New),
        Err(ApplyError::Crashed(e)) => {
            crate::term::clear();
            Err(Fatal(format!(
                "{e}; the journal is left for `weft apply --recover {}`",
                journal.display()
            )))
        }
        Err(e) => {
            eprint_text(&format!("error: {e}\n"));
            Ok(ExitCode::from(1))
        }
    }
}

/// The report; exit 0 when the fabric ended where it was meant to (`ok`), 1 when it was rolled
/// back, 2 when it holds neither state.
fn report(r: &Report, quiet: bool, journal: Option<&Path>, ok: bool) -> Result<ExitCode, Fatal> {
    let mut text = String::new();
    let (line, code) = match &r.state {
        Final::New => ("the fabric holds the new state", 0),
        Final::Old if ok => ("the fabric holds the old state", 0),
        Final::Old => ("the fabric holds the old state (rolled back)", 1),
        Final::Mixed(_) => ("the fabric holds neither state", 2),
    };
    if let Some(why) = &r.failure {
        let _ = writeln!(text, "{why}");
    }
    if let Final::Mixed(odd) = &r.state {
        for o in odd {
            let _ = writeln!(text, "  {o}");
        }
        if let Some(j) = journal {
            let _ = writeln!(
                text,
                "  the journal keeps every block as it was: `weft apply --recover {}`",
                j.display()
            );
        }
    }
    let _ = writeln!(
        text,
        "{line}: {} steps landed, {} Set and {} Get SMPs",
        r.steps_done, r.sets, r.gets
    );
    if code == 0 && quiet {
        return Ok(ExitCode::SUCCESS);
    }
    out(None, &text)?;
    Ok(ExitCode::from(code))
}

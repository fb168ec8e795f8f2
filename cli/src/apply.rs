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
use weft_deploy::apply::{
    self, ApplyError, ApplyOptions, Direction, Final, Progress, ProofMode, Report,
};
use weft_deploy::journal::JournalFault;
use weft_deploy::sim::{default_sm_port, named_sm_port, Injected, SimFabric};
use weft_deploy::{Mad, Paced, Retrying, Transport};
use weft_fabric::build_dir;
use weft_fabric::plan::Plan;
use weft_fabric::{PortRef, ValidState};

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
    /// (every retry too), delay, delay-all, reject, corrupt, crash; or the N-th journal write
    /// (0: its creation, then each event): journal (that write fails as on a full disk),
    /// journal-full (that one and every later one).
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
    /// that reading cannot see. The proof the plan carries is then trusted — only when the
    /// plan's digest matches its content (an edited plan is refused).
    #[arg(long)]
    no_reprove: bool,
    /// Milliseconds to wait after the last write before every block is read once more (for
    /// another writer's SMPs still in flight); also twice the longest a step's Sets may follow
    /// the reads that check its blocks. Default: `sim` 0, `mad` twice the SMP timeout times
    /// the tries.
    #[arg(long)]
    settle_ms: Option<u64>,
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

fn parse_fault(s: &str) -> Result<Injected, Fatal> {
    s.parse()
        .map_err(|e| Fatal::Run(format!("--inject `{s}`: {e}")))
}

fn read_plan(path: &Path) -> Result<Plan, Fatal> {
    let text = weft_driver::input::read_regular(path, weft_driver::input::MAX_DUMP_BYTES)
        .map_err(|e| Fatal::Run(format!("cannot read `{}`: {e}", path.display())))?;
    Plan::from_json(&text).map_err(|e| {
        Fatal::Input(
            crate::findings::of_miette(&e, &path.display().to_string(), None),
            None,
        )
    })
}

/// The SM's port in a simulated fabric: the one `--sm` names, else the first HCA port on a
/// live link.
fn sm_port(state: &ValidState, sm: Option<&str>) -> Result<PortRef, Fatal> {
    match sm {
        Some(text) => named_sm_port(&state.fabric, text)
            .map_err(|e| Fatal::Run(format!("--sm `{text}`: {e}"))),
        None => default_sm_port(&state.fabric).ok_or_else(|| {
            Fatal::Run("the fabric has no HCA port on a live link for the SM".into())
        }),
    }
}

fn eprint_text(text: &str) {
    use std::io::Write as _;
    crate::term::clear();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
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
                return Err(Fatal::Run(format!(
                    "{}: only for --target mad",
                    hca.join(", ")
                )));
            }
            refuse_opensm_options(&args, "sim")?;
            let path = args.fabric.as_deref().ok_or_else(|| {
                Fatal::Run(
                    "--target sim needs --fabric STATE.json: the state the simulated fabric holds"
                        .into(),
                )
            })?;
            let state = crate::plan::load_state(path)?;
            let sm = sm_port(&state, args.sm.as_deref())?;
            let mut sim = SimFabric::new(&state, sm).map_err(|e| Fatal::Run(e.to_string()))?;
            let mut journal_fault = None;
            for f in &args.inject {
                match parse_fault(f)? {
                    Injected::Smp(f) => sim.inject(f),
                    Injected::Journal(f) => journal_fault = Some(f),
                }
            }
            let settle = std::time::Duration::from_millis(args.settle_ms.unwrap_or(0));
            let code = go(&args, &mut sim, true, settle, journal_fault, quiet)?;
            Ok(code)
        }
        TargetArg::Mad => {
            if !args.inject.is_empty() || args.fabric.is_some() || args.sm.is_some() {
                return Err(Fatal::Run(
                    "--fabric, --sm and --inject are for --target sim".into(),
                ));
            }
            refuse_opensm_options(&args, "mad")?;
            let mut options = args.mad.options();
            if let Some(w) = args.window {
                options.window = w;
            }
            // Long enough for an SMP another writer sent to land (or time out on every try).
            let settle = std::time::Duration::from_millis(args.settle_ms.unwrap_or_else(|| {
                2 * u64::from(options.timeout_ms) * u64::from(options.retries + 1)
            }));
            let mut mad = Mad::open(&options).map_err(|e| Fatal::Run(e.to_string()))?;
            go(&args, &mut mad, false, settle, None, quiet)
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
        Err(Fatal::Run(format!(
            "{}: only for --target opensm, not {target}",
            given.join(", ")
        )))
    }
}

/// The hand-off to a running OpenSM.
fn opensm(args: &Args, quiet: bool) -> Result<ExitCode, Fatal> {
    let Some(dir) = args.plan.as_deref().filter(|p| p.is_dir()) else {
        return Err(Fatal::Run(
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
        (args.settle_ms.is_some(), "--settle-ms"),
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
        return Err(Fatal::Run(format!(
            "{}: not for --target opensm (OpenSM writes the fabric)",
            other.join(", ")
        )));
    }
    if dir.join(build_dir::UNPROVEN).exists() {
        return Err(Fatal::Run(format!(
            "`{}` holds an unproven state (see its UNPROVEN file); weft hands OpenSM only \
             proven states",
            dir.display()
        )));
    }
    // The state must be one weft can read (and the build's own files beside it).
    crate::plan::load_state(&dir.join(build_dir::STATE))?;
    let written = weft_deploy::opensm::hand_off(
        dir,
        args.opensm_conf
            .as_deref()
            .unwrap_or(Path::new("/etc/opensm/opensm.conf")),
    )
    .map_err(|e| Fatal::Run(e.to_string()))?;
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
    let log = args
        .opensm_log
        .as_deref()
        .map(weft_deploy::opensm::OpensmLog::mark);
    weft_deploy::opensm::signal(pid)
        .map_err(|e| Fatal::Run(format!("the files are written, but {e}")))?;
    let _ = writeln!(text, "sent SIGHUP to OpenSM (pid {pid})");
    let wait_s = args.wait_s.unwrap_or(120);
    if let Some(log) = log {
        crate::term::phase("waiting for OpenSM's sweep");
        let Some(errors) = log.wait_for_sweep(std::time::Duration::from_secs(wait_s)) else {
            out(None, &text)?;
            return Err(Fatal::Run(format!(
                "OpenSM did not bring the subnet up within {} s of the signal (see {})",
                wait_s,
                log.path().display()
            )));
        };
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
fn go(
    args: &Args,
    t: &mut impl Transport,
    sim: bool,
    settle: std::time::Duration,
    journal_fault: Option<JournalFault>,
    quiet: bool,
) -> Result<ExitCode, Fatal> {
    let vfs = sim;
    let mut t = Retrying {
        inner: Paced {
            inner: t,
            gap: std::time::Duration::from_millis(args.smp_gap_ms),
        },
        tries: if sim { args.mad.tries() } else { 1 },
    };
    let lock_dir = weft_deploy::files::run_dir(args.lock_dir.as_deref())
        .map_err(|e| Fatal::Run(format!("lock directory: {e}")))?;
    let mut progress = |p: Progress| {
        if quiet {
            return;
        }
        match p {
            Progress::Discovered { .. } => crate::term::phase("checking the fabric"),
            Progress::Proving => crate::term::phase("proving the plan on the fabric"),
            Progress::Snapshot => crate::term::phase("snapshotting"),
            Progress::Step { step, of, smps } => crate::term::progress(
                "applying",
                format!("step {} of {of} ({smps} SMPs)", step + 1),
            ),
            Progress::Verifying => crate::term::phase("reading every block again"),
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
        return match apply::recover_with(&mut t, j, direction, &lock_dir, settle, &mut progress) {
            Ok(r) => {
                // Recovery that ends where it was asked to (or finds nothing to do) is a
                // success.
                let ok = matches!(
                    (&r.state, direction),
                    (Final::Nothing, _)
                        | (Final::Old, Direction::Back)
                        | (Final::New, Direction::Forward)
                );
                report(&r, quiet, Some(j), ok)
            }
            Err(e) => Ok(refused(&e, Some(j))),
        };
    }
    let plan_path = args.plan.as_deref().unwrap_or(Path::new("plan.json"));
    let journal = args.journal.clone().unwrap_or_else(|| {
        let mut p = plan_path.as_os_str().to_owned();
        p.push(".journal");
        PathBuf::from(p)
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = ApplyOptions {
        journal: journal.clone(),
        lock_dir,
        vfs,
        proof: if args.no_reprove {
            ProofMode::TrustDigest
        } else {
            ProofMode::OnFabric
        },
        settle,
        journal_fault,
        stop: Some(stop.clone()),
    };
    crate::term::phase("discovering");
    if plan_path.is_dir() {
        if args.no_reprove {
            return Err(Fatal::Run(
                "--no-reprove is for a plan file: a `weft build` directory is planned and \
                 proven on the tables read off the fabric"
                    .into(),
            ));
        }
        let desired = crate::plan::load_state(&plan_path.join(build_dir::STATE))?;
        if args.dry_run {
            return match apply::dry_run(&mut t, apply::What::State(&desired), &opts) {
                Ok((plan, smps)) => dry(&plan, &smps),
                Err(e) => Ok(refused(&e, None)),
            };
        }
        let _interrupt = crate::term::stop_on_interrupt(stop);
        return match apply::apply_state(&mut t, &desired, &opts, &mut progress) {
            Ok((_, plan)) if plan.steps.is_empty() => {
                if !quiet {
                    out(
                        None,
                        "the fabric already runs this state: nothing to write\n",
                    )?;
                }
                Ok(ExitCode::SUCCESS)
            }
            Ok((r, plan)) => {
                if !quiet {
                    eprint_text(&format!(
                        "weft: planned {} step(s), {} SMPs, every step proven on the tables \
                         read off the fabric\n",
                        plan.steps.len(),
                        plan.smps()
                    ));
                }
                report(&r, quiet, Some(&journal), r.state == Final::New)
            }
            Err(e) => Ok(refused(&e, Some(&journal))),
        };
    }
    let plan = read_plan(plan_path)?;
    if args.dry_run {
        return match apply::dry_run(&mut t, apply::What::Plan(&plan), &opts) {
            Ok((plan, smps)) => dry(&plan, &smps),
            Err(e) => Ok(refused(&e, None)),
        };
    }
    if plan.steps.is_empty() {
        if !quiet {
            out(None, "the plan has no steps: nothing to write\n")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let _interrupt = crate::term::stop_on_interrupt(stop);
    match apply::apply(&mut t, &plan, &opts, &mut progress) {
        Ok(r) => report(&r, quiet, Some(&journal), r.state == Final::New),
        Err(e) => Ok(refused(&e, Some(&journal))),
    }
}

/// The SMPs a dry run lists.
fn dry(plan: &Plan, smps: &[(usize, weft_deploy::Target, String)]) -> Result<ExitCode, Fatal> {
    let mut text = String::new();
    for (step, target, what) in smps {
        let _ = writeln!(text, "step {:>3}  Set {target}  ({what})", step + 1);
    }
    let _ = writeln!(
        text,
        "{} SMPs in {} steps; nothing was written (dry run)",
        smps.len(),
        plan.steps.len()
    );
    out(None, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// An apply (or recovery) that did not start, or crashed: the error, and exit 1 when it
/// refused a plan or a fabric it checked, 2 when it could not run (a crash leaves the
/// journal).
fn refused(e: &ApplyError, journal: Option<&Path>) -> ExitCode {
    match (e, journal) {
        (ApplyError::Crashed(_), Some(j)) => eprint_text(&format!(
            "error: {e}; the journal is left for `weft apply --recover {}`\n",
            j.display()
        )),
        _ => eprint_text(&format!("error: {e}\n")),
    }
    ExitCode::from(if e.could_not_run() { 2 } else { 1 })
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
        Final::Nothing => ("nothing was written", 0),
    };
    if let Some(why) = &r.failure {
        let _ = writeln!(text, "{why}");
    }
    if let Final::Mixed(odd) = &r.state {
        for o in odd {
            let _ = writeln!(text, "  {o}");
        }
    }
    for n in &r.notes {
        let _ = writeln!(text, "note: {n}");
    }
    if let (Final::Mixed(_), Some(j), true) = (&r.state, journal, r.journal_open) {
        let _ = writeln!(
            text,
            "  the journal keeps every block as it was: `weft apply --recover {}`",
            j.display()
        );
    }
    let _ = writeln!(
        text,
        "{line}: {} steps landed, {} Set and {} Get SMPs",
        r.steps_done, r.sets, r.gets
    );
    if code == 0 && quiet && r.notes.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    out(None, &text)?;
    Ok(ExitCode::from(code))
}

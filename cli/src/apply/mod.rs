//! `weft apply PLAN --target sim|mad`: writes a `weft plan` file to a fabric as a
//! transaction — discover and compare, snapshot and journal, the steps in order with every
//! block read back, rollback on any failure — and says which state the fabric ends in.
//! `--recover JOURNAL` finishes what a crashed apply left (back by default, `--forward` to
//! finish the plan); `--dry-run` lists the SMPs without writing.
//!
//! This module holds the arguments and the command's course; [`target`] opens the fabric it
//! writes through, [`opensm`] hands a build to a running OpenSM instead, and
//! [`report`](mod@report) says what happened. An apply that does not start, or crashes, is a
//! finding under the deploy error's code ([`refused`]).

use weft_fabric::code::Coded as _;
mod opensm;
mod report;
mod target;

use crate::{out, Fatal};
use clap::ValueEnum;
use report::{dry, eprint_text, report};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_deploy::apply::{self, ApplyError, ApplyOptions, Direction, Final, Progress, ProofMode};
use weft_deploy::journal::JournalFault;
use weft_deploy::{Paced, Retrying, Transport};
use weft_formats::build_dir;
use weft_formats::plan::Plan;

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
    /// With a build directory: refuse a plan (worked out against the live tables) whose
    /// break-before-make outage leaves more than N routes failing at its worst step.
    #[arg(long, value_name = "N", conflicts_with = "zero_outage")]
    max_outage_pairs: Option<u64>,
    /// With a build directory: only a plan that keeps every route arriving in every mix of
    /// every step (no break-before-make).
    #[arg(long)]
    zero_outage: bool,
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

impl Args {
    /// The options given that only the `mad` target uses (libibmad's, and `--window`), by name.
    fn mad_only_options(&self) -> Vec<&'static str> {
        let mut given = self.mad.hca_options();
        if self.window.is_some() {
            given.push("--window");
        }
        given
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum TargetArg {
    Sim,
    Mad,
    Opensm,
}

/// The plan file at `path`; one that is not a plan is refused input, its problems findings.
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

/// Runs `weft apply`.
pub fn run(args: Args, quiet: bool) -> Result<ExitCode, Fatal> {
    match args.target {
        TargetArg::Opensm => opensm::hand_off(&args, quiet),
        TargetArg::Sim => {
            let (mut sim, journal_fault) = target::sim(&args)?;
            let settle = std::time::Duration::from_millis(args.settle_ms.unwrap_or(0));
            go(&args, &mut sim, true, settle, journal_fault, quiet)
        }
        TargetArg::Mad => {
            let (mut mad, settle) = target::mad(&args)?;
            go(&args, &mut mad, false, settle, None, quiet)
        }
    }
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
        .map_err(|e| Fatal::failed(e.code(), format!("lock directory: {e}")))?;
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
            Err(e) => Err(refused(&e, Some(j))),
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
        max_outage_pairs: if args.zero_outage {
            Some(0)
        } else {
            args.max_outage_pairs
        },
        part: ApplyOptions::PART,
    };
    if (args.zero_outage || args.max_outage_pairs.is_some()) && !plan_path.is_dir() {
        return Err(Fatal::Run(
            "--zero-outage and --max-outage-pairs bound the plan `weft apply` works out for a \
             build directory; a plan file's outage was decided by `weft plan` (plan it again \
             with the bound)"
                .into(),
        ));
    }
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
                Err(e) => Err(refused(&e, None)),
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
            Err(e) => Err(refused(&e, Some(&journal))),
        };
    }
    let plan = read_plan(plan_path)?;
    if args.dry_run {
        return match apply::dry_run(&mut t, apply::What::Plan(&plan), &opts) {
            Ok((plan, smps)) => dry(&plan, &smps),
            Err(e) => Err(refused(&e, None)),
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
        Err(e) => Err(refused(&e, Some(&journal))),
    }
}

/// An apply (or recovery) that did not start, or crashed, as a finding under the error's code:
/// refused input (exit 1) when it refused a plan or a fabric it checked, else it could not run
/// (exit 2); after a crash the finding's help names the journal to recover.
fn refused(e: &ApplyError, journal: Option<&Path>) -> Fatal {
    let mut found = crate::findings::of_input(e.code(), None, e.to_string());
    if let (ApplyError::Crashed(_), Some(j)) = (e, journal) {
        found.help = Some(format!(
            "the journal is left for `weft apply --recover {}`",
            j.display()
        ));
    }
    if e.could_not_run() {
        Fatal::Failed(vec![found])
    } else {
        Fatal::Input(vec![found], None)
    }
}

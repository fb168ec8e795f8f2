//! `weft watch --target mad`: the fabric kept proven. A light sweep every `--interval` (one
//! SwitchInfo per switch, the local PortInfo), a heavy sweep of what changed and a full one
//! every `--full-every` sweeps ([`weft_deploy::watch`]); the state read proven as `weft
//! audit` proves it (the explicit engine, the default properties); against `--state` (a
//! `state.json` or a build directory) the difference and a repair plan written
//! (`--repair plan`, the default) or applied through `weft apply`'s transaction (`--repair
//! apply`); against `--design` the cabling as `weft diff` reports it. Events are lines
//! (`--format human|json`); `--metrics ADDR` serves the figures (`metrics.rs`). One watch per
//! SM port: a lock of its own beside `weft apply`'s.

mod backoff;
mod evaluate;
mod metrics;

use crate::audit::MadArgs;
use crate::findings::{self, Finding};
use crate::Fatal;
use clap::ValueEnum;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use weft_deploy::watch::{Change, Sweep, Watcher};
use weft_deploy::{Mad, TransportExt as _};
use weft_fabric::{FabricState, ValidState};
use weft_verifier::{Outcome, Property, Report};

const EXIT_CODES: &str = "Exit codes with --once (a discovery, a full read and one light sweep):\n  0  every property proven; no difference from --state or --design\n  1  a property refuted, or a difference (tables, cables, nodes, cabling)\n  2  could not run, or could not prove: a read the fabric did not answer (unknown)\n  130 interrupted\nWithout --once the watch runs until SIGINT or SIGTERM (it stops after the sweep under way) and exits 0, or 2 when it could not start.";

/// `weft watch` arguments.
#[derive(clap::Args)]
#[command(after_long_help = EXIT_CODES)]
pub struct Args {
    /// Where to read: `mad` (real SMPs through libibmad on the local HCA port).
    #[arg(long)]
    target: WatchTarget,
    #[command(flatten)]
    mad: MadArgs,
    /// Time between light sweeps (`500ms`, `10s`).
    #[arg(long, default_value = "10s")]
    interval: String,
    /// Every N-th sweep reads every table (an LFT block written by someone else shows in no
    /// SwitchInfo; on 11 664 nodes that read is about 2.8 M SMPs); 0: never.
    #[arg(long, default_value_t = 60)]
    full_every: u64,
    /// One read (discovery, every table, one light sweep), its verdict and differences, then
    /// exit (see the exit codes below).
    #[arg(long)]
    once: bool,
    /// Stop after this many sweeps.
    #[arg(long)]
    sweeps: Option<u64>,
    /// The desired state (a `state.json` or a `weft build` directory): the differences and a
    /// repair plan.
    #[arg(long)]
    state: Option<PathBuf>,
    /// The design the cabling should match (as `weft diff` takes it).
    #[arg(long)]
    design: Option<PathBuf>,
    /// With `--design`: how the fabric's nodes are matched to the design's.
    #[arg(
        long = "match",
        value_enum,
        default_value = "auto",
        requires = "design"
    )]
    matching: crate::diff::MatchArg,
    /// With `--state`: `plan` writes the repair plan (`--plan-file`); `apply` also applies it
    /// through `weft apply`'s transaction, once per change.
    #[arg(long, value_enum, default_value = "plan", requires = "state")]
    repair: Repair,
    /// Where the repair plan is written.
    #[arg(long, default_value = "watch-repair.plan")]
    plan_file: PathBuf,
    /// `--repair apply`: the journal.
    #[arg(long, default_value = "watch-repair.journal")]
    journal: PathBuf,
    /// Directory for lock files (one per SM port); default as `weft apply`'s.
    #[arg(long)]
    lock_dir: Option<PathBuf>,
    /// Sweeps after a repair is applied within which a new difference is another writer's:
    /// the watch backs off (says so, applies nothing) until the fabric is steady that long.
    #[arg(long, default_value_t = 3)]
    backoff: u64,
    /// Serve metrics in the Prometheus text format on this address (`127.0.0.1:9464`;
    /// port 0: any free port, said in the first event).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Events: `human` lines or `json` lines (one object per sweep and per finding).
    #[arg(long, value_enum, default_value = "human")]
    format: EventFormat,
    /// The fabric's name in reports.
    #[arg(long, default_value = "audited")]
    name: String,
}

impl Args {
    /// The format refusals are shown in.
    pub fn findings_format(&self) -> crate::findings::Format {
        match self.format {
            EventFormat::Human => crate::findings::Format::Human,
            EventFormat::Json => crate::findings::Format::Json,
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum WatchTarget {
    Mad,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Repair {
    Plan,
    Apply,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum EventFormat {
    Human,
    Json,
}

/// The verdict on the state last read: per property, proven, refuted or unknown (why).
#[derive(Clone, Debug, Default)]
struct Verdict {
    outcomes: Vec<(Property, Outcome)>,
    findings: Vec<Finding>,
}

impl Verdict {
    /// Every property unknown, for `why`: the properties of routes and every property the
    /// verdict `before` judged (a partial read proves nothing, `isolated` included).
    fn unknown(why: &str, findings: Vec<Finding>, before: &Verdict) -> Verdict {
        let mut props: Vec<Property> = Property::ROUTES.to_vec();
        for (p, _) in &before.outcomes {
            if !props.contains(p) {
                props.push(*p);
            }
        }
        props.sort_by_key(|p| Property::ALL.iter().position(|q| q == p));
        Verdict {
            outcomes: props
                .into_iter()
                .map(|p| (p, Outcome::Unknown(why.to_owned())))
                .collect(),
            findings,
        }
    }

    /// `Some(true)`: all proven; `Some(false)`: one refuted; `None`: else.
    fn proven(&self) -> Option<bool> {
        if self.outcomes.iter().any(|(_, o)| *o == Outcome::Violated) {
            Some(false)
        } else if self.outcomes.iter().all(|(_, o)| *o == Outcome::Proven) {
            Some(true)
        } else {
            None
        }
    }

    fn json(&self) -> Value {
        self.outcomes
            .iter()
            .map(|(p, o)| {
                (
                    p.name().to_owned(),
                    Value::String(outcome_name(o).to_owned()),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    fn human(&self) -> String {
        self.outcomes
            .iter()
            .map(|(p, o)| match o {
                Outcome::Unknown(why) if !why.is_empty() => {
                    format!("{} unknown ({why})", p.name())
                }
                _ => format!("{} {}", p.name(), outcome_name(o)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn outcome_name(o: &Outcome) -> &'static str {
    match o {
        Outcome::Proven => "proven",
        Outcome::Violated => "refuted",
        Outcome::Unknown(_) => "unknown",
    }
}

/// Proves `state` as `weft audit` does (the explicit engine, the default properties).
fn prove(state: &FabricState, artifact: &str, before: &Verdict) -> Verdict {
    let valid = match ValidState::new(state.clone()) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::unknown(
                "the fabric as read is not a state weft can verify",
                findings::of_state_errors(&e, artifact),
                before,
            )
        }
    };
    let opts = weft_verifier::Options {
        properties: Property::defaults(&valid),
        certificate: false,
        max_listed: 20,
        ..weft_verifier::Options::default()
    };
    let report: Report = weft_verifier::verify(&valid, &opts);
    let found = findings::of_report(findings::Violations::of(&report), artifact, None);
    Verdict {
        outcomes: opts
            .properties
            .iter()
            .map(|&p| (p, report.verdict.outcome(p).clone()))
            .collect(),
        findings: found,
    }
}

/// Time now, UTC, to the millisecond.
fn now() -> String {
    weft_deploy::dftree::utc::utc_of(SystemTime::now())
}

/// Parses `--interval` (10 ms to a day).
fn interval(text: &str) -> Result<Duration, String> {
    weft_fabric::input::duration_ns(text)
        .filter(|ns| (1e7..=8.64e13).contains(ns))
        .map(|ns| Duration::from_nanos(ns as u64))
        .ok_or_else(|| {
            format!("--interval `{text}`: give a duration from 10ms to 1 day (`500ms`, `10s`)")
        })
}

/// Runs `weft watch`.
pub fn run(args: Args, color: crate::ColorChoice, _quiet: bool) -> Result<ExitCode, Fatal> {
    let WatchTarget::Mad = args.target;
    let every = interval(&args.interval).map_err(Fatal::Run)?;
    let desired = match &args.state {
        Some(p) if p.is_dir() => Some(crate::plan::load_state(
            &p.join(weft_formats::build_dir::STATE),
        )?),
        Some(p) => Some(crate::plan::load_state(p)?),
        None => None,
    };
    let design = match &args.design {
        Some(p) => Some(crate::diff::load_design(p, color)?),
        None => None,
    };
    let mut mad = Mad::open(&args.mad.options()).map_err(|e| Fatal::coded(&e))?;
    let lock_dir =
        weft_deploy::files::run_dir(args.lock_dir.as_deref()).map_err(|e| Fatal::coded(&e))?;
    let local = mad
        .node_info(&weft_deploy::DrPath::local())
        .map_err(|e| Fatal::coded(&e))?;
    let _lock = weft_deploy::files::lock(
        &lock_dir,
        &format!(
            "weft-watch-{:016x}-{}.lock",
            local.node_guid, local.local_port
        ),
    )
    .map_err(|e| Fatal::coded(&e))?;
    let metrics = metrics::Metrics::default();
    let mut w = Events::new(args.format);
    if let Some(addr) = &args.metrics {
        let bound = metrics.serve(addr).map_err(Fatal::Run)?;
        w.emit(
            &format!("metrics on http://{bound}/metrics"),
            json!({"event": "metrics", "time": now(), "address": bound.to_string()}),
        )?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _interrupt = crate::term::stop_on_interrupt_saying(
        stop.clone(),
        "weft: interrupted: stopping after this sweep (interrupt again to stop at once)",
    );
    crate::term::phase("reading the fabric");
    let t0 = Instant::now();
    let (mut watcher, begun) =
        Watcher::begin(&mut mad, &args.name).map_err(|e| Fatal::coded(&e))?;
    crate::term::clear();
    let artifact = format!("the fabric on {}", mad.device());
    let mut run = Run {
        args: &args,
        desired,
        design,
        artifact,
        metrics,
        lock_dir,
        sweep: 0,
        verdict: Verdict::default(),
        repairs: backoff::Repairs::default(),
        reference: None,
        force_full: false,
        verdict_of: ReadAt {
            sweep: 0,
            full: true,
            time: SystemTime::now(),
        },
        last_full: None,
    };
    let first = run.evaluate(
        &watcher,
        &mut mad,
        &mut w,
        Read::First {
            smps: begun.smps(),
            t: t0.elapsed(),
            unanswered: begun
                .changes
                .iter()
                .filter(|c| matches!(c, Change::Unanswered { .. }))
                .count(),
        },
    )?;
    if args.once {
        if !run.force_full {
            return Ok(ExitCode::from(first));
        }
        // A repair was applied: read back, and the verdict on what was read is the exit.
        let back = run.sweep(&mut watcher, &mut mad, &mut w, true)?;
        return Ok(ExitCode::from(back));
    }
    let mut next = Instant::now() + every;
    loop {
        if stop.load(Ordering::SeqCst) || args.sweeps.is_some_and(|n| run.sweep >= n) {
            break;
        }
        crate::term::phase("waiting for the next sweep");
        while Instant::now() < next && !stop.load(Ordering::SeqCst) {
            std::thread::sleep((next - Instant::now()).min(Duration::from_millis(50)));
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        next = Instant::now() + every;
        crate::term::clear();
        let full = std::mem::take(&mut run.force_full)
            || (args.full_every > 0 && (run.sweep + 1).is_multiple_of(args.full_every));
        run.sweep(&mut watcher, &mut mad, &mut w, full)?;
    }
    w.emit(
        &format!("{} stopped after sweep {}", now(), run.sweep),
        json!({"event": "stop", "time": now(), "sweep": run.sweep}),
    )?;
    Ok(ExitCode::SUCCESS)
}

impl Run<'_> {
    /// A sweep (`full`: of every table) and what it makes of it; the exit status `--once`
    /// gives.
    fn sweep(
        &mut self,
        watcher: &mut Watcher,
        mad: &mut Mad,
        events: &mut Events,
        full: bool,
    ) -> Result<u8, Fatal> {
        let t = Instant::now();
        let s = watcher.sweep(mad, full);
        let read = Read::Sweep {
            s: Box::new(s),
            t: t.elapsed(),
        };
        self.evaluate(watcher, mad, events, read)
    }
}

/// What a sweep read.
enum Read {
    /// The first read (discovery, every table, a light sweep); `unanswered`: the reads of
    /// its light sweep the fabric did not answer.
    First {
        smps: usize,
        t: Duration,
        unanswered: usize,
    },
    /// A sweep.
    Sweep { s: Box<Sweep>, t: Duration },
}

/// Events, as lines.
struct Events {
    format: EventFormat,
}

impl Events {
    fn new(format: EventFormat) -> Events {
        Events { format }
    }

    /// One event: `human` for people, `v` as a JSON line.
    fn emit(&mut self, human: &str, v: Value) -> Result<(), Fatal> {
        let line = match self.format {
            EventFormat::Human => format!("{human}\n"),
            EventFormat::Json => serde_json::to_string(&v)? + "\n",
        };
        crate::out(None, &line)
    }
}

/// The watch between sweeps.
struct Run<'a> {
    args: &'a Args,
    desired: Option<ValidState>,
    design: Option<crate::diff::Design>,
    artifact: String,
    metrics: metrics::Metrics,
    lock_dir: PathBuf,
    sweep: u64,
    verdict: Verdict,
    /// The repairs tried, and when to back off.
    repairs: backoff::Repairs,
    /// Without `--state`: the first state read, what later ones are compared with.
    reference: Option<FabricState>,
    /// A repair was applied: the next sweep reads every table back.
    force_full: bool,
    /// The read the verdict is on.
    verdict_of: ReadAt,
    /// The last read of every table that every node answered.
    last_full: Option<ReadAt>,
}

/// A read: at which sweep (0: the first), whether of every table, when.
#[derive(Clone, Copy, Debug)]
struct ReadAt {
    sweep: u64,
    full: bool,
    time: SystemTime,
}

impl ReadAt {
    fn json(&self) -> Value {
        json!({"sweep": self.sweep, "full": self.full, "time": weft_deploy::dftree::utc::utc_of(self.time)})
    }

    /// Seconds since the Unix epoch.
    fn unix(&self) -> f64 {
        self.time
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown verdict names every property the verdict before it judged: `isolated`
    /// once kept its last word (maybe proven) through a partial read.
    #[test]
    fn an_unknown_verdict_covers_every_property_judged_before() {
        let before = Verdict {
            outcomes: vec![
                (Property::DeadlockFree, Outcome::Proven),
                (Property::Connected, Outcome::Proven),
                (Property::MulticastConnected, Outcome::Proven),
                (Property::Isolated, Outcome::Proven),
            ],
            findings: Vec::new(),
        };
        let v = Verdict::unknown("no answer", Vec::new(), &before);
        assert_eq!(
            v.json(),
            json!({"deadlock_free": "unknown", "connected": "unknown", "isolated": "unknown", "multicast_connected": "unknown"})
        );
        assert_eq!(
            v.outcomes.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            [
                Property::DeadlockFree,
                Property::Connected,
                Property::Isolated,
                Property::MulticastConnected
            ]
        );
        assert_eq!(v.proven(), None);
        let first = Verdict::unknown("no answer", Vec::new(), &Verdict::default());
        assert_eq!(first.outcomes.len(), 2, "the properties of routes");
    }
}

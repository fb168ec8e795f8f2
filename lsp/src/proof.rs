//! Routing and the proof, on save, in a worker thread: one job at a time, each tagged with
//! its document's generation. A job whose document changed since it was queued is dropped,
//! and one whose document changes while it runs is abandoned between its phases (compile,
//! route, prove) and its result thrown away: cancellation by generation, since the passes
//! themselves are not interruptible. The worker reports through a channel the server's loop
//! reads, never to the client directly, so a client that leaves while a proof runs is not
//! kept waiting for it.

use crate::analysis::{self, BuildFacts};
use crate::text::LineIndex;
use crossbeam_channel::{Receiver, Sender};
use lsp_types::{Diagnostic as LspDiagnostic, Url};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use weft_compiler::diagnostic::Severity;
use weft_compiler::Compilation;
use weft_verifier::{Outcome, Report};

/// The latest generation of every document, shared by the server and the worker.
pub(crate) type Generations = Arc<Mutex<BTreeMap<Url, u64>>>;

/// A proof to run.
pub(crate) struct Job {
    pub(crate) uri: Url,
    pub(crate) generation: u64,
    pub(crate) text: String,
    /// The progress token the client was asked to create.
    pub(crate) token: String,
}

/// What the worker tells the server.
pub(crate) enum Event {
    /// A phase started (`routing`, `proving`) or the job ended (`None`: done or cancelled).
    Progress {
        token: String,
        phase: Option<&'static str>,
        cancelled: bool,
    },
    /// The job's findings.
    Done {
        uri: Url,
        generation: u64,
        diagnostics: Vec<LspDiagnostic>,
        facts: Option<BuildFacts>,
    },
}

/// Whether `job` is still about the newest text.
fn current(generations: &Generations, job: &Job) -> bool {
    generations
        .lock()
        .map(|g| g.get(&job.uri) == Some(&job.generation))
        .unwrap_or(false)
}

/// Runs jobs until the server drops its sender (or stops listening).
pub(crate) fn worker(jobs: &Receiver<Job>, events: &Sender<Event>, generations: &Generations) {
    for job in jobs {
        let progress = |phase: Option<&'static str>, cancelled: bool| {
            events
                .send(Event::Progress {
                    token: job.token.clone(),
                    phase,
                    cancelled,
                })
                .is_ok()
        };
        let still = || current(generations, &job);
        if !still() {
            progress(None, true);
            continue;
        }
        let result = run(&job, &progress, &still);
        let cancelled = result.is_none();
        if !progress(None, cancelled) {
            return;
        }
        if let Some((diagnostics, facts)) = result {
            let done = Event::Done {
                uri: job.uri.clone(),
                generation: job.generation,
                diagnostics,
                facts,
            };
            if events.send(done).is_err() {
                return;
            }
        }
    }
}

type Found = (Vec<LspDiagnostic>, Option<BuildFacts>);

/// Compiles, routes and proves `job`; `None` when it went stale on the way.
fn run(
    job: &Job,
    progress: &dyn Fn(Option<&'static str>, bool) -> bool,
    still: &dyn Fn() -> bool,
) -> Option<Found> {
    let name = analysis::source_name(&job.uri);
    let host = analysis::host(&job.uri);
    let c = weft_compiler::check(&name, &job.text, host.as_ref());
    if c.has_errors() {
        // The diagnostics on change already say what is wrong.
        return Some((Vec::new(), None));
    }
    if !still() || !progress(Some("routing"), false) {
        return None;
    }
    let index = LineIndex::new(&job.text);
    let built = match weft_driver::route(&c, &weft_driver::quietly)? {
        Ok(b) => b,
        Err(diags) => {
            let d = diags
                .iter()
                .map(|d| analysis::convert(&job.text, &index, &c, d))
                .collect();
            return Some((d, None));
        }
    };
    let mut facts = BuildFacts {
        engine: format!("{}: {}", built.engine, built.why),
        lids: BTreeMap::new(),
    };
    for (id, ports) in &built.state.lids.base {
        if let Some(lid) = ports.values().next() {
            let n = built.state.fabric.node(*id);
            facts.lids.insert(n.name().to_owned(), lid.0);
        }
    }
    if !still() || !progress(Some("proving"), false) {
        return None;
    }
    let proof = weft_driver::Proof {
        certificate: false,
        max_listed: 20,
    };
    let report = weft_driver::prove(&built, proof, &weft_driver::quietly);
    if !still() {
        return None;
    }
    Some((placed(&job.text, &index, &c, &report), Some(facts)))
}

/// The proof's violations, each at the declaration of the node it names, as `weft check`
/// places them (the `fabric` item when that node was declared elsewhere, in the standard
/// library or an import).
fn placed(text: &str, index: &LineIndex, c: &Compilation, r: &Report) -> Vec<LspDiagnostic> {
    let Some(e) = &c.elaborated else {
        return Vec::new();
    };
    let at = |id: Option<weft_fabric::NodeId>| {
        let o = id.map_or(e.fabric_origin, |id| e.origin(id));
        let o = if o.source == c.main {
            o
        } else {
            e.fabric_origin
        };
        let span = if o.source == c.main {
            o.span
        } else {
            Default::default()
        };
        index.range(text, span.start as usize, span.end as usize)
    };
    let mut out = Vec::new();
    for l in &r.credit_loops {
        let names: Vec<String> = l
            .channels
            .iter()
            .take(6)
            .map(|ch| format!("{}/{} VL {}", ch.node.name, ch.port, ch.vl))
            .collect();
        let msg = format!(
            "credit loop through {} channels: {}{}",
            l.channels.len(),
            names.join(", "),
            if l.channels.len() > 6 { ", …" } else { "" }
        );
        let id = l.channels.first().map(|ch| ch.node.id);
        let code = weft_verifier::Property::DeadlockFree.code();
        out.push(analysis::diagnostic(at(id), Severity::Error, code, msg));
    }
    for p in &r.failures {
        let w = p.witnesses.first();
        let msg = format!(
            "{} route(s) fail ({:?}){}",
            p.routes,
            p.reason,
            w.map_or(String::new(), |w| format!(", e.g. at `{}`", w.at.name))
        );
        let code = weft_verifier::Property::Connected.code();
        out.push(analysis::diagnostic(
            at(w.map(|w| w.at.id)),
            Severity::Error,
            code,
            msg,
        ));
    }
    for &p in &r.properties {
        let (msg, sev) = match r.outcome(p) {
            Outcome::Proven => continue,
            Outcome::Violated
                if matches!(
                    p,
                    weft_verifier::Property::DeadlockFree | weft_verifier::Property::Connected
                ) =>
            {
                continue
            }
            Outcome::Violated => (format!("{} is violated", p.noun()), Severity::Error),
            Outcome::Unknown(why) => (
                format!("{} is not proven: {why}", p.noun()),
                Severity::Warning,
            ),
        };
        out.push(analysis::diagnostic(at(None), sev, p.code(), msg));
    }
    out
}

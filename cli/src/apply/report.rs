//! What `weft apply` says: the SMPs a dry run lists, and the report of an apply or recovery
//! that ran — which state the fabric ends in, and the exit status that goes with it.

use crate::{out, Fatal};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use weft_deploy::apply::{Final, Report};
use weft_formats::plan::Plan;

/// Writes `text` on stderr, after clearing the progress line.
pub(super) fn eprint_text(text: &str) {
    use std::io::Write as _;
    crate::term::clear();
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// The SMPs a dry run lists.
pub(super) fn dry(
    plan: &Plan,
    smps: &[(usize, weft_deploy::Target, String)],
) -> Result<ExitCode, Fatal> {
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

/// The report; exit 0 when the fabric ended where it was meant to (`ok`), 1 when it was rolled
/// back, 2 when it holds neither state.
pub(super) fn report(
    r: &Report,
    quiet: bool,
    journal: Option<&Path>,
    ok: bool,
) -> Result<ExitCode, Fatal> {
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
    for o in &r.outages {
        let _ = writeln!(
            text,
            "outage: {} destination(s) dropped by step {} were out of service for {:.1} ms (from its first Set to the read-back of step {}, which restored them)",
            o.destinations,
            o.step + 1,
            o.micros as f64 / 1000.0,
            o.restored + 1
        );
    }
    if code == 0 && quiet && r.notes.is_empty() && r.outages.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    out(None, &text)?;
    Ok(ExitCode::from(code))
}

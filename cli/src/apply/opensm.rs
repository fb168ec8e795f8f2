//! `weft apply BUILD_DIR --target opensm`: the hand-off to a running OpenSM — a proven build's
//! files written over the ones OpenSM's configuration names, OpenSM signalled to read them and
//! sweep, and (with `--opensm-log`) its sweep waited for.

use super::Args;
use crate::{out, Fatal};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use weft_fabric::build_dir;

/// The hand-off to a running OpenSM.
pub(super) fn hand_off(args: &Args, quiet: bool) -> Result<ExitCode, Fatal> {
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
    other.extend(args.mad_only_options());
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
    .map_err(|e| Fatal::failed(e.code(), e.to_string()))?;
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
        .map_err(|e| Fatal::failed(e.code(), format!("the files are written, but {e}")))?;
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

//! `weft apply BUILD_DIR --target opensm`: the hand-off to a running OpenSM — a proven build's
//! files written over the ones OpenSM's configuration names, OpenSM signalled to read them and
//! sweep, and (with `--opensm-log`) its sweep waited for, then what OpenSM's own multicast
//! routing programmed (OpenSM routes multicast itself, whatever unicast engine it runs) read
//! over SMPs through the first local HCA port and reported.

use super::Args;
use crate::{out, Fatal};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use weft_fabric::code::Coded as _;
use weft_formats::build_dir;

/// The hand-off to a running OpenSM.
pub(super) fn hand_off(args: &Args, quiet: bool) -> Result<ExitCode, Fatal> {
    let Some(dir) = args.plan.as_deref().filter(|p| p.is_dir()) else {
        // A plan file whose steps set SL→VL or VL arbitration tables: OpenSM programs those
        // from its own configuration, never from a plan's writes; said under its own code so
        // that no such write is taken for handed over.
        let qos = args
            .plan
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| weft_formats::plan::Plan::from_json(&t).ok())
            .map_or(0, |p| {
                p.steps
                    .iter()
                    .flat_map(|s| &s.writes)
                    .filter(|w| {
                        matches!(
                            w,
                            weft_formats::plan::SmpWrite::Sl2vl { .. }
                                | weft_formats::plan::SmpWrite::VlArb { .. }
                        )
                    })
                    .count()
            });
        if qos > 0 {
            return Err(Fatal::failed(
                "weft::deploy::not_built_qos",
                format!(
                    "not built yet: handing a plan's SL→VL and VL arbitration writes ({qos} in \
                     this plan) to OpenSM, which programs those tables from its own \
                     configuration; nothing was written. Apply the plan with --target sim or \
                     mad, or hand OpenSM the build directory (its opensm.conf carries the \
                     tables)"
                ),
            ));
        }
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
        (args.zero_outage, "--zero-outage"),
        (args.max_outage_pairs.is_some(), "--max-outage-pairs"),
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
    .map_err(|e| Fatal::coded(&e))?;
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
        let _ = writeln!(text, "{}", opensm_multicast());
    }
    if !quiet {
        out(None, &text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What OpenSM's multicast routing programmed, read over SMPs through the first local HCA
/// port (every switch's MFT): the MLIDs forwarded, on how many switches, and the entries in
/// all; or why it could not be read. Membership is the SA's (`saquery -m`), not on the fabric.
fn opensm_multicast() -> String {
    let read = weft_deploy::Mad::open(&weft_deploy::MadOptions::default())
        .map_err(|e| e.to_string())
        .and_then(|mut mad| {
            weft_deploy::audit::read_multicast(&mut mad).map_err(|e| e.to_string())
        });
    let (mfts, smps) = match read {
        Ok(r) => r,
        Err(e) => return format!("OpenSM's multicast tables were not read: {e}"),
    };
    let mut per_mlid: std::collections::BTreeMap<weft_fabric::Mlid, usize> =
        std::collections::BTreeMap::new();
    for t in mfts.values() {
        for (m, _) in t.entries() {
            *per_mlid.entry(m).or_default() += 1;
        }
    }
    if per_mlid.is_empty() {
        return format!(
            "OpenSM's multicast routing: no switch's MFT holds an entry ({smps} SMPs; OpenSM \
             programs a group's tree once ports join it)"
        );
    }
    let entries: usize = per_mlid.values().sum();
    let shown: Vec<String> = per_mlid
        .iter()
        .take(8)
        .map(|(m, n)| format!("{m} on {n}"))
        .collect();
    let more = per_mlid.len().saturating_sub(shown.len());
    format!(
        "OpenSM's multicast routing: {} MLID(s) forwarded ({}{}), {entries} MFT entries on {} \
         switch(es) ({smps} SMPs; `weft audit --target mad` proves them with the unicast routes)",
        per_mlid.len(),
        shown.join(", "),
        if more > 0 {
            format!(", {more} more")
        } else {
            String::new()
        },
        mfts.len()
    )
}

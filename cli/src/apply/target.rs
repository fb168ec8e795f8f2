//! The fabric `weft apply` writes through: the `sim` target (an in-process fabric loaded from
//! `--fabric`, its SM on `--sm`, with the faults `--inject` names) or the `mad` target (libibmad
//! on the local HCA port), each with its settling time; and the refusal of options a target
//! does not take.

use super::Args;
use crate::Fatal;
use std::time::Duration;
use weft_deploy::journal::JournalFault;
use weft_deploy::sim::{default_sm_port, named_sm_port, Injected, SimFabric};
use weft_deploy::Mad;
use weft_fabric::code::Coded as _;
use weft_fabric::{PortRef, ValidState};

/// The simulated fabric `--fabric` holds, its SM on `--sm`, with every `--inject`ed SMP fault;
/// the journal fault injected, if any.
pub(super) fn sim(args: &Args) -> Result<(SimFabric, Option<JournalFault>), Fatal> {
    let hca = args.mad_only_options();
    if !hca.is_empty() {
        return Err(Fatal::Run(format!(
            "{}: only for --target mad",
            hca.join(", ")
        )));
    }
    refuse_opensm_options(args, "sim")?;
    let path = args.fabric.as_deref().ok_or_else(|| {
        Fatal::Run(
            "--target sim needs --fabric STATE.json: the state the simulated fabric holds".into(),
        )
    })?;
    let state = crate::plan::load_state(path)?;
    let sm = sm_port(&state, args.sm.as_deref())?;
    let mut sim = SimFabric::new(&state, sm).map_err(|e| Fatal::coded(&e))?;
    let mut journal_fault = None;
    for f in &args.inject {
        match parse_fault(f)? {
            Injected::Smp(f) => sim.inject(f),
            Injected::Journal(f) => journal_fault = Some(f),
        }
    }
    Ok((sim, journal_fault))
}

/// The local HCA port through libibmad, as the options say; and how long to let SMPs another
/// writer sent land (`--settle-ms`, by default twice the SMP timeout times the tries).
pub(super) fn mad(args: &Args) -> Result<(Mad, Duration), Fatal> {
    if !args.inject.is_empty() || args.fabric.is_some() || args.sm.is_some() {
        return Err(Fatal::Run(
            "--fabric, --sm and --inject are for --target sim".into(),
        ));
    }
    refuse_opensm_options(args, "mad")?;
    let mut options = args.mad.options();
    if let Some(w) = args.window {
        options.window = w;
    }
    // Long enough for an SMP another writer sent to land (or time out on every try).
    let settle = Duration::from_millis(
        args.settle_ms
            .unwrap_or_else(|| 2 * u64::from(options.timeout_ms) * u64::from(options.retries + 1)),
    );
    let mad = Mad::open(&options).map_err(|e| Fatal::coded(&e))?;
    Ok((mad, settle))
}

fn parse_fault(s: &str) -> Result<Injected, Fatal> {
    s.parse().map_err(|e: weft_deploy::sim::FaultSyntax| {
        Fatal::failed(e.code(), format!("--inject `{s}`: {e}"))
    })
}

/// The SM's port in a simulated fabric: the one `--sm` names, else the first HCA port on a
/// live link.
fn sm_port(state: &ValidState, sm: Option<&str>) -> Result<PortRef, Fatal> {
    match sm {
        Some(text) => named_sm_port(&state.fabric, text)
            .map_err(|e| Fatal::failed(e.code(), format!("--sm `{text}`: {e}"))),
        None => default_sm_port(&state.fabric).ok_or_else(|| {
            Fatal::Run("the fabric has no HCA port on a live link for the SM".into())
        }),
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

//! `weft plan --from CURRENT/state.json DESIRED`: the ordered, proven steps of SMP writes from
//! the state a fabric runs to a desired one (a `.weft` file, compiled, or a `state.json`),
//! like a dry run: per step the switches, blocks, SMPs and proof; the totals beside what a full
//! reconfiguration would send; the sources whose routes change. `-o plan.json` writes the
//! plan for `weft apply`, with the fingerprint of the fabric it applies to.

use crate::{out, ColorChoice, Fatal};
use clap::ValueEnum;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use weft_fabric::ValidState;
use weft_formats::state_json::FromJson;
use weft_formats::state_json::ToJson;
use weft_plan::{Mode, Options, PlanError, Planned};
use weft_verifier::transition::StepCheck;
use weft_verifier::Outcome;

/// `weft plan` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// The desired fabric: a `.weft` file (compiled and proven) or a `state.json`.
    desired: PathBuf,
    /// The state the fabric runs now (a `state.json`, e.g. from `weft build`).
    #[arg(long)]
    from: PathBuf,
    /// Run the steps on the current fabric: links and nodes the desired state takes down stay
    /// up until the plan has landed (every route must arrive in every state). Without it the
    /// steps run on the desired fabric, as after a fault.
    #[arg(long)]
    drain: bool,
    /// Lead to the desired state's tables exactly (the rebalance). Without it, when links or
    /// nodes went down or up, the plan is a minimal repair: only the entries the change forces
    /// change, every other entry kept, when that is proven (else a fallback, named).
    #[arg(long)]
    full: bool,
    /// Write the state the plan leads to (a `state.json`) here.
    #[arg(long)]
    write_state: Option<PathBuf>,
    /// Required pairs: all (every end-node port and switch) or hca-to-hca.
    #[arg(long, default_value = "all", value_parser = crate::args::scope())]
    scope: weft_verifier::Scope,
    /// Output format.
    #[arg(long, default_value = "human")]
    pub(crate) format: PlanFormat,
    /// Write the plan file (for `weft apply`) here; with `--format html`, the page.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Hosts to notify listed at most (all are counted).
    #[arg(long, default_value_t = 20)]
    max_listed: usize,
    /// Refuse a plan whose break-before-make outage leaves more than N (source, destination)
    /// routes failing at its worst step. Without it any outage is accepted (and stated).
    #[arg(long, value_name = "N", conflicts_with = "zero_outage")]
    max_outage_pairs: Option<u64>,
    /// Only a plan that keeps every route arriving in every mix of every step (no
    /// break-before-make); otherwise no plan.
    #[arg(long)]
    zero_outage: bool,
    /// The rate the outage's duration is estimated at, in SMPs per second (measure the
    /// target's: `weft apply` reports each drop's real duration).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_SMP_RATE)]
    smp_rate: u64,
}

/// SMPs per second the outage estimate assumes unless told: a round figure, not a
/// measurement (`weft apply` measures each drop on the fabric it writes).
const DEFAULT_SMP_RATE: u64 = 1000;

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum PlanFormat {
    Human,
    Markdown,
    Json,
    /// One self-contained page: the steps as a timeline on the fabric drawn; `-o` names the
    /// page (no plan file is written).
    Html,
}

impl PlanFormat {
    /// The format refused input is shown in (Markdown's is the human text).
    pub(crate) fn findings(self) -> crate::findings::Format {
        match self {
            PlanFormat::Json => crate::findings::Format::Json,
            PlanFormat::Human | PlanFormat::Markdown | PlanFormat::Html => {
                crate::findings::Format::Human
            }
        }
    }
}

pub(crate) fn load_state(path: &Path) -> Result<ValidState, Fatal> {
    let text = weft_driver::input::read_regular(path, weft_driver::input::MAX_DUMP_BYTES)
        .map_err(|e| Fatal::Run(format!("cannot read `{}`: {e}", path.display())))?;
    ValidState::from_json(&text).map_err(|e| {
        Fatal::Input(
            crate::findings::of_state_errors(&e, &path.display().to_string()),
            None,
        )
    })
}

/// Runs `weft plan`.
pub fn run(args: Args, color: ColorChoice, quiet: bool) -> Result<ExitCode, Fatal> {
    crate::term::phase("reading");
    let old = load_state(&args.from)?;
    let new = if args.desired.extension().is_some_and(|e| e == "json") {
        load_state(&args.desired)?
    } else {
        crate::compile_and_build(&args.desired, color)?.state
    };
    let opts = Options {
        full: args.full,
        mode: if args.drain { Mode::Drain } else { Mode::Fault },
        scope: args.scope,
        fill_at_once: false,
        max_outage_pairs: if args.zero_outage {
            Some(0)
        } else {
            args.max_outage_pairs
        },
    };
    let rate = args.smp_rate.max(1);
    crate::term::phase("planning");
    let planned = match weft_plan::plan(&old, &new, &opts) {
        Ok(p) => p,
        Err(e) => return refused(&e, args.format),
    };
    let html = args.format == PlanFormat::Html;
    if let Some(p) = args.output.as_ref().filter(|_| !html) {
        crate::output::write_file(p, planned.plan.to_json().as_bytes()).map_err(Fatal::Run)?;
    }
    if let Some(p) = &args.write_state {
        crate::output::write_file(p, planned.end.to_json().as_bytes()).map_err(Fatal::Run)?;
    }
    let traffic = traffic(&old, &new);
    let text = match args.format {
        PlanFormat::Human if quiet => String::new(),
        PlanFormat::Human => {
            human(&planned, args.output.as_deref(), args.max_listed, rate)
                + &format!("  traffic: {traffic}\n")
        }
        PlanFormat::Markdown => {
            markdown(&planned, args.output.as_deref(), args.max_listed, rate)
                + &format!("\nTraffic the proofs cover: {traffic}.\n")
        }
        PlanFormat::Html => {
            let text =
                human(&planned, None, args.max_listed, rate) + &format!("  traffic: {traffic}\n");
            let page = crate::html::plan::render(&planned, rate, &text);
            match &args.output {
                Some(p) => {
                    crate::output::write_file(p, page.as_bytes()).map_err(Fatal::Run)?;
                    String::new()
                }
                None => page,
            }
        }
        PlanFormat::Json => {
            let mut v = json(&planned, args.output.as_deref(), rate);
            v["traffic"] = serde_json::Value::String(traffic);
            serde_json::to_string_pretty(&v)? + "\n"
        }
    };
    out(None, &text)?;
    Ok(ExitCode::SUCCESS)
}

/// What traffic the steps' proofs cover: each MFT write is a step of its own, proven with
/// the trees by the verifier; the LFT steps' mixes (the transition property) walk unicast
/// routes with the dependencies of the trees in place (LFT writes leave them as they are).
fn traffic(old: &ValidState, new: &ValidState) -> String {
    let groups = weft_verifier::Traffic::of(old)
        .multicast_groups
        .max(weft_verifier::Traffic::of(new).multicast_groups);
    if groups == 0 {
        weft_verifier::Traffic::default().describe()
    } else {
        format!(
            "unicast and multicast ({groups} group(s)): each MFT step proven with the trees, each LFT step's mixes with the dependencies of the trees in place"
        )
    }
}

/// No plan: the reason (exit 1).
fn refused(e: &PlanError, format: PlanFormat) -> Result<ExitCode, Fatal> {
    use miette::Diagnostic as _;
    let code = e.code().map(|c| c.to_string()).unwrap_or_default();
    let text = match format {
        PlanFormat::Json => {
            let check = match e {
                PlanError::NoSafeOrder { check, .. } => serde_json::to_value(check)?,
                _ => serde_json::Value::Null,
            };
            let found = crate::findings::of_input(&code, None, e.to_string());
            serde_json::to_string_pretty(&crate::findings::document(
                "plan",
                serde_json::json!({
                    "ok": false,
                    "findings": [found],
                    "check": check,
                }),
            ))? + "\n"
        }
        _ => format!("× no plan: {e} [{code}]\n"),
    };
    out(None, &text)?;
    Ok(ExitCode::from(1))
}

fn mode_text(m: Mode) -> &'static str {
    match m {
        Mode::Fault => "the steps run on the desired fabric (what a fault leaves)",
        Mode::Drain => "the steps run on the current fabric (links go down after the plan)",
    }
}

fn outcome(o: &Outcome) -> &'static str {
    match o {
        Outcome::Proven => "proven",
        Outcome::Violated => "violated",
        Outcome::Unknown(_) => "unknown",
    }
}

fn step_proof(
    c: Option<&StepCheck>,
    iso: Option<&weft_verifier::partition_mix::MixCheck>,
    s: &weft_plan::StepStats,
) -> String {
    let isolated = iso.is_some_and(|m| m.outcome == Outcome::Proven);
    let writes_pkeys = s.pkey_blocks > 0 || s.vports > 0;
    match c {
        Some(c) if c.is_proven() && (c.outage_routes > 0 || c.out_of_service > 0) => format!(
            "loop-free and deadlock-free in every mix: proven; connected in every mix but toward the {} destination(s) out of service: proven; {} route(s) toward them do not arrive",
            crate::render::group(c.out_of_service.max((s.drops + s.restores) as u64)),
            crate::render::group(c.outage_routes)
        ),
        Some(c) if c.is_proven() => {
            let broken = if c.failing_before > 0 || c.failing_after > 0 {
                format!(
                    "; routes that do not arrive (a fault's, or toward moving VMs): {} before, {} after",
                    crate::render::group(c.failing_before),
                    crate::render::group(c.failing_after)
                )
            } else {
                String::new()
            };
            format!("loop-free, deadlock-free and connected in every mix: proven{broken}")
        }
        Some(c) => format!(
            "loop-free {}, deadlock-free {}, connected {}",
            outcome(&c.loop_free),
            outcome(&c.deadlock_free),
            outcome(&c.connected)
        ),
        // The planner keeps an MFT step only when the verifier proves the state it leaves.
        None if s.mft_blocks > 0 => "multicast only, no unicast route changes: the state it leaves proven (one SMP: no mix)".to_owned(),
        None if s.vf_lids > 0 => format!(
            "VFs (LID and P_Key table of each, two SMPs): the LIDs move with the stopped VMs, and routes toward them fail until the LFT steps mend them; isolated in every mix: {}",
            iso.map_or("unknown", |m| outcome(&m.outcome))
        ),
        None if writes_pkeys && isolated => match s.pkeys {
            Some(weft_plan::PkeyPhase::Remove) => "P_Keys only, no route changes: tables only lose keys; isolated in every mix: proven (no port talks outside the partitions it is in before the plan or declared in after it)".to_owned(),
            _ => "P_Keys only, no route changes: tables become the desired ones; isolated in every mix: proven (no port talks outside the partitions it is in before the plan or declared in after it)".to_owned(),
        },
        None => format!(
            "P_Keys only, no route changes; isolated in every mix: {}",
            iso.map_or("unknown", |m| outcome(&m.outcome))
        ),
    }
}

/// Every kind of write step `s` makes, in the order the apply makes them ("" for a step of
/// QoS tables alone, which `QosCount::text` names).
fn writes(s: &weft_plan::StepStats) -> String {
    let g = crate::render::group;
    let q = qos_of(s);
    let mut parts: Vec<String> = Vec::new();
    if s.lft_blocks > 0 {
        parts.push(format!(
            "{} LFT block(s) on {} switch(es)",
            g(s.lft_blocks as u64),
            g(s.switches as u64)
        ));
    }
    if s.vports > 0 {
        parts.push(format!("{} VF(s)", g(s.vports as u64)));
    }
    if s.mft_blocks > 0 {
        parts.push(format!("{} MFT block(s)", g(s.mft_blocks as u64)));
    }
    if s.pkey_blocks > 0 || (parts.is_empty() && !q.any()) {
        parts.push(format!("{} P_Key block(s)", g(s.pkey_blocks as u64)));
    }
    parts.join(", ")
}

/// What a VM migration asks of its peers.
const MIGRATION_PEERS: &str = "peers to re-path: none (each moved VM keeps its LID and GID, and every path SL is unchanged, so the peers' path records stay valid)";

fn is_migration(p: &Planned) -> bool {
    matches!(p.target, weft_plan::Target::Migration { .. })
}

fn hosts_line(p: &Planned, max: usize) -> String {
    let r = &p.rerouted;
    let shown: Vec<&str> = r.hosts.iter().take(max).map(String::as_str).collect();
    let more = r.hosts.len().saturating_sub(shown.len());
    let mut t = shown.join(", ");
    if more > 0 {
        let _ = write!(t, " … and {more} more");
    }
    t
}

/// "N destination(s) out of service for S step(s) …", or that there is no outage.
pub(crate) fn outage_line(p: &Planned, rate: u64) -> String {
    let g = crate::render::group;
    let Some(o) = &p.outage else {
        return "outage: none (every route that arrives before the plan arrives in every mix of every step)".to_owned();
    };
    let shown: Vec<&str> = o.hosts.iter().take(8).map(String::as_str).collect();
    let more = o.hosts.len().saturating_sub(shown.len());
    let mut hosts = shown.join(", ");
    if more > 0 {
        let _ = write!(hosts, " … and {more} more");
    }
    format!(
        "outage (break-before-make): {} destination LID(s) out of service from step {} to step {} ({} step(s), {} SMP(s), ≈ {} ms at {} SMPs/s); at worst {} (source, destination) route(s) do not arrive, from {} host(s){}; every other route arrives in every mix; why: {}",
        g(o.destinations.len() as u64),
        first_drop(p),
        first_drop(p) + o.steps.saturating_sub(1),
        o.steps,
        g(o.smps),
        g(estimated_ms(o, rate)),
        g(rate),
        g(o.routes),
        g(o.hosts.len() as u64),
        if hosts.is_empty() { String::new() } else { format!(" ({hosts})") },
        o.why
    )
}

/// The step (from 1) that drops the first destinations.
pub(crate) fn first_drop(p: &Planned) -> usize {
    p.plan
        .steps
        .iter()
        .position(|s| !s.drops.is_empty())
        .map_or(0, |i| i + 1)
}

/// The outage's estimated duration: its SMPs at `rate` per second.
fn estimated_ms(o: &weft_plan::outage::Outage, rate: u64) -> u64 {
    (o.smps * 1000).div_ceil(rate.max(1))
}

fn human(p: &Planned, written: Option<&Path>, max: usize, rate: u64) -> String {
    let g = crate::render::group;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "plan for `{}`: {} step(s), {} SMP(s) ({} LFT); a full reconfiguration would send {}{} ({})",
        p.plan.fabric_name,
        p.plan.steps.len(),
        g(p.plan.smps() as u64),
        g(p.plan.lft_smps() as u64),
        g(p.full_reconfiguration),
        more_than_full(p),
        mode_text(p.mode)
    );
    for (i, s) in p.stats.iter().enumerate() {
        let _ = writeln!(t, "  step {}: {}", i + 1, step_line(p, i, s));
    }
    for line in target_line(&p.target).lines() {
        let _ = writeln!(t, "  {line}");
    }
    let _ = writeln!(
        t,
        "  {} LFT entries change; {} step(s) added by splitting",
        g(p.changed_entries),
        p.splits
    );
    if let Some(b) = &p.lower_bound {
        let _ = writeln!(t, "  {}", bound_line(p, b));
    }
    let _ = writeln!(t, "  {}", outage_line(p, rate));
    let r = &p.rerouted;
    let _ = writeln!(
        t,
        "  routes that change: {} (source, destination) pair(s), from {} host(s) and {} switch(es)",
        g(r.pairs),
        g(r.hosts.len() as u64),
        g(r.switches as u64)
    );
    if is_migration(p) {
        let _ = writeln!(t, "  {MIGRATION_PEERS}");
    } else if !r.hosts.is_empty() {
        let _ = writeln!(t, "  hosts to notify: {}", hosts_line(p, max));
    }
    if let Some(a) = &p.apm {
        let _ = writeln!(t, "  {}", apm_line(a));
    }
    if let Some(w) = written {
        let _ = writeln!(t, "  wrote {}", w.display());
    }
    t
}

/// What step `i` (from 0) writes and what is proven of it, in one line (after "step N: ").
pub(crate) fn step_line(p: &Planned, i: usize, s: &weft_plan::StepStats) -> String {
    let q = qos_of(s);
    let what = writes(s);
    let what = match (what.is_empty(), q.any()) {
        (_, false) => what,
        (true, true) => q.text(),
        (false, true) => format!("{what}, {}", q.text()),
    };
    let proof = if q.any() && s.lft_blocks + s.pkey_blocks + s.mft_blocks + s.vports == 0 {
        if q.sl2vl == 0 {
            ARBITRATION_ONLY.to_owned()
        } else {
            QOS_ONLY.to_owned()
        }
    } else if q.any() {
        format!(
            "{}; {QOS_LANES}",
            step_proof(p.check(i), p.isolation.get(i), s)
        )
    } else {
        step_proof(p.check(i), p.isolation.get(i), s)
    };
    format!("{what}{}; {proof}", drops_text(s))
}

/// Why a plan sends more SMPs than a full reconfiguration, when it does: blocks written in
/// more than one step (a full reconfiguration writes each once, in no proven order).
fn more_than_full(p: &Planned) -> String {
    // A full reconfiguration writes forwarding tables: QoS tables are not counted against it.
    let sent = p.plan.smps().saturating_sub(p.plan.qos_smps()) as u64;
    if sent <= p.full_reconfiguration {
        return String::new();
    }
    let mut blocks = std::collections::BTreeSet::new();
    let mut again = 0u64;
    for w in p.plan.steps.iter().flat_map(|s| &s.writes) {
        let key = match w {
            weft_formats::plan::SmpWrite::Lft { switch, block, .. } => (0, switch.0, 0, *block),
            weft_formats::plan::SmpWrite::Pkeys {
                node, port, block, ..
            } => (1, node.0, *port, *block),
            weft_formats::plan::SmpWrite::Vport { guid, .. } => (2, guid.0, 0, 0),
            weft_formats::plan::SmpWrite::Mft {
                switch,
                block,
                position,
                ..
            } => (3, switch.0, *position, *block),
            weft_formats::plan::SmpWrite::Sl2vl {
                node,
                in_port,
                out_port,
                ..
            } => (4, node.0, *in_port, u16::from(*out_port)),
            weft_formats::plan::SmpWrite::VlArb {
                node, port, block, ..
            } => (5, node.0, *port, u16::from(*block)),
        };
        if !blocks.insert(key) {
            again += 1;
        }
    }
    format!(
        ", fewer than this plan: {} write(s) go to a block an earlier step wrote, so that every \
         state on the way is proven",
        crate::render::group(again)
    )
}

pub(crate) fn target_line(t: &weft_plan::Target) -> String {
    match t {
        weft_plan::Target::Repair {
            destinations,
            how,
            structured,
            why,
        } => {
            let way = match how {
                weft_plan::repair::How::Detour if *structured > 0 => format!("each dead entry moved to the cheapest way to a switch whose route still arrives; for {structured} of them, on credit loops such detours made, every switch whose route fails given the desired state's entry"),
                weft_plan::repair::How::Detour => "each dead entry moved to the cheapest way to a switch whose route still arrives".to_owned(),
                weft_plan::repair::How::Structured => "every switch whose route fails given the desired state's entry".to_owned(),
            };
            let mut t = format!(
                "leads to the current tables repaired: only the entries the fabric change forces change, for {destinations} destination LID(s) ({way}), every other entry kept (proven; `--full` leads to the desired tables exactly)"
            );
            if let Some(w) = why {
                let _ = write!(t, "\nnot a detour repair: {w}");
            }
            t
        }
        weft_plan::Target::Reroute { destinations, why } => format!(
            "leads to the current tables with the {destinations} destination LID(s) whose routes the fabric change breaks rerouted as the desired state routes them, every other entry kept (proven; `--full` leads to the desired tables exactly): {why}"
        ),
        weft_plan::Target::Desired { why: None } => "leads to the desired state's tables".to_owned(),
        weft_plan::Target::Desired { why: Some(w) } => format!("leads to the desired state's tables: {w}"),
        weft_plan::Target::Migration { moves, why } => {
            let mut t = format!(
                "moves {} VM(s), each keeping its LID; every other entry kept (the desired state's own balance: `--full` from the state this leaves)",
                moves.len()
            );
            for m in moves {
                let (how, lids) = match m.how {
                    weft_plan::migrate::LidMove::Copy { pf } => {
                        (format!("LID copy of the destination's LID {pf}"), "")
                    }
                    weft_plan::migrate::LidMove::Swap { other } => (
                        format!("LID swap with the destination VF's LID {other}"),
                        ", which goes to the VF left",
                    ),
                };
                let marked = match m.marking {
                    weft_plan::migrate::Marking::Skyline => "the skyline (FTreeMinRC)",
                    weft_plan::migrate::Marking::Every => "every switch (ItRC)",
                };
                let _ = write!(
                    t,
                    "\nVM `{}` (LID {}) from {} to {}: {how}{lids}; {} switch(es) updated of {} marked by {marked}, {} LFT SMP(s)",
                    m.vm, m.lid, m.from, m.to, m.updated, m.marked, m.lft_smps
                );
            }
            if let Some(w) = why {
                let _ = write!(t, "\nevery switch was considered: {w}");
            }
            t
        }
    }
}

/// The ratio of the plan's LFT SMPs to the lower bound (`None` when the bound is 0).
fn over_bound(p: &Planned, b: &weft_plan::repair::LowerBound) -> Option<f64> {
    (b.smps > 0).then(|| p.plan.lft_smps() as f64 / b.smps as f64)
}

/// "N LFT SMPs, lower bound L (×r)" and what the bound counts.
fn bound_line(p: &Planned, b: &weft_plan::repair::LowerBound) -> String {
    let ratio = over_bound(p, b).map_or_else(String::new, |r| format!(" (×{r:.2})"));
    format!(
        "{} LFT SMPs, lower bound {}{ratio}: any repair writes the {} (switch, block) pair(s) holding an entry whose next hop is dead, and {} more block(s) for dead entries no new port alone mends",
        crate::render::group(p.plan.lft_smps() as u64),
        crate::render::group(b.smps),
        crate::render::group(b.dead_blocks),
        crate::render::group(b.detours)
    )
}

fn apm_line(a: &weft_verifier::apm::Survivors) -> String {
    format!(
        "APM: the fault broke the primary path of {} (source, destination) pair(s); the alternate path of {} of them survives (APM moves them at once, before any write)",
        crate::render::group(a.lost_primary),
        crate::render::group(a.alternate_survives)
    )
}

/// ", drops N destination(s)" / ", restores N destination(s)" for a break-before-make step.
fn drops_text(s: &weft_plan::StepStats) -> String {
    let mut t = String::new();
    if s.drops > 0 {
        let _ = write!(t, ", takes {} destination(s) out of service", s.drops);
    }
    if s.restores > 0 {
        let _ = write!(t, ", restores {} destination(s)", s.restores);
    }
    t
}

fn markdown(p: &Planned, written: Option<&Path>, max: usize, rate: u64) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "# Plan for `{}`\n", p.plan.fabric_name);
    let _ = writeln!(
        t,
        "| step | switches | LFT blocks | P_Key blocks | SMPs | loop-free | deadlock-free | connected | isolated |"
    );
    let _ = writeln!(t, "|---|---|---|---|---|---|---|---|---|");
    for (i, s) in p.stats.iter().enumerate() {
        let (l, d, c) = match p.check(i) {
            Some(c) => (
                outcome(&c.loop_free),
                outcome(&c.deadlock_free),
                outcome(&c.connected),
            ),
            None if s.mft_blocks > 0 => ("proven", "proven", "proven"),
            None if s.vf_lids > 0 => ("VFs only", "VFs only", "VFs only"),
            None if qos_of(s).any() && s.sl2vl_tables == 0 && s.pkey_blocks == 0 => {
                ("proven", "proven", "proven")
            }
            None if qos_of(s).any() && s.pkey_blocks == 0 => {
                ("QoS tables only", "QoS tables only", "QoS tables only")
            }
            None => ("P_Keys only", "P_Keys only", "P_Keys only"),
        };
        let iso = p
            .isolation
            .get(i)
            .map_or("unknown", |m| outcome(&m.outcome));
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {l} | {d} | {c} | {iso} |",
            i + 1,
            s.switches,
            s.lft_blocks,
            s.pkey_blocks,
            step_smps(s)
        );
    }
    let _ = writeln!(t, "\nThe plan {}.", target_line(&p.target));
    let _ = writeln!(
        t,
        "\n**{} SMPs in all** (a full reconfiguration: {}); {}. {} LFT entries change.",
        p.plan.smps(),
        p.full_reconfiguration,
        mode_text(p.mode),
        p.changed_entries
    );
    if let Some(b) = &p.lower_bound {
        let _ = writeln!(t, "\n{}.", bound_line(p, b));
    }
    let _ = writeln!(t, "\n{}.", upper_first(&outage_line(p, rate)));
    let r = &p.rerouted;
    let _ = writeln!(
        t,
        "\nRoutes that change: {} (source, destination) pairs, from {} hosts and {} switches.",
        r.pairs,
        r.hosts.len(),
        r.switches
    );
    if is_migration(p) {
        let _ = writeln!(t, "P{}.", MIGRATION_PEERS.trim_start_matches('p'));
    } else if !r.hosts.is_empty() {
        let _ = writeln!(t, "Hosts to notify: {}.", hosts_line(p, max));
    }
    if let Some(a) = &p.apm {
        let _ = writeln!(t, "\n{}.", apm_line(a));
    }
    if let Some(w) = written {
        let _ = writeln!(t, "\nPlan file: `{}`.", w.display());
    }
    t
}

/// The SMPs a step sends: one per LFT, P_Key, MFT, SL→VL or VL arbitration write, two per VF.
fn step_smps(s: &weft_plan::StepStats) -> usize {
    s.lft_blocks + s.pkey_blocks + s.mft_blocks + 2 * s.vports + s.sl2vl_tables + s.vlarb_blocks
}

/// A step's SL→VL and VL arbitration writes, as the planner's step statistics count them.
#[derive(Clone, Copy, Debug, Default)]
struct QosCount {
    sl2vl: usize,
    vlarb: usize,
}

impl QosCount {
    fn any(self) -> bool {
        self.sl2vl + self.vlarb > 0
    }

    fn text(self) -> String {
        let g = |n: usize| crate::render::group(n as u64);
        match (self.sl2vl, self.vlarb) {
            (a, 0) => format!("{} SL→VL table(s)", g(a)),
            (0, b) => format!("{} VL arbitration block(s)", g(b)),
            (a, b) => format!(
                "{} SL→VL table(s) and {} VL arbitration block(s)",
                g(a),
                g(b)
            ),
        }
    }
}

/// The SL→VL and VL arbitration writes of a step.
fn qos_of(s: &weft_plan::StepStats) -> QosCount {
    QosCount {
        sl2vl: s.sl2vl_tables,
        vlarb: s.vlarb_blocks,
    }
}

/// What the proof of a step that writes VL arbitration tables alone says (`weft plan` puts
/// them after every other step: the routes and their VLs are the desired state's).
const ARBITRATION_ONLY: &str = "VL arbitration only, no route nor VL changes (the desired \
                                state's, proven); every VL a port schedules stays scheduled \
                                in every mix: proven";
/// What the proof of a step that writes SL→VL or VL arbitration tables alone says.
const QOS_ONLY: &str = "SL→VL and VL arbitration tables only, no route changes: which lane a \
                        packet in flight takes while they land is not proven";
/// What the proof of a step that writes them beside other tables does not cover.
const QOS_LANES: &str = "its SL→VL and VL arbitration writes change lanes, which this proof \
                         does not cover";

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn json(p: &Planned, written: Option<&Path>, rate: u64) -> serde_json::Value {
    let steps: Vec<serde_json::Value> = p
        .stats
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut step = serde_json::json!({
                "step": i + 1,
                "switches": s.switches,
                "lft_blocks": s.lft_blocks,
                "pkey_blocks": s.pkey_blocks,
                "smps": step_smps(s),
                "pkeys": s.pkeys,
                "vports": s.vports,
                "check": p.check(i),
                "isolation": p.isolation.get(i),
            });
            // Only in plans that write MFTs: the documents of the others stay as they were.
            if let (Some(o), true) = (step.as_object_mut(), s.mft_blocks > 0) {
                o.insert("mft_blocks".to_owned(), s.mft_blocks.into());
            }
            // Only in plans that write SL→VL or VL arbitration tables.
            let q = qos_of(s);
            if let (Some(o), true) = (step.as_object_mut(), q.any()) {
                o.insert("sl2vl_tables".to_owned(), q.sl2vl.into());
                o.insert("vlarb_blocks".to_owned(), q.vlarb.into());
            }
            // Only in break-before-make plans.
            if let (Some(o), true) = (step.as_object_mut(), s.drops + s.restores > 0) {
                o.insert("drops".to_owned(), s.drops.into());
                o.insert("restores".to_owned(), s.restores.into());
            }
            step
        })
        .collect();
    let mut totals = serde_json::json!({
        "smps": p.plan.smps(),
        "lft_smps": p.plan.lft_smps(),
        "full_reconfiguration_smps": p.full_reconfiguration,
        "changed_entries": p.changed_entries,
        "splits": p.splits,
    });
    // Only after a change of the fabric: the documents of the other plans stay as they were.
    if let (Some(o), Some(b)) = (totals.as_object_mut(), &p.lower_bound) {
        o.insert("lower_bound".to_owned(), serde_json::json!(b));
        o.insert(
            "over_lower_bound".to_owned(),
            serde_json::json!(over_bound(p, b)),
        );
    }
    // Only with an outage: plans that keep every route stay as they were.
    if let (Some(t), Some(o)) = (totals.as_object_mut(), &p.outage) {
        t.insert(
            "outage".to_owned(),
            serde_json::json!({
                "destinations": o.destinations.len(),
                "lids": o.destinations,
                "routes": o.routes,
                "hosts": o.hosts.len(),
                "host_names": o.hosts,
                "steps": o.steps,
                "first_step": first_drop(p),
                "smps": o.smps,
                "estimated_ms": estimated_ms(o, rate),
                "smp_rate": rate,
                "why": o.why,
            }),
        );
    }
    serde_json::json!({
        "ok": true,
        "fabric": p.plan.fabric_name,
        "mode": p.mode,
        "from": p.plan.from,
        "to": p.plan.to,
        "steps": steps,
        "totals": totals,
        "rerouted": p.rerouted,
        "apm": p.apm,
        "target": p.target,
        "plan_file": written.map(|w| w.display().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step line names every kind of write the step makes: a step of 8 P_Key blocks and 2
    /// VFs once read "2 VF(s)" alone.
    #[test]
    fn a_step_names_every_write() {
        let s = weft_plan::StepStats {
            pkey_blocks: 8,
            vports: 2,
            ..Default::default()
        };
        assert_eq!(writes(&s), "2 VF(s), 8 P_Key block(s)");
        let s = weft_plan::StepStats {
            lft_blocks: 3,
            switches: 2,
            mft_blocks: 1,
            ..Default::default()
        };
        assert_eq!(writes(&s), "3 LFT block(s) on 2 switch(es), 1 MFT block(s)");
        assert_eq!(writes(&weft_plan::StepStats::default()), "0 P_Key block(s)");
    }
}

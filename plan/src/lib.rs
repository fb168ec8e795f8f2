//! weft's planner: from the state a fabric runs to a desired one, ordered steps of SMP writes,
//! every step proven safe while it lands.
//!
//! [`plan`] diffs two states' LFTs into 64-entry block writes and P_Key tables into 32-entry
//! block writes, orders the LFT writes so that each switch changes a destination's entry only
//! after its new next hop has (destination side first, bottom-up; the source side last), and
//! checks every step with the verifier's `transition` property (any subset of a step's writes
//! may have landed: the union of old and new entries must be loop-free, its channel dependency
//! graph acyclic, and every route that arrived before must still arrive). A step that fails is
//! split in two, and again, down to single writes; a single write that fails means no safe
//! order exists with block writes, and the plan is refused with the witness. The desired state
//! itself must be proven (deadlock freedom, connectivity, isolation when declared).
//!
//! Two modes say what fabric the steps run on: [`Mode::Fault`] (the default: the desired
//! state's fabric, e.g. with the failed link already down, so routes through it fail until
//! their mending write lands) and [`Mode::Drain`] (the current state's fabric: links the
//! desired state takes down are still up while the plan runs, so every route must arrive in
//! every state; take them down afterwards).
//!
//! After a change of the fabric (links or nodes down or up) the plan leads to the first of
//! these end states that is proven and has a safe order, each fallback saying why
//! ([`Target`]): the minimal repair of [`repair`] (dead entries moved to the cheapest way to a
//! switch whose route arrives: the *detour*), the *structured* repair (every switch whose route
//! fails takes the desired entry), the current tables with the broken destinations' columns
//! from the desired state, the desired state; with `full`, the desired state.
//!
//! **Code map.** `order.rs` (LFT writes ordered with `weft_fabric::graph::kahn`, grouped into
//! blocks by stage; the sources whose routes change; a property test holds its broken
//! destinations equal to the LIDs the verifier finds routes failing to), [`repair`] (and its
//! [`repair::LowerBound`]), [`outage`] (break-before-make), [`mft`] (MFT block writes, each a
//! step of its own), [`pkeys`] (P_Key and VF writes; P_Key blocks go in the last steps, what
//! goes away, then what is added), [`qos`] (SL→VL and VL arbitration writes), [`migrate`] (VM
//! migrations: FTreeMinRC's skyline, ItRC). `check.rs`: [`check_steps`] and [`check_steps_read`]
//! prove steps someone else ordered (a plan file, on the tables `weft apply` reads). Plans are
//! [`weft_formats::plan::Plan`]: format `weft-plan` v2, one write per line, fingerprints of the
//! fabric it applies to and of the state it leads to, its wire view, the declared partitions
//! and SM ports, what the steps were proven to keep, and a digest of the canonical text.
//!
//! Architecture invariant: depends on `weft-fabric` and `weft-verifier` only; it never prints.

// Nothing indexes with a value that might be out of range: `get` and a decision instead.
#![deny(clippy::indexing_slicing)]

mod check;
pub mod mft;
pub mod migrate;
mod order;
pub mod outage;
pub mod pkeys;
pub mod qos;
pub mod repair;

pub use check::{check_steps, check_steps_read, why};
use check::{describe, lft_change_iter, lft_changes, sorted, step_stats};
use pkeys::{pkey_steps, prove_pkeys};
use serde::Serialize;
use weft_fabric::{FabricState, Fingerprint, StateErrors, ValidState, WireView};
use weft_formats::plan::{
    Plan, PlanStep, Proof, SmpWrite, LFT_BLOCK, PKEY_BLOCK, PLAN_FORMAT, PLAN_VERSION,
};
use weft_verifier::partition_mix::MixCheck;
use weft_verifier::transition::{StepCheck, Transition};
use weft_verifier::{Options as VerifyOptions, Property, Scope};

/// The fabric the steps run on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The desired state's fabric (a fault has already happened).
    #[default]
    Fault,
    /// The current state's fabric (links and nodes go down after the plan).
    Drain,
}

/// How to plan.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The fabric the steps run on.
    pub mode: Mode,
    /// The pairs whose routes count.
    pub scope: Scope,
    /// Lead to the desired state's tables exactly, rather than rerouting only the
    /// destinations whose routes a change of the fabric (links or nodes down or up) breaks.
    pub full: bool,
    /// The most (source, destination) routes a break-before-make outage may leave failing at
    /// its worst step ([`outage`]): `None` for any, `Some(0)` for none (only an order that
    /// keeps every route is taken; otherwise there is no plan).
    pub max_outage_pairs: Option<u64>,
    /// An initial deployment (every entry that changes is unset where the LFT steps start)
    /// written as one step, each block once: every mix of its writes is a part of the end
    /// state's tables, so the one check of that step is one walk of the end state. Without
    /// it (what `weft plan` does) the entries are ordered as for any change, each after its
    /// next hop's, so a packet a switch forwards at any moment reaches its end; `weft apply`
    /// of a build directory sets it (a fabric forwarding nothing carries no traffic to keep).
    pub fill_at_once: bool,
}

impl Options {
    /// Whether break-before-make may be planned at all.
    fn allows_outage(&self) -> bool {
        self.max_outage_pairs != Some(0)
    }
}

/// What the plan leads to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Target {
    /// The desired state's tables, exactly.
    Desired {
        /// Why not a minimal reroute, when one was tried.
        why: Option<String>,
    },
    /// The current tables with only what the change of the fabric forces changed
    /// ([`repair`]): dead entries, the ways to the destinations whose routes they cut, every
    /// other entry kept (proven like any state).
    Repair {
        /// Destination LIDs some entry of which changes.
        destinations: usize,
        /// How the broken destinations were mended: by detours (when those close a credit
        /// loop, the destinations on it and those detoured through another switch the
        /// structured way), or all the structured way.
        how: repair::How,
        /// Destination LIDs mended the structured way.
        structured: usize,
        /// Why not a detour, when the structured repair was taken instead.
        why: Option<String>,
    },
    /// The fallback when no minimal repair is proven: the current tables with the columns of
    /// the destinations whose routes the change breaks taken from the desired state (proven
    /// like any state).
    Reroute {
        /// Destination LIDs rerouted.
        destinations: usize,
        /// Why not a minimal repair.
        why: String,
    },
    /// VMs moved: the current tables with their LIDs copied or swapped on the switches that
    /// must change (the desired state's own balance is a later `--full` plan's business).
    Migration {
        /// Each move.
        moves: Vec<migrate::MoveReport>,
        /// Why every switch was considered (ItRC) rather than the skyline, when so.
        why: Option<String>,
    },
}

/// A step's writes in numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StepStats {
    /// Switches with an LFT write.
    pub switches: usize,
    /// LFT block writes.
    pub lft_blocks: usize,
    /// P_Key block writes.
    pub pkey_blocks: usize,
    /// VF writes (LID and P_Key table of one VF each).
    pub vports: usize,
    /// Of those, the ones that change the VF's LID (a VM moving).
    pub vf_lids: usize,
    /// MFT block writes (one block at one position each; [`mft`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub mft_blocks: usize,
    /// SL→VL table writes ([`qos`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub sl2vl_tables: usize,
    /// VL arbitration block writes ([`qos`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub vlarb_blocks: usize,
    /// For a P_Key step: whether its tables only lose keys (the first) or become the desired
    /// ones (the second).
    pub pkeys: Option<PkeyPhase>,
    /// Destinations the step takes out of service (break-before-make, [`outage`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub drops: usize,
    /// Destinations whose routes arrive again after the step.
    #[serde(skip_serializing_if = "is_zero")]
    pub restores: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The two P_Key steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PkeyPhase {
    /// Tables lose, in place, what the desired ones do not have: every mix lets only pairs
    /// talk that the current tables let talk.
    Remove,
    /// Tables become the desired ones: every mix lets only pairs talk that they let talk.
    Add,
}

/// The routes a plan changes: the sources to tell (their paths to some destination change).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rerouted {
    /// (source port, destination LID) pairs whose route changes.
    pub pairs: u64,
    /// End nodes among those sources, by name, sorted.
    pub hosts: Vec<String>,
    /// Switches among those sources (their own traffic).
    pub switches: usize,
}

/// A plan with what was proven about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Planned {
    /// The plan (what `weft apply` reads).
    pub plan: Plan,
    /// The fabric the steps run on.
    pub mode: Mode,
    /// Per step: its writes in numbers.
    pub stats: Vec<StepStats>,
    /// Per LFT step, its transition check (P_Key and VF steps have none: they change no LFT
    /// entry).
    pub checks: Vec<StepCheck>,
    /// Per step, `isolated` in every mix of its P_Key and VF writes (and, for the last, the
    /// tables it leaves against the desired state's partitions): proven for every step, or
    /// there is no plan.
    pub isolation: Vec<MixCheck>,
    /// Steps added by splitting steps that were not safe whole.
    pub splits: usize,
    /// SMPs a full reconfiguration would send: every LFT block of every switch.
    pub full_reconfiguration: u64,
    /// Who to tell.
    pub rerouted: Rerouted,
    /// LFT entries that change.
    pub changed_entries: u64,
    /// With LMC > 0 and the steps on the desired fabric: the flows whose primary path the
    /// fault broke, and those whose alternate path survives it (APM moves them at once).
    pub apm: Option<weft_verifier::apm::Survivors>,
    /// What the plan leads to.
    pub target: Target,
    /// After a change of the fabric: the fewest LFT SMPs any repair sends
    /// ([`repair::LowerBound`]).
    pub lower_bound: Option<repair::LowerBound>,
    /// What break-before-make costs, when some destinations go through it (`None`: every
    /// route that arrives before the plan arrives in every mix of every step).
    pub outage: Option<outage::Outage>,
    /// The state the plan leads to (on the desired fabric, with the desired P_Keys).
    #[serde(skip)]
    pub end: ValidState,
}

impl Planned {
    /// The check of step `i` (0-based): LFT steps have one, in order; P_Key and VF steps none.
    pub fn check(&self, i: usize) -> Option<&StepCheck> {
        let lft = |s: &StepStats| s.lft_blocks > 0;
        if !self.stats.get(i).is_some_and(lft) {
            return None;
        }
        let k = self.stats.iter().take(i).filter(|s| lft(s)).count();
        self.checks.get(k)
    }
}

/// Why there is no plan.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PlanError {
    /// The two states are not of the same fabric.
    #[error("the two states are not the same fabric: {0}")]
    #[diagnostic(code(weft::plan::fabric))]
    Fabric(String),
    /// A change the planner does not plan yet.
    #[error("{0} differ between the two states; planning that is not built yet (only LFT, MFT, P_Key and VL arbitration changes are planned; MFT changes not with VMs moving)")]
    #[diagnostic(code(weft::plan::not_built))]
    NotBuilt(&'static str),
    /// A VL arbitration change that would leave a scheduled VL unscheduled.
    #[error("the VL arbitration change is not planned: {0}; weft plans arbitration changes that keep every VL a port schedules scheduled (where the plan is applied the SLs hosts use are not known)")]
    #[diagnostic(code(weft::plan::not_built))]
    Arbitration(String),
    /// A VM migration the planner does not plan yet.
    #[error("not built yet: {0}")]
    #[diagnostic(code(weft::plan::not_built))]
    Unplanned(&'static str),
    /// The desired state is not proven.
    #[error("the desired state is not proven ({0}); weft plans only toward a proven state")]
    #[diagnostic(code(weft::plan::unproven))]
    Unproven(String),
    /// No safe order exists with block writes.
    #[error("no safe order found: the write {write} is unsafe even on its own ({why})")]
    #[diagnostic(code(weft::plan::no_safe_order))]
    NoSafeOrder {
        /// The write.
        write: String,
        /// What its check found.
        why: String,
        /// The check.
        check: Box<StepCheck>,
    },
    /// The only plan found takes more routes out of service than allowed.
    #[error("the plan's outage is {routes} route(s) to {destinations} destination(s) at its worst step, more than the {max} allowed (`--max-outage-pairs`); no order that keeps every route was found: {why}")]
    #[diagnostic(code(weft::plan::outage))]
    Outage {
        /// Routes failing at the worst step.
        routes: u64,
        /// Destinations taken out of service.
        destinations: usize,
        /// The bound.
        max: u64,
        /// Why the destinations could not move directly.
        why: String,
    },
    /// A state built on the way is invalid (a bug in weft).
    #[error("a state on the way is invalid (a bug in weft): {0}")]
    #[diagnostic(code(weft::plan::internal))]
    State(StateErrors),
}

/// The two fabrics have the same nodes and cables; only link and node states may differ.
fn same_fabric(old: &ValidState, new: &ValidState) -> Result<(), PlanError> {
    let (a, b) = (&old.fabric, &new.fabric);
    if a.nodes().len() != b.nodes().len() || a.links().len() != b.links().len() {
        return Err(PlanError::Fabric(format!(
            "{} nodes and {} links against {} nodes and {} links",
            a.nodes().len(),
            a.links().len(),
            b.nodes().len(),
            b.links().len()
        )));
    }
    for (x, y) in a.nodes().iter().zip(b.nodes()) {
        if x.guid() != y.guid() || x.kind() != y.kind() || x.spec.port_count != y.spec.port_count {
            return Err(PlanError::Fabric(format!(
                "node `{}` ({}) is `{}` ({}) in the desired state",
                x.name(),
                x.guid(),
                y.name(),
                y.guid()
            )));
        }
    }
    for (x, y) in a.links().iter().zip(b.links()) {
        if (x.a, x.b) != (y.a, y.b) {
            return Err(PlanError::Fabric(format!(
                "a cable of `{}` port {} is cabled differently in the desired state",
                a.node(x.a.node).name(),
                x.a.port.0
            )));
        }
    }
    if old.lids.lmc != new.lids.lmc
        || old.lids.base != new.lids.base
        || migrate::vf_view(&old.lids.vports) != migrate::vf_view(&new.lids.vports)
    {
        return Err(PlanError::NotBuilt("LIDs"));
    }
    if old.path_sl != new.path_sl {
        return Err(PlanError::NotBuilt("path SLs"));
    }
    // Switches in both states (a switch down in one has no tables there).
    let sl2vl_differs = old.switches.iter().any(|(id, t)| {
        new.switches
            .get(id)
            .is_some_and(|u| u.sl2vl != t.sl2vl || u.sl2vl_all != t.sl2vl_all)
    });
    if sl2vl_differs {
        return Err(PlanError::NotBuilt("switch SL→VL tables"));
    }
    let port_sl2vl = |s: &ValidState| -> Vec<_> {
        s.ports
            .iter()
            .filter_map(|(r, p)| p.sl2vl.map(|t| (*r, t)))
            .collect()
    };
    if port_sl2vl(old) != port_sl2vl(new) {
        return Err(PlanError::NotBuilt("end ports' SL→VL tables"));
    }
    // VL arbitration may change (the weights of QoS classes): planned as its own steps
    // ([`arbitration_steps`]), but not the high-priority limit, which is not written.
    if !qos::high_limit_changes(old, new).is_empty() {
        return Err(PlanError::NotBuilt("VL high limits"));
    }
    Ok(())
}

fn valid(st: FabricState) -> Result<ValidState, PlanError> {
    ValidState::new(st).map_err(PlanError::State)
}

/// The state the steps start from: `old`'s tables on the fabric the steps run on.
pub fn start(old: &ValidState, new: &ValidState, mode: Mode) -> Result<ValidState, PlanError> {
    same_fabric(old, new)?;
    let mut start = old.state().clone();
    if mode == Mode::Fault {
        start.fabric = new.fabric.clone();
    }
    valid(start)
}

/// Plans the way from `old` (what the fabric runs) to `new` (what it should run).
pub fn plan(old: &ValidState, new: &ValidState, opts: &Options) -> Result<Planned, PlanError> {
    if let Some(moves) = migrate::moves(old, new)? {
        // A migration keeps the current MFTs: one toward others is not planned silently.
        if !new.multicast.is_empty() && new.multicast.mfts != old.multicast.mfts {
            return Err(PlanError::NotBuilt("MFTs"));
        }
        if !qos::writes(old, new).is_empty() {
            return Err(PlanError::Unplanned(
                "VL arbitration or SL→VL changes with VMs moving; plan the moves, then the arbitration",
            ));
        }
        return plan_migration(old, new, &moves, opts);
    }
    same_fabric(old, new)?;
    let start = start(old, new, opts.mode)?;
    let kept = mft::keep_current(&start, new)?;
    let new = kept.as_ref().unwrap_or(new);
    // Minimal rerouting answers a change of the fabric (links or nodes down or up); anything
    // else the desired state changes (another engine, other settings) is its tables.
    // The current tables on the desired fabric, made when needed and dropped before the steps
    // are planned (a whole state: memory at 11 664 nodes).
    let probe = || -> Result<ValidState, PlanError> {
        let mut probe = old.state().clone();
        probe.fabric = new.fabric.clone();
        valid(probe)
    };
    let (broken, lower_bound) = if old.fabric == new.fabric {
        (None, None)
    } else {
        let p = probe()?;
        let broken = order::broken_destinations(&p);
        let bound = repair::lower_bound(&p, new, &broken, opts.scope);
        (Some(broken), Some(bound))
    };
    let Some(broken) = broken.as_ref().filter(|_| !opts.full) else {
        // The end state is proven before any step is planned toward it.
        if let Some(why) = unproven(new, opts.scope) {
            return Err(PlanError::Unproven(why));
        }
        let target = Target::Desired { why: None };
        return lead(
            &start,
            new,
            new.clone(),
            target,
            lower_bound,
            opts,
            opts.allows_outage(),
        );
    };
    // After a change of the fabric: the first end state that is proven and has an order that
    // keeps every route, each fallback saying why the ones before it were not taken; when none
    // has, the first proven one through break-before-make.
    let mut not: Vec<String> = Vec::new();
    let mut with_outage: Option<(ValidState, Target, usize)> = None;
    for c in Candidate::ALL {
        let mut structured = 0;
        let (end, destinations, not_proven) = match c {
            Candidate::Repair(repair::How::Detour) => {
                let (end, destinations, n, not) = escalated(&probe()?, new, broken, opts.scope)?;
                structured = n;
                (end, destinations, not)
            }
            Candidate::Repair(repair::How::Structured) => {
                let r = repair::repair(&probe()?, new, broken, opts.scope, &|_| true);
                structured = r.destinations;
                let end = valid(r.state)?;
                let not = unproven(&end, opts.scope);
                (end, r.destinations, not)
            }
            Candidate::Reroute => {
                let end = reroute(&probe()?, new, broken)?;
                let not = unproven(&end, opts.scope);
                (end, broken.len(), not)
            }
            Candidate::Desired => (new.clone(), 0, unproven(new, opts.scope)),
        };
        if let Some(u) = not_proven {
            if c == Candidate::Desired {
                return Err(PlanError::Unproven(u));
            }
            not.push(format!("{} is {u}", c.name()));
            continue;
        }
        let why = (!not.is_empty()).then(|| not.join("; "));
        let target = match c {
            Candidate::Repair(how) => Target::Repair {
                destinations,
                how,
                structured,
                why,
            },
            Candidate::Reroute => Target::Reroute {
                destinations,
                why: why.unwrap_or_default(),
            },
            Candidate::Desired => Target::Desired { why },
        };
        let keep = opts.allows_outage() && with_outage.is_none();
        let kept = keep.then(|| (end.clone(), target.clone()));
        match lead(&start, new, end, target, lower_bound, opts, false) {
            Err(e @ PlanError::NoSafeOrder { .. }) => {
                not.push(format!(
                    "{} has no order that keeps every route ({e})",
                    c.name()
                ));
                if let Some((end, target)) = kept {
                    with_outage = Some((end, target, not.len()));
                }
                // Without outage allowed, the desired tables' refusal is the plan's.
                if c == Candidate::Desired && !opts.allows_outage() {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
    let Some((end, mut target, at)) = with_outage else {
        return Err(PlanError::Unproven(not.join("; ")));
    };
    // The first proven candidate, through break-before-make; why the others were not taken.
    let before: Vec<String> = not.iter().take(at.saturating_sub(1)).cloned().collect();
    let rest: Vec<String> = not.iter().skip(at).cloned().collect();
    let why = (!before.is_empty() || !rest.is_empty()).then(|| {
        before
            .into_iter()
            .chain(rest.into_iter().map(|r| format!("not taken: {r}")))
            .collect::<Vec<_>>()
            .join("; ")
    });
    match &mut target {
        Target::Repair { why: w, .. } | Target::Desired { why: w } => *w = why,
        Target::Reroute { why: w, .. } => *w = why.unwrap_or_default(),
        Target::Migration { .. } => {}
    }
    lead(&start, new, end, target, lower_bound, opts, true)
}

/// The end states tried after a change of the fabric, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    Repair(repair::How),
    Reroute,
    Desired,
}

impl Candidate {
    const ALL: [Candidate; 4] = [
        Candidate::Repair(repair::How::Detour),
        Candidate::Repair(repair::How::Structured),
        Candidate::Reroute,
        Candidate::Desired,
    ];

    fn name(self) -> String {
        match self {
            Candidate::Repair(how) => format!("the {} repair", how.name()),
            Candidate::Reroute => {
                "rerouting the destinations the change breaks as the desired state routes them"
                    .to_owned()
            }
            Candidate::Desired => "the desired state's tables".to_owned(),
        }
    }
}

/// The plan from `start` to the proven state `end` (what `target` says it is), `new` the
/// desired state (its P_Keys, partitions and fingerprint).
fn lead(
    start: &ValidState,
    new: &ValidState,
    end: ValidState,
    target: Target,
    lower_bound: Option<repair::LowerBound>,
    opts: &Options,
    allow_outage: bool,
) -> Result<Planned, PlanError> {
    // MFT blocks: ports taken away first (each write its own step), then the LFT steps on
    // the tables that leaves, then ports added.
    let (mft_remove, mft_add) = mft::writes(start, &end);
    let mut steps = mft_steps(start.state().clone(), start, mft_remove, opts.scope)?;
    let met = if steps.is_empty() && mft_add.is_empty() {
        None
    } else {
        Some(mft::meet(start, &end)?)
    };
    let lft_start = met.as_ref().unwrap_or(start);
    let changed = order::changed(lft_start, &end);
    let proved = outage::prove(
        lft_start,
        &end,
        &changed,
        opts.scope,
        (allow_outage, opts.fill_at_once),
    )?;
    if let (Some(o), Some(max)) = (&proved.outage, opts.max_outage_pairs) {
        if o.routes > max {
            return Err(PlanError::Outage {
                routes: o.routes,
                destinations: o.destinations.len(),
                max,
                why: o.why.clone(),
            });
        }
    }
    let (checks, splits) = (proved.checks, proved.splits);
    steps.extend(proved.steps);
    if !mft_add.is_empty() {
        let mut after = end.state().clone();
        after.multicast.mfts = lft_start.multicast.mfts.clone();
        steps.extend(mft_steps(after, start, mft_add, opts.scope)?);
    }
    // P_Keys last (they change no route): what goes away first, then what is added.
    let lft_steps = steps.len();
    let (remove, add) = pkey_steps(start, new);
    let mut phases = Vec::new();
    for (writes, phase) in [(remove, PkeyPhase::Remove), (add, PkeyPhase::Add)] {
        if !writes.is_empty() {
            steps.push(PlanStep::of(sorted(writes)));
            phases.push(phase);
        }
    }
    // VL arbitration last (it changes no route nor any VL a route takes), toward the state
    // the plan leads to (whose ports are the desired state's, repairs included).
    steps.extend(arbitration_steps(start, &end)?);
    let stats = steps
        .iter()
        .enumerate()
        .map(|(i, s)| StepStats {
            pkeys: i
                .checked_sub(lft_steps)
                .and_then(|j| phases.get(j).copied()),
            ..step_stats(s)
        })
        .collect();
    let isolation = prove_pkeys(start, new, &steps)?;
    Ok(Planned {
        plan: Plan {
            format: PLAN_FORMAT.to_owned(),
            version: PLAN_VERSION,
            fabric_name: new.fabric.name.clone(),
            from: Fingerprint::of(start),
            to: Fingerprint::of(new),
            wire: Some(WireView::of(start)),
            partitions: pkeys::plan_partitions(new),
            sm: pkeys::plan_sm(new),
            proof: proof(new, opts.scope, &steps),
            steps,
            recorded_digest: None,
        },
        mode: opts.mode,
        stats,
        checks,
        isolation,
        splits,
        full_reconfiguration: full_reconfiguration(new),
        rerouted: order::rerouted(lft_start, &changed),
        changed_entries: changed.len() as u64,
        apm: (start.lids.lmc > 0 && opts.mode == Mode::Fault)
            .then(|| weft_verifier::apm::survivors(start)),
        target,
        lower_bound,
        outage: proved.outage,
        end,
    })
}

/// The VL arbitration writes from `start`'s tables to `end`'s (the SL→VL tables and path SLs
/// the same: [`same_fabric`]), as steps every mix of which keeps every scheduled VL scheduled
/// ([`qos::check`], as `weft apply` proves it on the fabric): first the blocks that keep each
/// VL they schedule (new weights, VLs taken on), then those that let a VL go, once another
/// block has it. A VL no block schedules any more is refused: where the plan is applied, the
/// SLs hosts use are not known, so any VL a port schedules may carry packets.
fn arbitration_steps(start: &ValidState, end: &ValidState) -> Result<Vec<PlanStep>, PlanError> {
    let writes: Vec<SmpWrite> = qos::writes(start, end)
        .into_iter()
        .filter(|w| matches!(w, SmpWrite::VlArb { .. }))
        .collect();
    let keeps = |w: &SmpWrite| match w {
        SmpWrite::VlArb { old, new, .. } => old
            .iter()
            .filter(|&&(_, weight)| weight > 0)
            .all(|&(vl, _)| new.iter().any(|&(v, weight)| v == vl && weight > 0)),
        _ => true,
    };
    let (grow, shrink): (Vec<SmpWrite>, Vec<SmpWrite>) = writes.into_iter().partition(keeps);
    let steps: Vec<PlanStep> = [grow, shrink]
        .into_iter()
        .filter(|w| !w.is_empty())
        .map(|w| PlanStep::of(sorted(w)))
        .collect();
    let known = qos::known_blocks(start.ports.iter().filter_map(|(r, p)| {
        let arb = p.vlarb.as_ref()?;
        Some((start.fabric.node(r.node).guid(), r.port.0, arb))
    }));
    qos::check_with(&known, &steps).map_err(|h| PlanError::Arbitration(h.why))?;
    Ok(steps)
}

/// Plans VM moves (see [`migrate`]): the skyline first, every switch when the skyline's plan
/// is not proven.
fn plan_migration(
    old: &ValidState,
    new: &ValidState,
    moves: &[migrate::Move],
    opts: &Options,
) -> Result<Planned, PlanError> {
    use migrate::{Marking, Migrator};
    if opts.full {
        return Err(PlanError::Unplanned(
            "VM moves with `--full` (a rebalance to the desired tables); plan the moves first, then `--full` from the state they leave",
        ));
    }
    let (m, why) =
        match Migrator::new(old, opts.scope).migrate(moves, &new.lids.vports, Marking::Skyline) {
            Ok(m) => (m, None),
            Err(e @ (PlanError::Unproven(_) | PlanError::NoSafeOrder { .. })) => {
                let m = Migrator::new(old, opts.scope).migrate(
                    moves,
                    &new.lids.vports,
                    Marking::Every,
                )?;
                (m, Some(format!("the skyline's plan was not proven ({e})")))
            }
            Err(e) => return Err(e),
        };
    let end = migrate::end_state(old, &m)?;
    if !end.partitions.is_empty() {
        let iso = weft_verifier::isolation::check(&end, 1);
        if iso.outcome != weft_verifier::Outcome::Proven {
            return Err(PlanError::Unproven("not isolated".to_owned()));
        }
    }
    let stats = m.steps.iter().map(step_stats).collect();
    let isolation = prove_pkeys(old, &end, &m.steps)?;
    Ok(Planned {
        plan: Plan {
            format: PLAN_FORMAT.to_owned(),
            version: PLAN_VERSION,
            fabric_name: end.fabric.name.clone(),
            from: Fingerprint::of(old),
            to: Fingerprint::of(&end),
            wire: Some(WireView::of(old)),
            partitions: pkeys::plan_partitions(&end),
            sm: pkeys::plan_sm(&end),
            proof: proof(&end, opts.scope, &m.steps),
            steps: m.steps,
            recorded_digest: None,
        },
        mode: opts.mode,
        stats,
        checks: m.checks,
        isolation,
        splits: m.splits,
        full_reconfiguration: full_reconfiguration(&end),
        rerouted: m.rerouted,
        changed_entries: m.entries.len() as u64,
        apm: None,
        target: Target::Migration {
            moves: m.moves,
            why,
        },
        lower_bound: None,
        outage: None,
        end,
    })
}

/// What the steps of a plan toward `end` were proven to keep.
fn proof(end: &ValidState, scope: Scope, steps: &[PlanStep]) -> Proof {
    let mut properties: Vec<String> = ["loop_free", "deadlock_free", "connected"]
        .map(str::to_owned)
        .to_vec();
    let pkeys = steps
        .iter()
        .flat_map(|s| &s.writes)
        .any(|w| matches!(w, SmpWrite::Pkeys { .. } | SmpWrite::Vport { .. }));
    if pkeys || !end.partitions.is_empty() {
        properties.push("isolated".to_owned());
    }
    Proof {
        scope: scope.as_str().to_owned(),
        properties,
        path_sls: rests_on_vls(end),
    }
}

/// Whether `st`'s routes use other VLs than 0 (path SLs, SL→VL tables): what a proof on VL 0
/// alone cannot show.
fn rests_on_vls(st: &ValidState) -> bool {
    let off_vl0 = |vls: &[u8; 16]| vls.iter().any(|&v| v != 0);
    st.switches.values().any(|t| {
        t.sl2vl.iter().any(|r| off_vl0(&r.vl)) || t.sl2vl_all.as_ref().is_some_and(off_vl0)
    }) || st
        .ports
        .values()
        .any(|p| p.sl2vl.as_ref().is_some_and(off_vl0))
}

/// SMPs a full reconfiguration of what a plan may write would send: every LFT block of every
/// switch (up to the highest LID), every MFT block in use at every position, every block of
/// every end port's P_Key table the state sets, and two per VF (its LID and its table).
fn full_reconfiguration(st: &ValidState) -> u64 {
    let mfts: u64 = st
        .multicast
        .mfts
        .iter()
        .map(|(id, t)| {
            let blocks = t.top().map_or(0, |m| u64::from(m.block()) + 1);
            blocks * u64::from(st.fabric.node(*id).spec.port_count / 16 + 1)
        })
        .sum();
    let blocks = (u64::from(st.lids.max_lid(&st.fabric)) + 1).div_ceil(LFT_BLOCK as u64);
    let lfts = st.fabric.switch_count() as u64 * blocks;
    let pkeys: u64 = st
        .ports
        .values()
        .filter_map(|p| p.pkeys.as_ref())
        .map(|t| t.len().div_ceil(PKEY_BLOCK).max(1) as u64)
        .sum();
    lfts + mfts + pkeys + 2 * st.lids.vports.len() as u64
}

/// One step per MFT write of `writes`, in order, from the state `cur`, each checked on the
/// states before and after it ([`mft::run_checks`]); the first that is not proven is refused.
fn mft_steps(
    mut cur: FabricState,
    names: &ValidState,
    writes: Vec<SmpWrite>,
    scope: Scope,
) -> Result<Vec<PlanStep>, PlanError> {
    let what: Vec<String> = writes.iter().map(|w| describe(names, Some(w))).collect();
    let refs: Vec<&SmpWrite> = writes.iter().collect();
    let checks = mft::run_checks(&mut cur, &refs, &what, scope);
    if let Some((check, name)) = checks.into_iter().zip(&what).find(|(c, _)| !c.is_proven()) {
        return Err(PlanError::NoSafeOrder {
            write: name.clone(),
            why: why(&check),
            check: Box::new(check),
        });
    }
    Ok(writes.into_iter().map(|w| PlanStep::of(vec![w])).collect())
}

/// Proves `stages` of LFT writes one after another on `t` (from `start`): a stage whose
/// check fails is split in halves, then a single block into its entries; a single entry that
/// fails means no safe order. Returns the steps, their checks and how many splits it took.
pub(crate) fn prove_stages(
    t: &mut Transition<'_>,
    start: &ValidState,
    stages: Vec<Vec<SmpWrite>>,
) -> Result<(Vec<PlanStep>, Vec<StepCheck>, usize), PlanError> {
    outage::prove_unbounded(t, start, stages)
}

/// The detour repair ([`repair::repair`]), escalated once when its end state has a credit
/// loop: the broken destinations on the loops the verifier lists and those mended by a detour
/// through another switch (on a fat tree, a turn from down to up) are then mended the
/// structured way, the others keep their detours. The end state, the destinations changed, how
/// many of them the structured way, and what is not proven of the end state ([`unproven`]).
fn escalated(
    probe: &ValidState,
    new: &ValidState,
    broken: &std::collections::BTreeSet<u16>,
    scope: Scope,
) -> Result<(ValidState, usize, usize, Option<String>), PlanError> {
    let r = repair::repair(probe, new, broken, scope, &|_| false);
    let end = valid(r.state)?;
    let report = weft_verifier::verify(&end, &verify_options(&end, scope, 8));
    let mut structured: std::collections::BTreeSet<u16> = report
        .credit_loops
        .iter()
        .flat_map(|l| &l.cycle)
        .map(|d| d.route.dlid.0)
        .filter(|l| broken.contains(l))
        .collect();
    structured.extend(&r.through);
    if report.verdict.deadlock_free != weft_verifier::Outcome::Violated || structured.is_empty() {
        return Ok((end, r.destinations, 0, failed(&report)));
    }
    let r = repair::repair(probe, new, broken, scope, &|l| structured.contains(&l));
    let end = valid(r.state)?;
    let not = unproven(&end, scope);
    Ok((end, r.destinations, structured.len(), not))
}

/// The current tables (`probe`: on the desired fabric) with the columns of the destinations
/// whose routes break (`broken`) taken from the desired state.
fn reroute(
    probe: &ValidState,
    new: &ValidState,
    broken: &std::collections::BTreeSet<u16>,
) -> Result<ValidState, PlanError> {
    let mut hybrid = new.state().clone();
    for (id, t) in &mut hybrid.switches {
        let Some(before) = probe.switches.get(id) else {
            continue;
        };
        let desired = t.lft.ports.clone();
        t.lft.ports = before.lft.ports.clone();
        for &lid in broken {
            let port = desired
                .get(usize::from(lid))
                .copied()
                .unwrap_or(weft_fabric::LFT_UNSET);
            t.lft.set(weft_fabric::Lid(lid), weft_fabric::PortNum(port));
        }
        while t.lft.ports.last() == Some(&weft_fabric::LFT_UNSET) {
            t.lft.ports.pop();
        }
    }
    valid(hybrid)
}

/// Verifying `st`'s default properties in `scope`, `listed` credit loops and failures listed.
fn verify_options(st: &ValidState, scope: Scope, listed: usize) -> VerifyOptions {
    VerifyOptions {
        scope,
        properties: Property::defaults(st),
        certificate: false,
        max_listed: listed,
        witnesses: 1,
    }
}

/// `None` when `st` is proven (the properties of routes, and isolation when it declares
/// partitions); else what is not: "not deadlock_free, not connected".
fn unproven(st: &ValidState, scope: Scope) -> Option<String> {
    failed(&weft_verifier::verify(st, &verify_options(st, scope, 1)))
}

/// `None` when `report` proves its state; else what it does not prove.
fn failed(report: &weft_verifier::Report) -> Option<String> {
    (!report.is_proven()).then(|| {
        let failed: Vec<&str> = report
            .properties
            .iter()
            .filter(|&&p| *report.outcome(p) != weft_verifier::Outcome::Proven)
            .map(|p| p.name())
            .collect();
        format!("not {}", failed.join(", not "))
    })
}

/// The codes the planner reports.
pub const CODES: &[weft_fabric::code::CodeInfo] = &{
    use weft_fabric::code::{CodeInfo as C, Status};
    [
        C::stable(
            "weft::plan::fabric",
            "The current and desired states are not the same fabric.",
        ),
        C {
            code: "weft::plan::internal",
            status: Status::Internal,
            summary: "A state built on the way is invalid (a bug in weft).",
        },
        C::stable(
            "weft::plan::no_safe_order",
            "No order of block writes keeps every intermediate state proven (with `--zero-outage`, or a drop or restore step that is not).",
        ),
        C {
            code: "weft::plan::not_built",
            status: Status::NotBuilt,
            summary: "A change between the two states that the planner does not plan yet.",
        },
        C::stable(
            "weft::plan::outage",
            "The only plan found takes more routes out of service than `--max-outage-pairs` allows.",
        ),
        C::stable(
            "weft::plan::unproven",
            "The desired state is not proven; weft plans only toward a proven state.",
        ),
    ]
};

//! What `weft apply` proves on the fabric before it writes: a plan file's steps proven again
//! on the tables read off the fabric ([`reprove`]), and the way from what a fabric runs to a
//! desired state planned and proven on what was read ([`plan_from_fabric`]).
//!
//! The fabric is read as `weft audit` reads it ([`crate::audit::state_of`]: LIDs, every
//! switch's LFT up to its LinearFDBTop and MFT, the VFs the fabric shows), plus, when the plan writes
//! P_Keys or declares partitions, every end port's and VF's P_Key table slot by slot. SL→VL
//! tables and path SLs are not read: every path counts on VL 0, which can only add channel
//! dependencies, so a step proven here is proven with whatever VLs the fabric uses (a plan
//! whose safety rests on VLs may be refused here although it is safe).

use crate::audit::{self, AuditError};
use crate::discover::{Discovery, VfError};
use crate::observe::VfId;
use crate::read::{read_end_pkeys, read_lfts, read_mfts, read_pkeys, read_vfs};
use crate::transport::{Counted, SmpError, TransportExt};
use std::collections::BTreeMap;
use weft_fabric::{FabricState, PortRef, StateErrors, ValidState, WireDiff, WireView};
use weft_formats::plan::{Plan, SmpWrite};
use weft_verifier::isolation::End;
use weft_verifier::Scope;

/// A plan proven again on the fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reproved {
    /// SMPs the reading took.
    pub smps: usize,
    /// What the proof could not cover, for the report.
    pub notes: Vec<String>,
}

/// Why a plan is not written on the proof it carries.
#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    /// The fabric could not be read.
    #[error("reading the fabric to prove the plan on it: {0}")]
    Read(#[from] AuditError),
    /// An SMP failed.
    #[error("reading the fabric to prove the plan on it: {0}")]
    Smp(#[from] SmpError),
    /// What the fabric runs is not a state.
    #[error(
        "what the fabric runs is not a state the plan can be proven on; nothing was written:\n{0}"
    )]
    Invalid(StateErrors),
    /// The plan's declared partitions name ports the fabric does not have.
    #[error("the plan's partitions do not fit the fabric: {0}; nothing was written")]
    Partitions(String),
    /// A step is not safe.
    #[error("step {step} of the plan is not safe on the fabric as it runs: {why}; nothing was written{}",
        if *.path_sls { " (the plan was proven with path SLs and SL→VL tables, which weft does not read off a fabric: `--no-reprove` writes it on the proof it carries, when its digest matches)" } else { "" })]
    Unsafe {
        /// The step (from 1).
        step: usize,
        /// What its check found.
        why: String,
        /// Whether the plan's own proof rests on VLs.
        path_sls: bool,
    },
}

impl weft_fabric::code::Coded for ProofError {
    /// The error's registered code ([`crate::CODES`]): the reading's own, or the proof's.
    fn code(&self) -> &'static str {
        match self {
            ProofError::Read(e) => e.code(),
            ProofError::Smp(e) => e.code(),
            ProofError::Invalid(_) => "weft::deploy::fabric_invalid",
            ProofError::Partitions(_) => "weft::deploy::partitions",
            ProofError::Unsafe { .. } => "weft::deploy::unsafe_step",
        }
    }
}

/// Whether the plan writes P_Keys or declares partitions: then every end port's P_Key table
/// is read, to prove `isolated`.
fn pkeys_matter(plan: &Plan) -> bool {
    !plan.partitions.is_empty()
        || plan
            .steps
            .iter()
            .flat_map(|s| &s.writes)
            .any(|w| matches!(w, SmpWrite::Pkeys { .. } | SmpWrite::Vport { .. }))
}

/// The VF to read for each VF of `st`, in order.
fn vf_ids(st: &FabricState) -> Vec<VfId> {
    st.lids
        .vports
        .iter()
        .map(|v| VfId {
            host: st.fabric.node(v.host.node).guid(),
            port: v.host.port,
            vf: v.vf,
            guid: v.guid,
        })
        .collect()
}

/// Reads every end port's and VF's P_Key table (slot by slot, as the checker takes them) into
/// `tables`, keyed as the checker keys end ports of `st`.
fn read_pkey_tables(
    t: &mut impl TransportExt,
    d: &Discovery,
    st: &FabricState,
    wire: &WireView,
    vfs: bool,
    tables: &mut BTreeMap<End, Vec<u16>>,
) -> Result<(), SmpError> {
    for ((g, p), keys) in read_end_pkeys(t, d)? {
        // Adapters folded into a hypervisor (a vSwitch's VFs) are not end ports of `st`.
        if let Some(id) = st.fabric.find_guid(g) {
            tables.insert((PortRef::new(id, p.0), None), keys.slots().to_vec());
        }
    }
    let read = read_vfs(t, d, &d.vf_ports(wire), &vf_ids(st), vfs);
    for (v, r) in st.lids.vports.iter().zip(read) {
        match r {
            Ok(Ok(vf)) => {
                tables.insert((v.host, Some(v.vf)), vf.pkeys.slots().to_vec());
            }
            // Not addressable: the checker keeps the table the state says (none: the
            // default key); a write to it is refused when it is resolved.
            Ok(Err(_)) | Err(SmpError::Status { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Proves `plan`'s steps again on the fabric `d` discovered, read through `t` (with `vfs`, VFs
/// are also addressed through their hypervisor's port, as the `sim` fabric does): every step
/// loop-free, deadlock-free (every path on VL 0), connected and, where it writes P_Keys or
/// the plan declares partitions, isolated in every mix, as `weft plan` proved them.
pub fn reprove(
    t: &mut impl TransportExt,
    d: &Discovery,
    plan: &Plan,
    vfs: bool,
) -> Result<Reproved, ProofError> {
    let (checks, mut reproved) = checks(t, d, plan, vfs)?;
    if let Some((i, c)) = checks.iter().enumerate().find(|(_, c)| !c.is_proven()) {
        return Err(ProofError::Unsafe {
            step: i + 1,
            why: weft_plan::why(c),
            path_sls: plan.proof.path_sls,
        });
    }
    // SL→VL and VL arbitration writes: no mix drops or stalls a lane that may be in use,
    // knowing what the arbitration tables hold when the plan writes some.
    let arbitration = plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .any(|w| matches!(w, SmpWrite::VlArb { .. }));
    let known = if arbitration {
        let mut c = Counted::new(t);
        let read = crate::read::read_vlarbs(&mut c, d)?;
        reproved.smps += c.gets();
        weft_plan::qos::known_blocks(read.iter().map(|((g, p), arb)| (*g, p.0, arb)))
    } else {
        BTreeMap::new()
    };
    if let Err(h) = weft_plan::qos::check_with(&known, &plan.steps) {
        return Err(ProofError::Unsafe {
            step: h.step,
            why: h.why,
            path_sls: plan.proof.path_sls,
        });
    }
    Ok(reproved)
}

/// The checks [`reprove`] makes of `plan`'s steps on the fabric `d` discovered: one per step,
/// up to the first that is not proven (see [`weft_plan::check_steps`]), and what the reading
/// took and did not cover.
pub fn checks(
    t: &mut impl TransportExt,
    d: &Discovery,
    plan: &Plan,
    vfs: bool,
) -> Result<(Vec<weft_verifier::transition::StepCheck>, Reproved), ProofError> {
    let mut t = Counted::new(t);
    let mut state = audit::state_of(&mut t, d, &plan.fabric_name, plan.wire.as_ref())?;
    if vfs {
        audit::vfs_through_hosts(&mut t, d, plan, &mut state)?;
    }
    let mut tables = BTreeMap::new();
    if pkeys_matter(plan) {
        let wire = plan.wire.as_ref().unwrap_or(&d.view);
        read_pkey_tables(&mut t, d, &state, wire, vfs, &mut tables)?;
    }
    let smps = t.gets();
    let start = ValidState::new(state).map_err(ProofError::Invalid)?;
    let (declared, unseen) =
        weft_plan::pkeys::declared(plan, &start).map_err(ProofError::Partitions)?;
    let scope = match plan.proof.scope.as_str() {
        "hca-to-hca" => Scope::HcaToHca,
        _ => Scope::All,
    };
    let checks = weft_plan::check_steps_read(&start, &plan.steps, scope, &declared, Some(&tables));
    let mut notes = Vec::new();
    // VFs the plan's fabric has but this one does not show (a vSwitch addressed in vendor
    // ways): routes toward their LIDs were proven when the plan was made, not again here.
    let declared_vfs: usize = plan
        .wire
        .as_ref()
        .map_or(0, |w| w.vf_hosts.values().map(|&n| usize::from(n)).sum());
    let seen = start.lids.vports.len();
    if declared_vfs > seen {
        notes.push(format!(
            "{} of the {declared_vfs} VFs of the plan's vSwitch hypervisors are not on the \
             fabric as read; routes toward their LIDs were proven when the plan was made, not \
             again on the fabric",
            declared_vfs - seen
        ));
    }
    let qos = plan.qos_smps();
    if qos > 0 {
        notes.push(format!(
            "the plan's {qos} SL→VL and VL arbitration write(s) add no credit loop nor \
             forwarding loop in any mix (every path counted on VL 0 holds for any VLs) and, \
             from what they say they replace, drop no SL a table sends to a data VL nor leave \
             a VL unscheduled (the arbitration tables read before the plan); the SLs hosts use, \
             the SL→VL tables the plan does not write and the ports' operational VLs (a VL \
             above them drops its packets) are not read"
        ));
    }
    if unseen > 0 {
        notes.push(format!(
            "{unseen} partition membership(s) of VFs the fabric does not show are not part of \
             the proof of isolation on the fabric (they were proven when the plan was made)"
        ));
    }
    Ok((checks, Reproved { smps, notes }))
}

/// Why no plan was made from what the fabric runs.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The state has QoS tables, which are not written over SMPs.
    #[error(
        "not built yet: planning a build directory's SL→VL and VL arbitration tables from \
         what the fabric runs; hand the state's opensm.conf to OpenSM (`opensm -Q -F`)"
    )]
    Qos,
    /// The fabric is not the state's.
    #[error("the fabric is not the one this state is for (assigning LIDs is not built yet); nothing was written:\n  {}",
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Stale(Vec<WireDiff>),
    /// An SMP failed.
    #[error("reading the fabric: {0}")]
    Smp(#[from] SmpError),
    /// A VF the transport cannot reach.
    #[error(
        "not built yet: reading {0} (a vSwitch shown as a switch with one adapter per VF is \
         read by directed route; vendor vPort attributes are not built)"
    )]
    VfNotBuilt(String),
    /// A VF that cannot be addressed.
    #[error("{0}; nothing was written")]
    Vf(String),
    /// What the fabric runs is not a valid state.
    #[error(
        "what the fabric runs is not a valid state for this fabric; nothing was written:\n{0}"
    )]
    Invalid(StateErrors),
    /// No plan.
    #[error("no plan from what the fabric runs: {0}")]
    NoPlan(weft_plan::PlanError),
}

impl weft_fabric::code::Coded for LiveError {
    /// The error's registered code ([`crate::CODES`]): an SMP's own, or the planning's.
    fn code(&self) -> &'static str {
        match self {
            LiveError::Qos => "weft::deploy::not_built_qos",
            LiveError::Stale(_) => "weft::deploy::wrong_fabric",
            LiveError::Smp(e) => e.code(),
            LiveError::VfNotBuilt(_) => "weft::deploy::not_built",
            LiveError::Vf(_) => "weft::deploy::unaddressable",
            LiveError::Invalid(_) => "weft::deploy::fabric_invalid",
            LiveError::NoPlan(_) => "weft::deploy::no_plan",
        }
    }
}

/// What a planned way from a fabric took.
#[derive(Debug)]
pub struct Live {
    /// The plan (every step proven on what was read).
    pub plan: Plan,
    /// Switches whose tables were read.
    pub switches: usize,
    /// SMPs the reading took.
    pub smps: usize,
}

/// Reads what the fabric `d` discovered runs (every switch's LFT and MFT, the P_Keys of the ports
/// `desired` sets, every VF's LID and P_Key table), as a state holds it
/// ([`crate::observe`]: tables slot by slot, as the plan writes them), and plans the way from
/// it to `desired` exactly (as `weft plan --full`: every step proven), with a break-before-make
/// outage of at most `max_outage_pairs` routes (`None`: any; `Some(0)`: none).
pub fn plan_from_fabric(
    t: &mut impl TransportExt,
    d: &Discovery,
    desired: &ValidState,
    vfs: bool,
    max_outage_pairs: Option<u64>,
) -> Result<Live, LiveError> {
    let st = desired.state();
    let qos = st
        .switches
        .values()
        .any(weft_fabric::SwitchState::has_sl2vl)
        || st
            .ports
            .values()
            .any(|p| p.sl2vl.is_some() || p.vlarb.is_some());
    if qos {
        return Err(LiveError::Qos);
    }
    let wire = WireView::of(st);
    let diffs = wire.diff(&d.view.fold_vswitches(&wire));
    if !diffs.is_empty() {
        return Err(LiveError::Stale(diffs));
    }
    let mut t = Counted::new(t);
    let lfts = read_lfts(&mut t, d)?;
    let mut cur = st.clone();
    for (id, sw) in &mut cur.switches {
        let g = cur.fabric.node(*id).guid();
        sw.lft = lfts.get(&g).cloned().unwrap_or_default();
    }
    // The MFTs as the fabric holds them (a desired state without multicast keeps them:
    // `weft_plan::mft::keep_current`).
    cur.multicast.mfts.clear();
    for (g, read) in read_mfts(&mut t, d)? {
        if let Some(id) = cur.fabric.find_guid(g) {
            if !read.mft.is_empty() {
                cur.multicast.mfts.insert(id, read.mft);
            }
        }
    }
    let ports: Vec<(PortRef, usize)> = cur
        .ports
        .iter()
        .filter_map(|(p, s)| Some((*p, s.pkeys.as_ref()?.len())))
        .collect();
    for (p, len) in ports {
        let g = cur.fabric.node(p.node).guid();
        let blocks = len.div_ceil(crate::smp::PKEY_BLOCK).max(1) as u16;
        let keys = read_pkeys(&mut t, d, (g, p.port), blocks)?;
        if let Some(s) = cur.ports.get_mut(&p) {
            // A port the fabric does not show has no table, nor one holding the default key
            // alone.
            s.pkeys = keys.and_then(|k| k.to_state());
        }
    }
    // The VFs: each LID and P_Key table as the fabric holds it.
    let read = read_vfs(&mut t, d, &d.vf_ports(&wire), &vf_ids(&cur), vfs);
    let f = &cur.fabric;
    for (v, r) in cur.lids.vports.iter_mut().zip(read) {
        let name = || format!("`{}` port {}", f.node(v.host.node).name(), v.host.port.0);
        match r {
            Ok(Ok(vf)) => {
                v.lid = vf.lid;
                v.pkeys = vf.pkeys.to_state();
            }
            Ok(Err(e @ VfError::NotFound { .. })) => {
                return Err(LiveError::VfNotBuilt(format!("{e} ({})", name())))
            }
            Ok(Err(e)) => return Err(LiveError::Vf(format!("{e} ({})", name()))),
            Err(e) => return Err(LiveError::Smp(e)),
        }
    }
    let smps = t.gets();
    let current = ValidState::new(cur).map_err(LiveError::Invalid)?;
    let opts = weft_plan::Options {
        full: true,
        max_outage_pairs,
        fill_at_once: true,
        ..weft_plan::Options::default()
    };
    let p = weft_plan::plan(&current, desired, &opts).map_err(LiveError::NoPlan)?;
    Ok(Live {
        plan: p.plan,
        switches: lfts.len(),
        smps,
    })
}

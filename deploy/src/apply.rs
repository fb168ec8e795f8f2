//! Transactions: a plan written to a fabric so that it ends in exactly the old state or
//! exactly the new one, and says which — or, when another writer got in the way, exactly
//! which block holds what.
//!
//! 1. Discover the fabric and compare it with the plan's wire view: any difference refuses
//!    the plan, naming each one, before anything is written.
//! 2. Prove the plan's steps again on the tables read off the fabric ([`crate::prove`]);
//!    `--no-reprove` skips that only for a plan whose digest matches its content.
//! 3. Read every block the plan touches; one that does not hold the plan's `old` refuses the
//!    plan (the fabric moved on since it was planned), naming the block.
//! 4. Journal every block, before and after, to disk (fsync).
//!
//!    A plan with more blocks than one part ([`ApplyOptions::part`]) does 3 to 5 part by
//!    part instead (`apply/parts.rs`): each part read, journaled (appended, fsync), checked on that
//!    reading, written and read back before the next part is read — one Get per block before
//!    its Set, where a whole snapshot would be too old to stand for the checks. A block of a
//!    later part that does not hold the plan's `old` stops the apply, which rolls back.
//! 5. Apply the steps in order, each in parts of `PART` blocks. Before a part, its blocks
//!    must hold what the journal says they hold before the step (or already what the step
//!    writes), read again unless this apply read them less than half the settling time
//!    before: a block another writer changed stops the apply (compare-and-swap). The part's
//!    SMPs go out together, every response is checked, and every block is read back. LinearFDBTop
//!    is raised right after the step that first writes above it (stale entries between the
//!    old and the new top cleared first, in that step), so the new entries appear together,
//!    as the step's proof allows. MulticastFDBTop likewise, on switches that support it
//!    (their port 0's CapabilityMask says so; ibsim's do not, and forward by every MFT block
//!    up to their cap): raised right after the step that first sets a mask above it.
//! 6. After the last step, a settling time (another writer's SMPs in flight land), then every
//!    block is read once more: one that does not hold what the plan wrote was changed by
//!    another writer.
//! 7. On any failure — an SMP, a read-back, another writer, the journal, a stop request —
//!    undo the steps that began, last first, writing each block's journaled `before` only
//!    where the block still holds what this apply wrote (another writer's block is left as
//!    it is, and named). Each undo step is the reverse of a proven step: the states it passes
//!    through are the ones that step's proof covered.
//!
//! A crash leaves the journal; [`recover`] reads the fabric, checks that it holds a state the
//! journal's steps pass through, and rolls back (or forward) from there.

use crate::discover::{discover, DiscoverError, Discovery, VfError};
use crate::journal::{self, Block, Event, Header, Journal, JournalError, JournalFault, Writer};
use crate::observe::VfId;
use crate::prove::{LiveError, ProofError};
use crate::smp::{self, Attr, DrPath, Payload, PortInfo, SwitchInfo, PAYLOAD};
use crate::transport::{SmpError, Target, Transport, TransportExt};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_formats::plan::{vlarb_block, Plan, SmpWrite, LFT_BLOCK, PKEY_BLOCK};

mod parts;
use weft_fabric::{Guid, PortNum, ValidState, WireDiff};

/// What `weft apply` takes as the proof of a plan's steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProofMode {
    /// Prove every step again on the tables read off the fabric (the default).
    #[default]
    OnFabric,
    /// Trust the proof the plan carries, when its digest matches its content (an edited or
    /// damaged plan is refused).
    TrustDigest,
}

/// How to apply.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// The journal file.
    pub journal: PathBuf,
    /// Where the lock files live (one per SM port).
    pub lock_dir: PathBuf,
    /// Whether the transport addresses a VF through its hypervisor's port (the `sim` fabric
    /// does). Either way a VF the fabric presents as a node of its own (a vSwitch shown as a
    /// switch with one channel adapter per VF, as Paper A describes and as ibsim can model)
    /// is written by directed route to that node.
    pub vfs: bool,
    /// What proves the plan's steps.
    pub proof: ProofMode,
    /// How long to wait after the last write before every block is read once more (SMPs of
    /// another writer still in flight land by then), and twice the longest a step's Sets may
    /// follow the reads that checked its blocks.
    pub settle: Duration,
    /// A journal failure to inject (drills on the `sim` fabric).
    pub journal_fault: Option<JournalFault>,
    /// Set to stop: the apply stops before its next step and rolls back.
    pub stop: Option<Arc<AtomicBool>>,
    /// For a desired state (a build directory), the most routes the plan worked out against
    /// the live tables may take out of service at its worst step (break-before-make):
    /// `Some(0)` for none, `None` for any (as `weft plan --max-outage-pairs`).
    pub max_outage_pairs: Option<u64>,
    /// Blocks read, journaled, checked, written and read back together
    /// ([`ApplyOptions::PART`] unless a test says otherwise). A plan with more blocks is
    /// journaled part by part (see the module's doc): each part's reading before the journal
    /// is the check before its Sets, one Get per block, not two.
    pub part: usize,
}

impl ApplyOptions {
    /// Options with the journal at `journal` and locks in `lock_dir`; VFs by directed route
    /// only, every step proven on the fabric, no settling time, no fault.
    pub fn new(journal: PathBuf, lock_dir: PathBuf) -> ApplyOptions {
        ApplyOptions {
            journal,
            lock_dir,
            vfs: false,
            proof: ProofMode::OnFabric,
            settle: Duration::ZERO,
            journal_fault: None,
            stop: None,
            max_outage_pairs: None,
            part: ApplyOptions::PART,
        }
    }

    /// Blocks per part by default: small enough that reading them takes far less than half a
    /// settling time on any fabric that answers at all.
    pub const PART: usize = 4096;
}

/// What happened, step by step (for a progress display).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Discovery found this many nodes and links.
    Discovered {
        /// Nodes.
        nodes: usize,
        /// Links.
        links: usize,
    },
    /// Reading the fabric's tables and proving the plan on them.
    Proving,
    /// Reading every block the plan touches.
    Snapshot,
    /// Step `step` (from 0) of `of` goes out with `smps` SMPs.
    Step {
        /// The step.
        step: usize,
        /// Steps in all.
        of: usize,
        /// Its SMPs.
        smps: usize,
    },
    /// Waiting for other writers' SMPs, then reading every block once more.
    Verifying,
    /// Undoing step `step`.
    Undo {
        /// The step.
        step: usize,
    },
}

/// What the fabric holds at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Final {
    /// Every block the plan touches holds the new value.
    New,
    /// Every block holds what it held before.
    Old,
    /// Neither: these blocks hold something else, another writer's, or could not be read
    /// (each named, with what it holds).
    Mixed(Vec<String>),
    /// The journal records no writes: there was nothing to recover.
    Nothing,
}

/// How an apply ended (when it could start at all).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The state the fabric is in.
    pub state: Final,
    /// Why it was rolled back, if it was.
    pub failure: Option<String>,
    /// Steps that landed whole (before any rollback).
    pub steps_done: usize,
    /// Set SMPs sent (retries counted once per try by the transport, not here).
    pub sets: usize,
    /// Get SMPs sent (discovery, reading, snapshot, checks and read-back).
    pub gets: usize,
    /// Ops of the plan the apply visited to work out LinearFDBTop and MulticastFDBTop raises
    /// and its snapshot: its own bookkeeping, a count a test holds in proportion to the blocks
    /// written (a lookup that scans every op per block shows here).
    pub visits: usize,
    /// What the report adds: what the proof did not cover, a journal that could not record
    /// the end.
    pub notes: Vec<String>,
    /// Whether the journal still records an apply that did not end (recover it with
    /// `weft apply --recover`).
    pub journal_open: bool,
    /// Per step of the plan that takes destinations out of service (break-before-make), how
    /// long they were out as measured here: from its first Set to the end of the read-back of
    /// the step that restores them (an upper bound on the real outage). Empty for a plan that
    /// keeps every route, and for steps that did not both land.
    pub outages: Vec<MeasuredOutage>,
}

/// A break-before-make drop as it happened on the fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeasuredOutage {
    /// The step that dropped them (from 0).
    pub step: usize,
    /// The step that restored them (from 0).
    pub restored: usize,
    /// Destination LIDs dropped.
    pub destinations: usize,
    /// Microseconds out of service.
    pub micros: u64,
}

/// The outages of `plan`'s drops, from when each step's Sets began and its read-back ended.
fn measured(plan: &Plan, times: &[Option<(Instant, Instant)>]) -> Vec<MeasuredOutage> {
    let mut out = Vec::new();
    for (i, s) in plan.steps.iter().enumerate() {
        if s.drops.is_empty() {
            continue;
        }
        // The step that restores the first of them (a plan restores each once).
        let restored = plan
            .steps
            .iter()
            .enumerate()
            .skip(i + 1)
            .find(|(_, r)| s.drops.iter().any(|l| r.restores.contains(l)))
            .map(|(j, _)| j);
        let (Some(j), Some(Some((began, _)))) = (restored, times.get(i)) else {
            continue;
        };
        let Some(Some((_, ended))) = times.get(j) else {
            continue;
        };
        out.push(MeasuredOutage {
            step: i,
            restored: j,
            destinations: s.drops.len(),
            micros: ended.saturating_duration_since(*began).as_micros() as u64,
        });
    }
    out
}

/// Why an apply did not start, or could not end cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Discovery failed.
    #[error(transparent)]
    Discover(#[from] DiscoverError),
    /// The fabric is not the one the plan was made for.
    #[error("the fabric differs from the one the plan was made for; nothing was written:\n  {}",
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Stale(Vec<WireDiff>),
    /// The plan has no wire view to check the fabric against.
    #[error("the plan records no wire view of its fabric (made by an older weft?); plan again")]
    NoWire,
    /// The plan's steps are not proven on the fabric.
    #[error(transparent)]
    Unproven(#[from] ProofError),
    /// No plan from what the fabric runs to a desired state.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// `--no-reprove` on a plan whose digest does not match its content.
    #[error(
        "the plan's digest does not match its content (it was edited or damaged after `weft \
         plan` wrote it): it is not written without being proven again on the fabric; \
         nothing was written"
    )]
    Edited,
    /// A block does not hold what the plan expects.
    #[error("{0}; the fabric moved on since the plan was made; nothing was written")]
    Moved(String),
    /// A node of the plan is not on the fabric or cannot be addressed.
    #[error("{0}; nothing was written")]
    Unaddressable(String),
    /// A plan that cannot be written as it stands (a block written twice in one step).
    #[error("the plan cannot be applied: {0}; nothing was written")]
    Invalid(String),
    /// Something the plan writes that this target cannot.
    #[error("not built yet: {0}")]
    Unsupported(String),
    /// Another apply holds the lock.
    #[error("another weft apply holds {0} (the SM port is being written); try again when it ends")]
    Locked(PathBuf),
    /// Another apply or recovery on this host uses the journal.
    #[error("another weft apply or recovery is using the journal {0}; try again when it ends")]
    JournalInUse(PathBuf),
    /// The lock file.
    #[error("lock {path}: {source}")]
    Lock {
        /// Its path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The journal could not be written before anything was.
    #[error("{0}; nothing was written")]
    Journal(#[from] JournalError),
    /// The fabric does not hold a state the journal's steps pass through: recovery refused.
    #[error("the fabric does not hold a state this journal's plan passes through, so it cannot be rolled back or forward from it; nothing was written:\n  {}",
        .0.join("\n  "))]
    NotJournaled(Vec<String>),
    /// An SMP failed before anything was written.
    #[error("{0}; nothing was written")]
    Smp(SmpError),
    /// The writer crashed (fault injection): the journal is left for recovery.
    #[error("{0}; the journal is left for `weft apply --recover`")]
    Crashed(SmpError),
    /// Recovery forward from a journal that holds only some of the plan's blocks.
    #[error(
        "journal {0} holds only the parts of the plan that were journaled before the apply \
         stopped (it journals a large plan part by part): it can be rolled back (`weft apply \
         --recover`), not forward; nothing was written"
    )]
    PartialJournal(PathBuf),
}

impl ApplyError {
    /// The error's registered code ([`crate::CODES`]): a wrapped error's own (discovery, the
    /// proof, the planning, the journal, an SMP), or the apply's.
    pub fn code(&self) -> &'static str {
        match self {
            ApplyError::Discover(e) => e.code(),
            ApplyError::Stale(_) => "weft::deploy::wrong_fabric",
            ApplyError::NoWire => "weft::deploy::no_wire",
            ApplyError::Unproven(e) => e.code(),
            ApplyError::Live(e) => e.code(),
            ApplyError::Edited => "weft::deploy::edited",
            ApplyError::Moved(_) => "weft::deploy::moved",
            ApplyError::Unaddressable(_) => "weft::deploy::unaddressable",
            ApplyError::Invalid(_) => "weft::deploy::invalid_plan",
            ApplyError::Unsupported(_) => "weft::deploy::not_built",
            ApplyError::Locked(_) => "weft::deploy::locked",
            ApplyError::JournalInUse(_) => "weft::deploy::journal_in_use",
            ApplyError::Lock { .. } => "weft::deploy::lock_io",
            ApplyError::Journal(e) => e.code(),
            ApplyError::NotJournaled(_) => "weft::deploy::not_journaled",
            ApplyError::Smp(e) => e.code(),
            ApplyError::Crashed(_) => "weft::deploy::crashed",
            ApplyError::PartialJournal(_) => "weft::deploy::journal_partial",
        }
    }

    /// Whether the apply could not run (a device, file or transport failed; exit 2), rather
    /// than refusing a plan or a fabric it checked (exit 1). Nothing was written either way,
    /// but after a crash.
    pub fn could_not_run(&self) -> bool {
        match self {
            // A journal of an apply that did not end refuses the next one.
            ApplyError::Journal(JournalError::Unfinished(_)) => false,
            ApplyError::Discover(_)
            | ApplyError::Lock { .. }
            | ApplyError::Journal(_)
            | ApplyError::Smp(_)
            | ApplyError::Crashed(_)
            | ApplyError::NotJournaled(_)
            | ApplyError::Unproven(ProofError::Read(_) | ProofError::Smp(_))
            | ApplyError::Live(LiveError::Smp(_) | LiveError::Qos | LiveError::VfNotBuilt(_)) => {
                true
            }
            _ => false,
        }
    }
}

/// One SMP of the plan, resolved to the wire.
#[derive(Clone, Debug)]
struct Op {
    step: usize,
    node: Guid,
    port: Option<u8>,
    target: Target,
    after: Payload,
    /// The plan's `old`, where the plan says (LFT and P_Key blocks).
    expect: Option<Payload>,
    /// For a PortInfo: the LID written into the payload read before (`after` is filled in
    /// then; nothing else of the port changes).
    lid: Option<u16>,
    /// For a SwitchInfo: the top written into the payload it holds before the op (`after` is
    /// filled in then, so a raise of one top keeps what an earlier op wrote of the other).
    top: Option<Top>,
    what: String,
}

/// A forwarding table top a SwitchInfo op raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Top {
    /// LinearFDBTop.
    Linear(u16),
    /// MulticastFDBTop.
    Multicast(u16),
}

impl Top {
    /// `before` (a SwitchInfo payload) with this top written.
    fn write(self, before: &Payload) -> Payload {
        let mut info = SwitchInfo::decode(before);
        match self {
            Top::Linear(t) => info.linear_fdb_top = t,
            Top::Multicast(t) => info.multicast_fdb_top = t,
        }
        let mut p = *before;
        info.encode_into(&mut p);
        p
    }
}

fn pkey_payload(keys: &[u16]) -> Payload {
    let mut k = [0u16; PKEY_BLOCK];
    for (d, s) in k.iter_mut().zip(keys) {
        *d = *s;
    }
    smp::encode_pkeys(&k)
}

/// The SMPs of `plan`, addressed through `d`.
fn resolve(plan: &Plan, d: &Discovery, vfs: bool) -> Result<Vec<Op>, ApplyError> {
    let mut ops = Vec::new();
    let path = |g: Guid, port: Option<u8>| -> Result<DrPath, ApplyError> {
        d.path(g, port).cloned().ok_or_else(|| {
            ApplyError::Unaddressable(match port {
                Some(p) => format!("node {g} port {p} is not reachable"),
                None => format!("node {g} is not on the fabric"),
            })
        })
    };
    let switch = |g: Guid| {
        d.nodes
            .get(&g)
            .is_some_and(|f| f.info.node_type == smp::NodeType::Switch)
    };
    // The VFs the fabric shows as nodes: the adapters the wire check folded into each
    // hypervisor (with no wire view, none).
    let wire = plan.wire.as_ref().unwrap_or(&d.view);
    let vf_ports = d.vf_ports(wire);
    // An LFT or P_Key write is to a node of the plan's wire view: not to one the wire check
    // folded away (a vSwitch's switch, a VF's adapter), which no proof of the plan covers.
    let known = |g: Guid| -> Result<(), ApplyError> {
        if wire.nodes.contains_key(&g) {
            Ok(())
        } else {
            Err(ApplyError::Unaddressable(format!(
                "node {:#018x} is not in the plan's wire view (the fabric shows it behind a \
                 vSwitch folded into its hypervisor; only a `vport` write reaches a VF)",
                g.0
            )))
        }
    };
    // A forwarding table block of a switch of the plan's wire view (LFT, MFT): the whole
    // 64-byte payload before and after.
    let table_op = |step: usize,
                    sw: Guid,
                    (attr, modifier): (Attr, u32),
                    (old, new): (&Payload, &Payload),
                    what: String|
     -> Result<Op, ApplyError> {
        known(sw)?;
        if !switch(sw) {
            return Err(ApplyError::Unaddressable(format!(
                "{sw} is not a switch on the fabric"
            )));
        }
        Ok(Op {
            step,
            node: sw,
            port: None,
            target: Target {
                path: path(sw, None)?,
                attr,
                modifier,
            },
            after: *new,
            expect: Some(*old),
            lid: None,
            top: None,
            what,
        })
    };
    // An SL→VL table or VL arbitration block of a node of the plan's wire view: of a switch,
    // by its modifier (ports in it); of an end node, by directed route to the port, the
    // modifier's port fields 0 (as OpenSM sends it: the table of the port the SMP enters).
    let qos_op = |step: usize,
                  node: Guid,
                  at: QosAt,
                  (old, new): (&Payload, &Payload)|
     -> Result<Op, ApplyError> {
        known(node)?;
        let sw = switch(node);
        let ports = d.nodes.get(&node).map_or(0, |f| f.info.num_ports);
        let no_port = |p: u8| ApplyError::Unaddressable(format!("{node} has no port {p}"));
        let (attr, modifier, port, what) = match at {
            QosAt::Sl2vl(i, o) if sw => {
                if let Some(p) = [i, o].into_iter().find(|&p| p > ports) {
                    return Err(no_port(p));
                }
                (
                    Attr::SlToVl,
                    smp::sl2vl_modifier(i, o),
                    None,
                    format!("switch {node} SL→VL input {i} output {o}"),
                )
            }
            QosAt::Sl2vl(i, o) => {
                if i != 0 {
                    return Err(ApplyError::Invalid(format!(
                        "an SL→VL write to end node {node} names input port {i}: an end \
                         node's table is its port's own (input 0, output the port)"
                    )));
                }
                (Attr::SlToVl, 0, Some(o), format!("{node} port {o} SL→VL"))
            }
            QosAt::VlArb(p, block) if sw => {
                if p > ports {
                    return Err(no_port(p));
                }
                (
                    Attr::VlArb,
                    smp::vlarb_modifier(block, p),
                    None,
                    format!(
                        "switch {node} port {p} VL arbitration block {block} ({})",
                        weft_plan::qos::block_range(block)
                    ),
                )
            }
            QosAt::VlArb(p, block) => (
                Attr::VlArb,
                smp::vlarb_modifier(block, 0),
                Some(p),
                format!(
                    "{node} port {p} VL arbitration block {block} ({})",
                    weft_plan::qos::block_range(block)
                ),
            ),
        };
        Ok(Op {
            step,
            node,
            port,
            target: Target {
                path: path(node, port)?,
                attr,
                modifier,
            },
            after: *new,
            expect: Some(*old),
            lid: None,
            top: None,
            what,
        })
    };
    for (i, s) in plan.steps.iter().enumerate() {
        for w in &s.writes {
            match w {
                SmpWrite::Lft {
                    switch: sw,
                    block,
                    old,
                    new,
                } => ops.push(table_op(
                    i,
                    *sw,
                    (Attr::Lft, u32::from(*block)),
                    (old, new),
                    format!("switch {sw} LFT block {block}"),
                )?),
                SmpWrite::Mft {
                    switch: sw,
                    block,
                    position,
                    old,
                    new,
                } => ops.push(table_op(
                    i,
                    *sw,
                    (Attr::Mft, smp::mft_modifier(*block, *position)),
                    (old, new),
                    format!("switch {sw} MFT block {block} position {position}"),
                )?),
                SmpWrite::Pkeys {
                    node,
                    port,
                    block,
                    old,
                    new,
                } => {
                    known(*node)?;
                    let sw = switch(*node);
                    ops.push(Op {
                        step: i,
                        node: *node,
                        port: (!sw).then_some(*port),
                        target: Target {
                            path: path(*node, (!sw).then_some(*port))?,
                            attr: Attr::PKeyTable,
                            modifier: smp::pkey_modifier(*block, sw.then_some(*port)),
                        },
                        after: pkey_payload(new),
                        expect: Some(pkey_payload(old)),
                        lid: None,
                        top: None,
                        what: format!("{node} port {port} P_Key block {block}"),
                    });
                }
                SmpWrite::Vport {
                    node,
                    port,
                    vf,
                    guid,
                    old_lid,
                    new_lid,
                    old_pkeys,
                    new_pkeys,
                } => {
                    let id = VfId {
                        host: *node,
                        port: PortNum(*port),
                        vf: *vf,
                        guid: *guid,
                    };
                    let at = d.vf_at(&vf_ports, &id, vfs).map_err(|e| match e {
                        VfError::NotFound { .. } => ApplyError::Unsupported(format!(
                            "writing {e} (a vSwitch shown as a switch with one adapter per \
                                 VF is written by directed route; vendor vPort attributes are \
                                 not built)"
                        )),
                        e => ApplyError::Unaddressable(e.to_string()),
                    })?;
                    // A PortInfo is compared by its LID only (see `same`); no LID reads 0.
                    let lid_info =
                        |lid: &Option<u16>| smp::port_lid_write(&[0; PAYLOAD], lid.unwrap_or(0));
                    ops.push(Op {
                        step: i,
                        node: at.node,
                        port: Some(at.port),
                        target: Target {
                            path: at.path.clone(),
                            attr: Attr::PortInfo,
                            modifier: at.info_modifier,
                        },
                        after: lid_info(new_lid),
                        expect: Some(lid_info(old_lid)),
                        lid: Some(new_lid.unwrap_or(0)),
                        top: None,
                        what: format!("{node} port {port} VF {vf} LID"),
                    });
                    ops.push(Op {
                        step: i,
                        node: at.node,
                        port: Some(at.port),
                        target: Target {
                            path: at.path,
                            attr: Attr::PKeyTable,
                            modifier: at.keys_modifier,
                        },
                        after: pkey_payload(new_pkeys),
                        expect: Some(pkey_payload(old_pkeys)),
                        lid: None,
                        top: None,
                        what: format!("{node} port {port} VF {vf} P_Keys"),
                    });
                }
                SmpWrite::Sl2vl {
                    node,
                    in_port,
                    out_port,
                    old,
                    new,
                } => ops.push(qos_op(
                    i,
                    *node,
                    QosAt::Sl2vl(*in_port, *out_port),
                    (&smp::encode_sl2vl(old), &smp::encode_sl2vl(new)),
                )?),
                SmpWrite::VlArb {
                    node,
                    port,
                    block,
                    old,
                    new,
                } => ops.push(qos_op(
                    i,
                    *node,
                    QosAt::VlArb(*port, *block),
                    (
                        &smp::encode_vlarb(&vlarb_block(old)),
                        &smp::encode_vlarb(&vlarb_block(new)),
                    ),
                )?),
            }
        }
    }
    // Within a step the writes land in any order: two to one block could not be read back
    // (which landed last?) nor undone.
    let mut seen = std::collections::BTreeSet::new();
    for o in &ops {
        if !seen.insert((o.step, &o.target)) {
            return Err(ApplyError::Invalid(format!(
                "step {} writes {} twice (its writes go out in any order)",
                o.step + 1,
                o.what
            )));
        }
    }
    Ok(ops)
}

/// Where a QoS write goes: an SL→VL table (input, output port) or a VL arbitration block
/// (port, block).
#[derive(Clone, Copy, Debug)]
enum QosAt {
    Sl2vl(u8, u8),
    VlArb(u8, u8),
}

/// Compares what a Get returned with what was meant, by the fields weft writes: a PortInfo by
/// its LID, a SwitchInfo by LinearFDBTop and MulticastFDBTop (the rest of both holds state a
/// device changes on its own: PortStateChange, counters), an SLtoVLMappingTable by its 16 VLs
/// and a VLArbitrationTable block by its 32 entries (the rest of their payloads is reserved).
fn same(target: &Target, got: &Payload, want: &Payload) -> bool {
    match target.attr {
        Attr::SlToVl => smp::decode_sl2vl(got) == smp::decode_sl2vl(want),
        Attr::VlArb => smp::decode_vlarb(got) == smp::decode_vlarb(want),
        Attr::PortInfo => PortInfo::decode(got).lid == PortInfo::decode(want).lid,
        Attr::SwitchInfo => {
            let (g, w) = (SwitchInfo::decode(got), SwitchInfo::decode(want));
            (g.linear_fdb_top, g.multicast_fdb_top) == (w.linear_fdb_top, w.multicast_fdb_top)
        }
        _ => got == want,
    }
}

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Takes the lock of the SM port `guid` in the run directory `dir` (see
/// [`crate::files::lock`]: `dir` only its owner, the current user, can write; the lock file
/// created exclusively, never through a symbolic link, never truncated; released when the
/// holder exits, however it ends).
pub fn lock(dir: &Path, guid: u64, port: u8) -> Result<Lock, ApplyError> {
    let name = format!("weft-apply-{guid:016x}-{port}.lock");
    match crate::files::lock(dir, &name) {
        Ok(l) => Ok(Lock {
            _file: l.into_file(),
        }),
        Err(crate::files::FileError::Locked { path }) => Err(ApplyError::Locked(path)),
        Err(e) => Err(ApplyError::Lock {
            path: dir.join(name),
            source: std::io::Error::other(e),
        }),
    }
}

/// Takes the lock of the journal `journal` in `dir` (the run directory): two applies or
/// recoveries on one host never share a journal (the second is refused). The lock is named by
/// a hash of the journal's absolute path.
pub fn journal_lock(dir: &Path, journal: &Path) -> Result<Lock, ApplyError> {
    let parent = journal
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let abs = parent
        .canonicalize()
        .unwrap_or_else(|_| parent.to_owned())
        .join(journal.file_name().unwrap_or_default());
    // FNV-1a: a stable name from the path (a collision only makes two journals exclude each
    // other).
    let hash = abs
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    let name = format!("weft-journal-{hash:016x}.lock");
    match crate::files::lock(dir, &name) {
        Ok(l) => Ok(Lock {
            _file: l.into_file(),
        }),
        Err(crate::files::FileError::Locked { .. }) => Err(ApplyError::JournalInUse(abs)),
        Err(e) => Err(ApplyError::Lock {
            path: dir.join(name),
            source: std::io::Error::other(e),
        }),
    }
}

/// Whether `plan` was made for the fabric `d` discovered: every difference otherwise.
pub fn check_wire(plan: &Plan, d: &Discovery) -> Result<(), ApplyError> {
    let wire = plan.wire.as_ref().ok_or(ApplyError::NoWire)?;
    let diffs = wire.diff(&d.view.fold_vswitches(wire));
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(ApplyError::Stale(diffs))
    }
}

/// The SMPs `plan` sends on the fabric `d` discovered, addressed: (step, SMP, what it writes).
pub fn smps_of(plan: &Plan, d: &Discovery, vfs: bool) -> Result<Smps, ApplyError> {
    Ok(resolve(plan, d, vfs)?
        .into_iter()
        .map(|o| (o.step, o.target, o.what))
        .collect())
}

/// The SMPs a plan sends, addressed: (step, SMP, what it writes).
pub type Smps = Vec<(usize, Target, String)>;

/// SMP counters kept while applying.
#[derive(Default)]
struct Count {
    sets: usize,
    gets: usize,
    /// Ops of the plan visited while working out the raises and the snapshot (bookkeeping
    /// work, held in proportion to the blocks written).
    visits: usize,
}

/// The lock of the SM port `t` answers from.
fn sm_lock(t: &mut impl Transport, dir: &Path) -> Result<Lock, ApplyError> {
    let local = t.node_info(&DrPath::local()).map_err(ApplyError::Smp)?;
    lock(dir, local.node_guid, local.local_port)
}

/// Applies `plan` through `t`: locks the SM port, discovers the fabric and applies the plan
/// to it ([`apply_discovered`]).
pub fn apply(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let _lock = sm_lock(t, &opts.lock_dir)?;
    let d = discover(t)?;
    let gets = d.smps + 1;
    apply_discovered(t, plan, opts, &d, gets, progress)
}

/// Makes the fabric run `desired` (a `weft build` directory's state): locks the SM port,
/// discovers the fabric, reads what it runs, plans the way there (every step proven on what
/// was read) and applies that plan. A fabric that already runs it is left alone (a report
/// with no steps).
pub fn apply_state(
    t: &mut impl Transport,
    desired: &ValidState,
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Report, Plan), ApplyError> {
    let _lock = sm_lock(t, &opts.lock_dir)?;
    let d = discover(t)?;
    progress(Progress::Proving);
    let live = crate::prove::plan_from_fabric(t, &d, desired, opts.vfs, opts.max_outage_pairs)?;
    let gets = d.smps + 1 + live.smps;
    if live.plan.steps.is_empty() {
        return Ok((
            Report {
                state: Final::New,
                failure: None,
                steps_done: 0,
                sets: 0,
                gets,
                visits: 0,
                notes: Vec::new(),
                journal_open: false,
                outages: Vec::new(),
            },
            live.plan,
        ));
    }
    // Planned and proven on the tables just read: no second proof.
    let report = transact(t, &live.plan, opts, &d, gets, Vec::new(), progress)?;
    Ok((report, live.plan))
}

/// What a dry run lists the SMPs of.
#[derive(Clone, Copy, Debug)]
pub enum What<'a> {
    /// A plan file's steps.
    Plan(&'a Plan),
    /// The way from what the fabric runs to this state (planned as [`apply_state`] plans it).
    State(&'a ValidState),
}

/// Discovers the fabric under the lock, checks the plan against it (or plans the way to the
/// state from what it runs) and lists the SMPs the plan sends; writes nothing.
pub fn dry_run(
    t: &mut impl Transport,
    what: What<'_>,
    opts: &ApplyOptions,
) -> Result<(Plan, Smps), ApplyError> {
    let _lock = sm_lock(t, &opts.lock_dir)?;
    let d = discover(t)?;
    let plan = match what {
        What::Plan(p) => {
            check_wire(p, &d)?;
            p.clone()
        }
        What::State(st) => {
            crate::prove::plan_from_fabric(t, &d, st, opts.vfs, opts.max_outage_pairs)?.plan
        }
    };
    let smps = smps_of(&plan, &d, opts.vfs)?;
    Ok((plan, smps))
}

/// [`apply`] on a fabric the caller discovered, holding the lock (see [`lock`]) since before
/// it did: the plan is checked against `d`, proven on the tables read off it (or, with
/// [`ProofMode::TrustDigest`], its digest checked) and applied. `gets` counts the SMPs
/// already sent.
pub fn apply_discovered(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    d: &Discovery,
    gets: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    check_wire(plan, d)?;
    progress(Progress::Discovered {
        nodes: d.view.nodes.len(),
        links: d.view.links.len(),
    });
    let mut gets = gets;
    let mut notes = Vec::new();
    // What the plan writes, addressed (nodes there, no block twice in a step) before it is
    // proven.
    resolve(plan, d, opts.vfs)?;
    match opts.proof {
        ProofMode::OnFabric => {
            progress(Progress::Proving);
            let r = crate::prove::reprove(t, d, plan, opts.vfs)?;
            gets += r.smps;
            notes.extend(r.notes);
        }
        ProofMode::TrustDigest => {
            if !plan.digest_matches() {
                return Err(ApplyError::Edited);
            }
            notes.push(
                "not proven again on the fabric (`--no-reprove`): the steps were written on the \
                 proof the plan carries (its digest matches)"
                    .to_owned(),
            );
            let qos = plan.qos_smps();
            if qos > 0 {
                notes.push(format!(
                    "the plan's {qos} SL→VL and VL arbitration write(s) are not part of any \
                     proof it carries (`weft plan` does not plan them): which VL a packet takes \
                     while they land, and whether it is dropped or scheduled, is not proven"
                ));
            }
        }
    }
    transact(t, plan, opts, d, gets, notes, progress)
}

/// One block of one step, on the wire: what the journal says it holds before the step and
/// what the step writes.
#[derive(Clone, Debug)]
struct Cell {
    target: Target,
    before: Payload,
    after: Payload,
    what: String,
}

/// The steps of a journal, addressed through `d`: a block whose node is no longer reachable
/// has no target (it is reported as such).
fn cells(d: &Discovery, blocks: &[Block]) -> Vec<Vec<Result<Cell, String>>> {
    let steps = blocks.iter().map(|b| b.step + 1).max().unwrap_or(0);
    let mut out: Vec<Vec<Result<Cell, String>>> = vec![Vec::new(); steps];
    for b in blocks {
        let what = block_name(b);
        let cell = match target_of(d, b) {
            Some(target) => Ok(Cell {
                target,
                before: b.before,
                after: b.after,
                what,
            }),
            None => Err(format!("{what} cannot be reached")),
        };
        if let Some(s) = out.get_mut(b.step) {
            s.push(cell);
        }
    }
    out
}

fn block_name(b: &Block) -> String {
    let node = format!(
        "{}{}",
        b.node,
        b.port.map(|p| format!(" port {p}")).unwrap_or_default()
    );
    match b.attr {
        Attr::Lft => format!("switch {node} LFT block {}", b.modifier),
        Attr::SwitchInfo => {
            let (x, y) = (SwitchInfo::decode(&b.before), SwitchInfo::decode(&b.after));
            if x.linear_fdb_top == y.linear_fdb_top && x.multicast_fdb_top != y.multicast_fdb_top {
                format!("switch {node} MulticastFDBTop")
            } else {
                format!("switch {node} LinearFDBTop")
            }
        }
        Attr::Mft => format!(
            "switch {node} MFT block {} position {}",
            b.modifier & 0x1ff,
            b.modifier >> 28
        ),
        Attr::PKeyTable => format!("{node} P_Key table (modifier {:#x})", b.modifier),
        Attr::PortInfo => format!("{node} LID (PortInfo modifier {:#x})", b.modifier),
        // An end node's table is its port's (named with the node); a switch's by modifier.
        Attr::SlToVl if b.port.is_some() => format!("{node} SL→VL"),
        Attr::SlToVl => format!(
            "switch {node} SL→VL input {} output {}",
            (b.modifier >> 8) & 0xff,
            b.modifier & 0xff
        ),
        Attr::VlArb if b.port.is_some() => format!(
            "{node} VL arbitration block {} ({})",
            b.modifier >> 16,
            weft_plan::qos::block_range((b.modifier >> 16) as u8)
        ),
        Attr::VlArb => format!(
            "switch {node} port {} VL arbitration block {} ({})",
            b.modifier & 0xffff,
            b.modifier >> 16,
            weft_plan::qos::block_range((b.modifier >> 16) as u8)
        ),
        a => format!("{node} {a} (modifier {:#x})", b.modifier),
    }
}

fn target_of(d: &Discovery, b: &Block) -> Option<Target> {
    Some(Target {
        path: d.path(b.node, b.port)?.clone(),
        attr: b.attr,
        modifier: b.modifier,
    })
}

/// Why a transaction stopped going forward.
enum Stop {
    /// An SMP failed (lost, rejected, read back wrong).
    Smp(String),
    /// Another writer changed blocks this apply was about to write (each named).
    Foreign(Vec<String>),
    /// Another writer changed blocks this apply had written (each named), found after its
    /// last step.
    Changed(Vec<String>),
    /// The journal could not be written.
    Journal(String),
    /// Asked to stop.
    Asked,
    /// The writer crashed (fault injection).
    Crashed(SmpError),
}

impl Stop {
    fn describe(&self, step: usize) -> String {
        match self {
            Stop::Smp(e) => format!("step {}: {e}", step + 1),
            Stop::Foreign(blocks) => format!(
                "another writer changed the fabric (found before step {}): {}; this apply \
                 stopped",
                step + 1,
                blocks.join("; ")
            ),
            Stop::Changed(blocks) => format!(
                "another writer changed the fabric after this apply wrote it: {}",
                blocks.join("; ")
            ),
            Stop::Journal(e) => format!(
                "the journal could not be written (at step {}): {e}; rolled back without \
                 waiting for it",
                step + 1
            ),
            Stop::Asked => format!("stopped before step {} (asked to stop)", step + 1),
            Stop::Crashed(e) => e.to_string(),
        }
    }
}

/// A transaction under way: the fabric, the journal, the counters.
struct Txn<'a, T: Transport> {
    t: &'a mut T,
    j: Option<Writer>,
    count: Count,
    settle: Duration,
    /// Whether the journal failed (it then records less than happened).
    journal_failed: Option<String>,
    /// Whether the journal records an end (committed or rolled back).
    ended: bool,
    /// Per step, when its Sets began and its read-back ended (`None`: not sent by this run).
    times: Vec<Option<(Instant, Instant)>>,
    /// What each block held when this apply last read it (snapshot, check, read-back), and
    /// when that read began.
    seen: BTreeMap<Target, (Payload, Instant)>,
}

/// Blocks checked, then written, then read back together within a step (by default).
const PART: usize = ApplyOptions::PART;

impl<T: Transport> Txn<'_, T> {
    /// Journals `e`; on failure, remembers it (the caller decides what it means).
    fn event(&mut self, e: Event) -> Result<(), String> {
        let Some(w) = self.j.as_mut() else {
            return Err("no journal".to_owned());
        };
        match w.event(e) {
            Ok(()) => {
                if matches!(e, Event::Committed | Event::RolledBack) {
                    self.ended = true;
                }
                Ok(())
            }
            Err(err) => {
                let text = err.to_string();
                self.journal_failed.get_or_insert_with(|| text.clone());
                Err(text)
            }
        }
    }

    /// Reads `cells`' blocks: each result in order.
    fn read(&mut self, cells: &[&Cell]) -> Vec<Result<Payload, SmpError>> {
        let targets: Vec<Target> = cells.iter().map(|c| c.target.clone()).collect();
        self.count.gets += targets.len();
        self.t.get_all(&targets)
    }

    /// Goes forward through steps `from..`: each step's blocks checked (they hold what the
    /// journal says they hold before it, or already what it writes), its start journaled,
    /// its SMPs sent and read back, its end journaled. The steps that landed whole, or why
    /// it stopped (and at which step).
    fn forward(
        &mut self,
        steps: &[Vec<Result<Cell, String>>],
        from: usize,
        stop: Option<&AtomicBool>,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<usize, (usize, Stop)> {
        let mut done = 0;
        for (step, cells) in steps.iter().enumerate().skip(from) {
            if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                return Err((step, Stop::Asked));
            }
            let cells: Vec<&Cell> = cells
                .iter()
                .map(|c| c.as_ref().map_err(|e| (step, Stop::Smp(e.clone()))))
                .collect::<Result<_, _>>()?;
            progress(Progress::Step {
                step,
                of: steps.len(),
                smps: cells.len(),
            });
            self.event(Event::Begin { step })
                .map_err(|e| (step, Stop::Journal(e)))?;
            // The step goes out in parts (its writes land in any order, so any part first):
            // each part's blocks checked, then its Sets, then its read-back.
            let mut began = None;
            self.send(&cells, PART, &mut began).map_err(|s| (step, s))?;
            self.landed(step, began);
            done += 1;
            // The step landed: a failure to journal that rolls it back too.
            self.event(Event::Done { step })
                .map_err(|e| (step, Stop::Journal(e)))?;
        }
        Ok(done)
    }

    /// Sends `cells` (blocks of one step) in parts of `width`: each part's blocks checked,
    /// then its Sets, then its read-back; `began` is set when the first Sets go out.
    fn send(
        &mut self,
        cells: &[&Cell],
        width: usize,
        began: &mut Option<Instant>,
    ) -> Result<(), Stop> {
        let mut rest = cells;
        let mut width = width.max(1);
        while !rest.is_empty() {
            let (n, batch) = self.check(rest, &mut width)?;
            let sent = Instant::now();
            began.get_or_insert(sent);
            match run_step(self.t, &batch, &mut self.count) {
                Ok(()) => {
                    for (target, after) in batch {
                        self.seen.insert(target, (after, sent));
                    }
                }
                Err(e @ SmpError::Crashed { .. }) => return Err(Stop::Crashed(e)),
                Err(e) => return Err(Stop::Smp(e.to_string())),
            }
            rest = rest.get(n..).unwrap_or_default();
        }
        Ok(())
    }

    /// Records that step `step` landed whole: its Sets began at `began`, its read-back ended
    /// now.
    fn landed(&mut self, step: usize, began: Option<Instant>) {
        if self.times.len() <= step {
            self.times.resize(step + 1, None);
        }
        if let Some(t) = self.times.get_mut(step) {
            *t = Some((began.unwrap_or_else(Instant::now), Instant::now()));
        }
    }

    /// Compare, before swap: the first `width` of `cells` (fewer when reading them takes too
    /// long) checked to hold what the journal says they hold before the step (their Sets
    /// then go out) or already what it writes (nothing to send). The step's Sets follow the
    /// reads that checked its blocks by less than half the settling time (another writer's
    /// final reads wait a whole one): a block this apply read (snapshot, read-back) more
    /// recently than that is not read again; with no settling time, every block is. How many
    /// cells were checked, and the Sets to send.
    fn check(
        &mut self,
        cells: &[&Cell],
        width: &mut usize,
    ) -> Result<(usize, Vec<(Target, Payload)>), Stop> {
        let bound = self.settle / 2;
        loop {
            let part = cells.get(..(*width).min(cells.len())).unwrap_or(cells);
            let checked = Instant::now();
            // The oldest reading the part's checks rest on.
            let mut oldest = checked;
            let mut held: Vec<Option<Payload>> = Vec::with_capacity(part.len());
            let mut stale = Vec::new();
            for c in part {
                match self.seen.get(&c.target) {
                    Some((p, at)) if !bound.is_zero() && at.elapsed() < bound => {
                        oldest = oldest.min(*at);
                        held.push(Some(*p));
                    }
                    _ => {
                        stale.push(*c);
                        held.push(None);
                    }
                }
            }
            let mut got = self.read(&stale).into_iter();
            let mut batch = Vec::with_capacity(part.len());
            let mut foreign = Vec::new();
            for (c, h) in part.iter().zip(held) {
                let g = match h {
                    Some(p) => p,
                    None => match got.next() {
                        Some(Ok(g)) => {
                            self.seen.insert(c.target.clone(), (g, checked));
                            g
                        }
                        Some(Err(e @ SmpError::Crashed { .. })) => return Err(Stop::Crashed(e)),
                        Some(Err(e)) => return Err(Stop::Smp(e.to_string())),
                        None => return Err(Stop::Smp("a batch came back short".to_owned())),
                    },
                };
                if same(&c.target, &g, &c.before) {
                    batch.push((c.target.clone(), c.after));
                } else if !same(&c.target, &g, &c.after) {
                    // Neither: another writer's. (Already what the step writes: an apply of
                    // this same plan got here first, or a recovery finds it landed.)
                    foreign.push(format!(
                        "{} holds neither what it held before this step nor what the step writes",
                        c.what
                    ));
                }
            }
            if !foreign.is_empty() {
                return Err(Stop::Foreign(foreign));
            }
            if bound.is_zero() || oldest.elapsed() < bound {
                return Ok((part.len(), batch));
            }
            // Too slow: a smaller part, read again.
            *width = (*width / 2).max(1);
        }
    }

    /// After the settling time, reads every block once more: the ones that do not hold
    /// what the steps left (another writer changed them since).
    fn verify(&mut self, steps: &[Vec<Result<Cell, String>>]) -> Result<Vec<String>, SmpError> {
        if !self.settle.is_zero() {
            std::thread::sleep(self.settle);
        }
        // Per block, what the last step writing it leaves.
        let mut last: BTreeMap<&Target, &Cell> = BTreeMap::new();
        for c in steps.iter().flatten().flatten() {
            last.insert(&c.target, c);
        }
        let cells: Vec<&Cell> = last.into_values().collect();
        let got = self.read(&cells);
        let mut changed = Vec::new();
        for (c, g) in cells.iter().zip(got) {
            match g {
                Ok(g) if same(&c.target, &g, &c.after) => {}
                Ok(_) => changed.push(format!("{} no longer holds what this apply wrote", c.what)),
                Err(e @ SmpError::Crashed { .. }) => return Err(e),
                Err(e) => changed.push(format!("{} could not be read again: {e}", c.what)),
            }
        }
        Ok(changed)
    }

    /// Undoes steps `last` down to 0: each block that holds what its step wrote gets what the
    /// journal says it held before the step, and is read back; a block that holds what it
    /// held before is left; one that holds anything else (another writer's) is left as it is
    /// and named. What could not be put back, or was left as another writer's.
    fn undo(
        &mut self,
        steps: &[Vec<Result<Cell, String>>],
        last: usize,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Vec<String>, SmpError> {
        let mut left = Vec::new();
        for step in (0..=last.min(steps.len().saturating_sub(1))).rev() {
            progress(Progress::Undo { step });
            let cells: Vec<&Cell> = steps
                .get(step)
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_ref().ok())
                .collect();
            // Undo goes on past a failed block: every other block still goes back.
            let mut tries = 0;
            loop {
                tries += 1;
                let got = self.read(&cells);
                let mut batch = Vec::new();
                let mut foreign = Vec::new();
                let mut unread = Vec::new();
                for (c, g) in cells.iter().zip(got) {
                    match g {
                        Ok(g) if same(&c.target, &g, &c.after) => {
                            batch.push((c.target.clone(), c.before));
                        }
                        Ok(g) if same(&c.target, &g, &c.before) => {}
                        Ok(_) => foreign.push(format!(
                            "{} holds another writer's value: left as it is",
                            c.what
                        )),
                        Err(e @ SmpError::Crashed { .. }) => return Err(e),
                        Err(e) => unread.push(format!("{}: {e}", c.what)),
                    }
                }
                let r = run_step(self.t, &batch, &mut self.count);
                match r {
                    Err(e @ SmpError::Crashed { .. }) => return Err(e),
                    Ok(()) if unread.is_empty() => {
                        left.extend(foreign);
                        break;
                    }
                    Ok(()) | Err(_) if tries < 3 => continue,
                    Ok(()) => {
                        left.extend(foreign);
                        left.extend(
                            unread
                                .into_iter()
                                .map(|u| format!("could not put back {u}")),
                        );
                        break;
                    }
                    Err(e) => {
                        left.extend(foreign);
                        left.push(format!("could not put back step {}: {e}", step + 1));
                        break;
                    }
                }
            }
        }
        Ok(left)
    }

    /// Reads every journaled block and says which state the fabric is in: each block's value
    /// before the first step that writes it (old) and after the last (new).
    fn classify(&mut self, steps: &[Vec<Result<Cell, String>>]) -> Final {
        let mut ends: BTreeMap<&Target, (Payload, Payload, &str)> = BTreeMap::new();
        let mut unreachable = Vec::new();
        for c in steps.iter().flatten() {
            match c {
                Ok(c) => {
                    ends.entry(&c.target)
                        .and_modify(|e| e.1 = c.after)
                        .or_insert((c.before, c.after, c.what.as_str()));
                }
                Err(e) => unreachable.push(e.clone()),
            }
        }
        if ends.is_empty() && unreachable.is_empty() {
            return Final::Nothing;
        }
        let targets: Vec<Target> = ends.keys().map(|t| (*t).clone()).collect();
        self.count.gets += targets.len();
        let got = self.t.get_all(&targets);
        let (mut old, mut new) = (unreachable.is_empty(), unreachable.is_empty());
        let mut odd = unreachable;
        let mut newer = Vec::new();
        let mut older = Vec::new();
        for ((target, (before, after, what)), g) in ends.iter().zip(got) {
            match g {
                Ok(g) => {
                    let (o, n) = (same(target, &g, before), same(target, &g, after));
                    old &= o;
                    new &= n;
                    if !o && !n {
                        odd.push(format!(
                            "{what} holds neither the plan's old value nor its new one (another \
                             writer's)"
                        ));
                    } else if n && !o {
                        newer.push(format!("{what} holds the plan's new value"));
                    } else if o && !n {
                        older.push(format!("{what} holds the plan's old value"));
                    }
                }
                Err(e) => {
                    old = false;
                    new = false;
                    odd.push(format!("{what} could not be read: {e}"));
                }
            }
        }
        if new {
            Final::New
        } else if old {
            Final::Old
        } else {
            // Neither state: every block that is not as it was, and (when some hold the old
            // values) how many do.
            odd.extend(newer);
            if !older.is_empty() {
                odd.push(format!(
                    "{} other block(s) hold the plan's old value",
                    older.len()
                ));
            }
            Final::Mixed(odd)
        }
    }
}

/// Writes `plan`, proven, to the fabric `d` discovered (see the module's doc): snapshot,
/// journal, the steps with their checks, the final reading, rollback on any failure.
fn transact(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    d: &Discovery,
    gets: usize,
    notes: Vec<String>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let mut count = Count {
        sets: 0,
        gets,
        visits: 0,
    };
    let mut ops = resolve(plan, d, opts.vfs)?;
    progress(Progress::Snapshot);
    // LinearFDBTop and MulticastFDBTop: raise each after the first step writing above it.
    let mut tops = fdb_tops(t, d, &mut ops, &mut count)?;
    mft_tops(t, d, &mut ops, &mut count, &mut tops)?;
    if distinct_blocks(&ops) > opts.part.max(1) {
        // Too many blocks to read in one part: snapshot, journal and write part by part.
        return parts::transact(t, plan, opts, d, (count, tops, ops), notes, progress);
    }
    // Snapshot: every block as it is; each must hold the plan's old. A block the plan writes
    // in several steps holds, before each later write, what the write before it left.
    let (mut reads, seen) = snapshot(t, &ops, &mut count);
    let mut blocks = Vec::with_capacity(ops.len());
    let mut left: BTreeMap<Target, Payload> = BTreeMap::new();
    for (i, o) in ops.iter_mut().enumerate() {
        count.visits += 1;
        let read = reads.get_mut(i).and_then(Option::take);
        blocks.push(block_of(o, &mut left, read, &tops)?);
    }
    let header = header_of(plan, d);
    let _journal = journal_lock(&opts.lock_dir, &opts.journal)?;
    let j = Writer::create(&opts.journal, &header, &blocks, opts.journal_fault)?;
    let steps = cells(d, &blocks);
    let mut x = Txn {
        t,
        j: Some(j),
        count,
        settle: opts.settle,
        journal_failed: None,
        ended: false,
        times: Vec::new(),
        seen,
    };
    let stop = opts.stop.as_deref();
    let went = x.forward(&steps, 0, stop, progress);
    conclude(x, &steps, went, plan, opts, notes, progress)
}

/// How many blocks `ops` write (each once, however many steps write it).
fn distinct_blocks(ops: &[Op]) -> usize {
    ops.iter()
        .map(|o| &o.target)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// The journal's header for `plan` on the fabric `d` discovered.
fn header_of(plan: &Plan, d: &Discovery) -> Header {
    Header {
        format: journal::JOURNAL_FORMAT.to_owned(),
        version: 1,
        fabric: plan.fabric_name.clone(),
        from: plan.from.clone(),
        to: plan.to.clone(),
        // As the plan sees the fabric: its VFs' LIDs are the journal's to change.
        wire: plan
            .wire
            .as_ref()
            .map_or_else(|| d.view.clone(), |w| d.view.fold_vswitches(w)),
    }
}

/// The journal's block for `o`: what the block holds before it — what an earlier op of the
/// plan leaves (`left`), else `read` off the fabric, which must hold the plan's old (or differ
/// from it only where the switch does not forward by) — and what `o` writes (a LID or a top
/// filled into what the block holds before). `left` then holds what `o` leaves.
fn block_of(
    o: &mut Op,
    left: &mut BTreeMap<Target, Payload>,
    read: Option<Result<Payload, SmpError>>,
    tops: &Tops,
) -> Result<Block, ApplyError> {
    let before = match left.get(&o.target) {
        Some(p) => {
            if o.expect.is_some_and(|want| !same(&o.target, p, &want)) {
                return Err(ApplyError::Invalid(format!(
                    "{} in step {} does not start from what the step before it writes",
                    o.what,
                    o.step + 1
                )));
            }
            *p
        }
        None => {
            let read = read
                .unwrap_or_else(|| Err(SmpError::Transport("a batch came back short".into())))
                .map_err(ApplyError::Smp)?;
            if let Some(want) = &o.expect {
                if !same(&o.target, &read, want) && !tops.beyond(o, &read, want) {
                    return Err(ApplyError::Moved(format!(
                        "{} does not hold the plan's old value",
                        o.what
                    )));
                }
            }
            match o.lid {
                // Written back on undo: as read, the states "no change".
                Some(_) => smp::port_lid_write(&read, PortInfo::decode(&read).lid),
                None => read,
            }
        }
    };
    if let Some(lid) = o.lid {
        o.after = smp::port_lid_write(&before, lid);
    }
    if let Some(top) = o.top {
        o.after = top.write(&before);
    }
    left.insert(o.target.clone(), o.after);
    Ok(Block {
        step: o.step,
        node: o.node,
        port: o.port,
        attr: o.target.attr,
        modifier: o.target.modifier,
        before,
        after: o.after,
    })
}

/// Ends a transaction whose steps went as `went` says (the steps that landed, or where and
/// why it stopped): the final reading after the settling time and the commit, or the
/// rollback.
fn conclude<T: Transport>(
    mut x: Txn<'_, T>,
    steps: &[Vec<Result<Cell, String>>],
    went: Result<usize, (usize, Stop)>,
    plan: &Plan,
    opts: &ApplyOptions,
    notes: Vec<String>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let (done, failure) = match went {
        Ok(done) => {
            progress(Progress::Verifying);
            match x.verify(steps) {
                Ok(changed) if changed.is_empty() => (done, None),
                Ok(changed) => (done, Some((steps.len(), Stop::Changed(changed)))),
                Err(e) => return Err(ApplyError::Crashed(e)),
            }
        }
        Err((at, stop)) => (at.min(steps.len()), Some((at, stop))),
    };
    let Some((at, why)) = failure else {
        // Every block read back as its last write left it, and again after the settling
        // time: the new state.
        let mut notes = notes;
        if x.event(Event::Committed).is_err() {
            notes.push(format!(
                "the journal could not record the commit ({}): it still says the apply did not \
                 end; `weft apply --recover {} --forward` finds the new state and closes it",
                x.journal_failed.clone().unwrap_or_default(),
                opts.journal.display()
            ));
        }
        return Ok(Report {
            state: Final::New,
            failure: None,
            steps_done: done,
            sets: x.count.sets,
            gets: x.count.gets,
            visits: x.count.visits,
            notes,
            journal_open: !x.ended,
            outages: measured(plan, &x.times),
        });
    };
    if let Stop::Crashed(e) = why {
        return Err(ApplyError::Crashed(e));
    }
    let failure = why.describe(at.min(steps.len().saturating_sub(1)));
    rollback(x, steps, at, failure, done, notes, &opts.journal, progress)
}

/// Per op of `ops`, what its block holds for the first op writing the block (`None` for the
/// others), read in parts of [`PART`] with every part in flight together, the last steps'
/// blocks first (the first step's are then the freshest when it is checked); and each
/// block's reading with when its part began.
#[allow(clippy::type_complexity)]
fn snapshot(
    t: &mut impl Transport,
    ops: &[Op],
    count: &mut Count,
) -> (
    Vec<Option<Result<Payload, SmpError>>>,
    BTreeMap<Target, (Payload, Instant)>,
) {
    let mut firsts = Vec::new();
    let mut known = std::collections::BTreeSet::new();
    for (i, o) in ops.iter().enumerate() {
        count.visits += 1;
        if known.insert(&o.target) {
            firsts.push(i);
        }
    }
    let mut reads: Vec<Option<Result<Payload, SmpError>>> =
        std::iter::repeat_with(|| None).take(ops.len()).collect();
    let mut seen = BTreeMap::new();
    for part in firsts.rchunks(PART) {
        let targets: Vec<Target> = part
            .iter()
            .filter_map(|&i| ops.get(i).map(|o| o.target.clone()))
            .collect();
        let at = Instant::now();
        count.gets += targets.len();
        let got = t.get_all(&targets);
        for ((&i, target), r) in part.iter().zip(targets).zip(got) {
            if let Ok(p) = &r {
                seen.insert(target, (*p, at));
            }
            if let Some(slot) = reads.get_mut(i) {
                *slot = Some(r);
            }
        }
    }
    (reads, seen)
}

/// Rolls back steps `at` down to 0 after `failure`, and reports.
#[allow(clippy::too_many_arguments)]
fn rollback<T: Transport>(
    mut x: Txn<'_, T>,
    steps: &[Vec<Result<Cell, String>>],
    at: usize,
    failure: String,
    done: usize,
    mut notes: Vec<String>,
    journal: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    // A rollback the journal cannot record goes on: every state it passes through is one
    // recovery accepts (each step's blocks old, new, or the one step being undone).
    let _ = x.event(Event::RollbackBegin);
    let last = at.min(steps.len().saturating_sub(1));
    let left = x.undo(steps, last, progress).map_err(ApplyError::Crashed)?;
    let state = x.classify(steps);
    if state == Final::Old {
        let _ = x.event(Event::RolledBack);
    }
    notes.extend(left);
    if let Some(e) = &x.journal_failed {
        if !x.ended {
            notes.push(format!(
                "the journal could not be written ({e}): it still says the apply did not end; \
                 `weft apply --recover {}` checks the fabric and closes it",
                journal.display()
            ));
        }
    }
    Ok(Report {
        state,
        failure: Some(failure),
        steps_done: done,
        sets: x.count.sets,
        gets: x.count.gets,
        visits: x.count.visits,
        notes,
        journal_open: !x.ended,
        outages: Vec::new(),
    })
}

/// Sends a step and reads every block back.
fn run_step(
    t: &mut impl Transport,
    batch: &[(Target, Payload)],
    count: &mut Count,
) -> Result<(), SmpError> {
    if batch.is_empty() {
        return Ok(());
    }
    count.sets += batch.len();
    let results = t.set_all(batch);
    for ((target, want), r) in batch.iter().zip(results) {
        let got = r?;
        if !same(target, &got, want) {
            return Err(SmpError::Transport(format!(
                "{target}: the response holds other data than was written"
            )));
        }
    }
    let targets: Vec<Target> = batch.iter().map(|(t, _)| t.clone()).collect();
    count.gets += targets.len();
    for ((target, want), got) in batch.iter().zip(t.get_all(&targets)) {
        if !same(target, &got?, want) {
            return Err(SmpError::Transport(format!(
                "{target}: reads back other data than was written"
            )));
        }
    }
    Ok(())
}

/// LinearFDBTop changes a plan needs, as extra ops: raising a switch's top right after the
/// first step that writes above it.
struct Tops {
    /// Per switch: its top before.
    before: BTreeMap<Guid, u16>,
    /// Per switch that supports MulticastFDBTop: the MFT entries it forwards by before
    /// (MLIDs from 0xC000 up to its top, as an MFT index: 0 for none).
    mcast: BTreeMap<Guid, usize>,
}

impl Tops {
    /// Whether a block that differs from the plan's old differs only above the switch's top:
    /// LFT entries above LinearFDBTop, MFT masks above MulticastFDBTop (entries a switch does
    /// not forward by, which the plan counts as unset).
    fn beyond(&self, o: &Op, got: &Payload, want: &Payload) -> bool {
        if o.target.attr == Attr::Mft {
            let Some(&forwarded) = self.mcast.get(&o.node) else {
                return false;
            };
            let first = (o.target.modifier & 0x1ff) as usize * smp::MFT_BLOCK;
            return got
                .chunks_exact(2)
                .zip(want.chunks_exact(2))
                .enumerate()
                .all(|(k, (g, w))| first + k >= forwarded || g == w);
        }
        if o.target.attr != Attr::Lft {
            return false;
        }
        let Some(&top) = self.before.get(&o.node) else {
            return false;
        };
        let first = o.target.modifier as usize * LFT_BLOCK;
        got.iter()
            .zip(want)
            .enumerate()
            .all(|(k, (g, w))| first + k > usize::from(top) || g == w)
    }
}

/// Works out the LinearFDBTop raises `ops` need (an op raising each switch's top to the
/// highest entry the plan sets, right after the first step that sets one above it), and
/// clears what a raise would otherwise show: in the blocks between the old and the new top
/// that no step up to the raise writes, entries above the old top that hold anything but what
/// the plan counts them as (unset, or its `old`) — written, in the raise's step, as the plan
/// counts them (they are above the top then: no switch forwards by them).
fn fdb_tops(
    t: &mut impl Transport,
    d: &Discovery,
    ops: &mut Vec<Op>,
    count: &mut Count,
) -> Result<Tops, ApplyError> {
    let mut tops = Tops {
        before: BTreeMap::new(),
        mcast: BTreeMap::new(),
    };
    // Every switch's SwitchInfo as one batch.
    let switches = written_switches(d, ops, Attr::Lft);
    let infos: Vec<Target> = switches
        .iter()
        .map(|(_, path)| Target {
            path: (*path).clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        })
        .collect();
    count.gets += infos.len();
    let got = t.get_all(&infos);
    if got.len() != infos.len() {
        return Err(ApplyError::Smp(SmpError::Transport(
            "a batch came back short".to_owned(),
        )));
    }
    for ((g, _), r) in switches.iter().zip(got) {
        let info = SwitchInfo::decode(&r.map_err(ApplyError::Smp)?);
        tops.before.insert(*g, info.linear_fdb_top);
    }
    // Per switch: the first step that sets an entry above its top, and the top it needs.
    let mut raise: BTreeMap<Guid, (usize, usize)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.target.attr == Attr::Lft) {
        count.visits += 1;
        let before = usize::from(tops.before.get(&o.node).copied().unwrap_or(0));
        let first = o.target.modifier as usize * LFT_BLOCK;
        if let Some(k) = o.after.iter().rposition(|&p| p != 0xff) {
            if first + k > before {
                let r = raise.entry(o.node).or_insert((o.step, 0));
                r.0 = r.0.min(o.step);
                r.1 = r.1.max(first + k);
            }
        }
    }
    // Plan step s becomes 2s; a raise after step s sits at 2s + 1; empty steps are squeezed
    // out.
    for o in ops.iter_mut() {
        o.step *= 2;
    }
    let first_writes = FirstWrites::of(ops, Attr::Lft, count);
    let mut extra = Vec::new();
    for (&g, &(step, top)) in &raise {
        let Some(path) = d.path(g, None) else {
            continue;
        };
        let old_top = usize::from(tops.before.get(&g).copied().unwrap_or(0));
        // The blocks the raise shows, and what the plan counts each entry of them as until
        // a step writes it: the plan's old where a later step writes the block, else unset.
        for block in (old_top + 1) / LFT_BLOCK..=top / LFT_BLOCK {
            let first_write = first_writes.get(g, block as u32, ops, count);
            if first_write.is_some_and(|o| o.step <= 2 * step) {
                continue;
            }
            let counted = first_write
                .and_then(|o| o.expect)
                .unwrap_or([0xff; PAYLOAD]);
            let target = Target {
                path: path.clone(),
                attr: Attr::Lft,
                modifier: block as u32,
            };
            let held = t.get(&target).map_err(ApplyError::Smp)?;
            count.gets += 1;
            // Every entry above the old top as the plan counts it (those above the new top
            // stay hidden, but a later write of the block starts from the plan's old).
            let mut want = held;
            for (k, (w, c)) in want.iter_mut().zip(counted).enumerate() {
                if block * LFT_BLOCK + k > old_top {
                    *w = c;
                }
            }
            let what = || {
                format!(
                    "switch {g} LFT block {block} (entries above LinearFDBTop cleared before it \
                     is raised)"
                )
            };
            extra.extend(clear_op(2 * step, g, target, (held, want), what));
        }
        let top = Top::Linear(u16::try_from(top).unwrap_or(u16::MAX));
        extra.push(raise_op(2 * step + 1, g, path, top));
    }
    squeeze(ops, extra);
    Ok(tops)
}

/// The first op (lowest step) writing each block of one attribute, by (switch, modifier):
/// built in one pass over the ops, so working out a raise looks each block up instead of
/// scanning every op for it (switches × blocks × ops at 11 664 nodes).
struct FirstWrites(BTreeMap<(Guid, u32), usize>);

impl FirstWrites {
    /// The index of `ops`' `attr` blocks (each op visited once, counted in `count`).
    fn of(ops: &[Op], attr: Attr, count: &mut Count) -> FirstWrites {
        let mut first: BTreeMap<(Guid, u32), usize> = BTreeMap::new();
        for (i, o) in ops.iter().enumerate() {
            count.visits += 1;
            if o.target.attr != attr {
                continue;
            }
            let at = first.entry((o.node, o.target.modifier)).or_insert(i);
            if ops.get(*at).is_some_and(|f| o.step < f.step) {
                *at = i;
            }
        }
        FirstWrites(first)
    }

    /// The first op of `ops` writing `modifier` on switch `g` (one lookup, counted).
    fn get<'a>(&self, g: Guid, modifier: u32, ops: &'a [Op], count: &mut Count) -> Option<&'a Op> {
        count.visits += 1;
        self.0.get(&(g, modifier)).and_then(|&i| ops.get(i))
    }
}

/// The SwitchInfo op raising `top` on switch `g` (at `path`) in step `step`: its payload is
/// filled in from what the switch holds before the op.
fn raise_op(step: usize, g: Guid, path: &DrPath, top: Top) -> Op {
    let field = match top {
        Top::Linear(_) => "LinearFDBTop",
        Top::Multicast(_) => "MulticastFDBTop",
    };
    Op {
        step,
        node: g,
        port: None,
        target: Target {
            path: path.clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        },
        after: [0; PAYLOAD],
        expect: None,
        lid: None,
        top: Some(top),
        what: format!("switch {g} {field}"),
    }
}

/// The switches `ops` write `attr` blocks of, each once, with the route to it (a switch `d`
/// has no route to is left out: its writes fail when they are resolved).
fn written_switches<'a>(d: &'a Discovery, ops: &[Op], attr: Attr) -> Vec<(Guid, &'a DrPath)> {
    let mut switches: Vec<Guid> = ops
        .iter()
        .filter(|o| o.target.attr == attr)
        .map(|o| o.node)
        .collect();
    switches.sort_unstable();
    switches.dedup();
    switches
        .into_iter()
        .filter_map(|g| Some((g, d.path(g, None)?)))
        .collect()
}

/// The op writing `want` over `held` (a switch's table block, where they differ above its
/// top) before the top is raised, in step `step`: no `old` to expect (the plan does not count
/// what a switch does not forward by). None when they are the same.
fn clear_op(
    step: usize,
    g: Guid,
    target: Target,
    (held, want): (Payload, Payload),
    what: impl FnOnce() -> String,
) -> Option<Op> {
    (want != held).then(|| Op {
        step,
        node: g,
        port: None,
        target,
        after: want,
        expect: None,
        lid: None,
        top: None,
        what: what(),
    })
}

/// Adds `extra` to `ops` (whose steps were doubled to make room) and numbers the steps again
/// from 0 with none empty, in order.
fn squeeze(ops: &mut Vec<Op>, extra: Vec<Op>) {
    ops.extend(extra);
    let mut used: Vec<usize> = ops.iter().map(|o| o.step).collect();
    used.sort_unstable();
    used.dedup();
    for o in ops.iter_mut() {
        o.step = used.binary_search(&o.step).unwrap_or(0);
    }
    ops.sort_by_key(|o| o.step);
}

/// Works out the MulticastFDBTop raises `ops` need, as [`fdb_tops`] does LinearFDBTop's:
/// on each switch that supports the field (its port 0's CapabilityMask has
/// IsMulticastFDBTopSupported; a switch that does not forwards by every block up to its cap,
/// ibsim's among them), an op raising the top to the highest MLID the plan sets a mask for,
/// right after the first step that sets one above it; and, in the blocks between the old and
/// the new top that no step up to the raise writes, masks above the old top that hold
/// anything but what the plan counts them as (empty, or its `old`) written, in the raise's
/// step, as the plan counts them (they are above the top then: no switch forwards by them).
fn mft_tops(
    t: &mut impl Transport,
    d: &Discovery,
    ops: &mut Vec<Op>,
    count: &mut Count,
    tops: &mut Tops,
) -> Result<(), ApplyError> {
    for (g, path) in written_switches(d, ops, Attr::Mft) {
        let (port0, _) = t.port_info(path, 0).map_err(ApplyError::Smp)?;
        count.gets += 1;
        if port0.capability_mask & smp::CAP_MCAST_FDB_TOP == 0 {
            continue;
        }
        let (info, _) = t.switch_info(path).map_err(ApplyError::Smp)?;
        count.gets += 1;
        let forwarded = weft_fabric::Mlid::new(info.multicast_fdb_top).map_or(0, |m| m.index() + 1);
        tops.mcast.insert(g, forwarded);
    }
    // Per switch: the first step that sets a mask above its top, and the MFT index it needs.
    let mut raise: BTreeMap<Guid, (usize, usize)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.target.attr == Attr::Mft) {
        let Some(&forwarded) = tops.mcast.get(&o.node) else {
            continue;
        };
        let first = (o.target.modifier & 0x1ff) as usize * smp::MFT_BLOCK;
        let masks = smp::decode_mft(&o.after);
        if let Some(k) = masks.iter().rposition(|&m| m != 0) {
            if first + k >= forwarded {
                let r = raise.entry(o.node).or_insert((o.step, 0));
                r.0 = r.0.min(o.step);
                r.1 = r.1.max(first + k);
            }
        }
    }
    if raise.is_empty() {
        return Ok(());
    }
    for o in ops.iter_mut() {
        o.step *= 2;
    }
    let first_writes = FirstWrites::of(ops, Attr::Mft, count);
    let mut extra = Vec::new();
    for (&g, &(step, top)) in &raise {
        let (Some(path), Some(node)) = (d.path(g, None), d.nodes.get(&g)) else {
            continue;
        };
        let forwarded = tops.mcast.get(&g).copied().unwrap_or(0);
        for block in forwarded / smp::MFT_BLOCK..=top / smp::MFT_BLOCK {
            for position in 0..smp::mft_positions(node.info.num_ports) {
                let modifier = smp::mft_modifier(block as u16, position);
                let first_write = first_writes.get(g, modifier, ops, count);
                if first_write.is_some_and(|o| o.step <= 2 * step) {
                    continue;
                }
                let counted = first_write.and_then(|o| o.expect).unwrap_or([0; PAYLOAD]);
                let target = Target {
                    path: path.clone(),
                    attr: Attr::Mft,
                    modifier,
                };
                let held = t.get(&target).map_err(ApplyError::Smp)?;
                count.gets += 1;
                let mut want = held;
                for (k, (w, c)) in want
                    .chunks_exact_mut(2)
                    .zip(counted.chunks_exact(2))
                    .enumerate()
                {
                    if block * smp::MFT_BLOCK + k >= forwarded {
                        w.copy_from_slice(c);
                    }
                }
                let what = || {
                    format!(
                        "switch {g} MFT block {block} position {position} (masks above \
                         MulticastFDBTop cleared before it is raised)"
                    )
                };
                extra.extend(clear_op(2 * step, g, target, (held, want), what));
            }
        }
        let mlid = u16::try_from(usize::from(weft_fabric::Mlid::MIN.get()) + top)
            .unwrap_or(weft_fabric::Mlid::MAX.get());
        extra.push(raise_op(2 * step + 1, g, path, Top::Multicast(mlid)));
    }
    squeeze(ops, extra);
    Ok(())
}

/// How to recover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Put every block back as it was (the default).
    Back,
    /// Finish the plan: every block as the plan writes it.
    Forward,
}

/// The step a fabric is in, by the journal: every block holds what the last step before it
/// that writes the block left (or what it held before the plan), except the blocks of that
/// step, which hold that or what the step writes (a step landing, or being undone). `None`
/// when no step up to the last that began fits: then each block that holds none of the
/// values the plan gives it is named.
fn in_flight(
    steps: &[Vec<Result<Cell, String>>],
    held: &BTreeMap<Target, Payload>,
    last_begun: Option<usize>,
) -> Result<usize, Vec<String>> {
    // Per block: its writes in step order.
    let mut writes: BTreeMap<&Target, Vec<(usize, &Cell)>> = BTreeMap::new();
    let mut why = Vec::new();
    for (s, cells) in steps.iter().enumerate() {
        for c in cells {
            match c {
                Ok(c) => writes.entry(&c.target).or_default().push((s, c)),
                Err(e) => why.push(e.clone()),
            }
        }
    }
    if !why.is_empty() {
        return Err(why);
    }
    let fits = |j: usize| {
        writes.iter().all(|(target, w)| {
            let Some(g) = held.get(*target) else {
                return false;
            };
            let is = |p: &Payload| same(target, g, p);
            match w.iter().position(|(s, _)| *s >= j) {
                // Written in step j: before or after it.
                Some(i) if w.get(i).is_some_and(|(s, _)| *s == j) => {
                    w.get(i).is_some_and(|(_, c)| is(&c.before) || is(&c.after))
                }
                // Next written after j: what it holds before that write.
                Some(i) => w.get(i).is_some_and(|(_, c)| is(&c.before)),
                // Not written from j on: what the last write left.
                None => w.last().is_some_and(|(_, c)| is(&c.after)),
            }
        })
    };
    // A step that never began holds its old values; a rollback may have undone any step up
    // to the last that began.
    let last = last_begun.unwrap_or(0).min(steps.len().saturating_sub(1));
    if let Some(j) = (0..=last).find(|&j| fits(j)) {
        return Ok(j);
    }
    for (target, w) in &writes {
        let Some((_, first)) = w.first() else {
            continue;
        };
        match held.get(*target) {
            None => why.push(format!("{} could not be read", first.what)),
            Some(g) => {
                let known = w
                    .iter()
                    .any(|(_, c)| same(target, g, &c.before) || same(target, g, &c.after));
                if !known {
                    why.push(format!(
                        "{} holds neither what it held before the plan nor anything the plan \
                         writes to it (another writer's)",
                        first.what
                    ));
                }
            }
        }
    }
    if why.is_empty() {
        why.push(format!(
            "the blocks hold old and new values in an order no step of the plan up to the last \
             that began (step {}) leaves",
            last + 1
        ));
    }
    Err(why)
}

/// Recovers from the journal at `path`: discovers the fabric (it must be the journal's),
/// reads every journaled block and checks that the fabric holds a state the journal's steps
/// pass through (refused, nothing written, otherwise), then from there writes every block
/// back (or, `Forward`, every block as the plan writes it), step by step with the same checks
/// as an apply.
pub fn recover(
    t: &mut impl Transport,
    path: &Path,
    direction: Direction,
    lock_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    recover_with(t, path, direction, lock_dir, Duration::ZERO, progress)
}

/// [`recover`] with a settling time before the final reading of a recovery forward (see
/// [`ApplyOptions::settle`]).
pub fn recover_with(
    t: &mut impl Transport,
    path: &Path,
    direction: Direction,
    lock_dir: &Path,
    settle: Duration,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let _journal = journal_lock(lock_dir, path)?;
    let j: Journal = journal::read(path)?;
    let _lock = sm_lock(t, lock_dir)?;
    let d = discover(t)?;
    let diffs = j.header.wire.diff(&d.view.fold_vswitches(&j.header.wire));
    if !diffs.is_empty() {
        return Err(ApplyError::Stale(diffs));
    }
    let steps = cells(&d, &j.blocks);
    let mut x = Txn {
        t,
        j: None,
        count: Count {
            sets: 0,
            gets: d.smps + 1,
            visits: 0,
        },
        settle,
        journal_failed: None,
        ended: j.ended().is_some(),
        times: Vec::new(),
        seen: BTreeMap::new(),
    };
    let report = |x: &Txn<'_, _>, state: Final, failure: Option<String>, done: usize| Report {
        state,
        failure,
        steps_done: done,
        sets: x.count.sets,
        gets: x.count.gets,
        visits: x.count.visits,
        notes: Vec::new(),
        journal_open: !x.ended,
        outages: Vec::new(),
    };
    if j.blocks.is_empty() {
        return Ok(report(
            &x,
            Final::Nothing,
            Some("the journal records no writes: nothing to recover".to_owned()),
            0,
        ));
    }
    if let Some(end) = j.ended() {
        let state = x.classify(&steps);
        let had = if end == Event::Committed {
            "committed"
        } else {
            "rolled back"
        };
        return Ok(report(
            &x,
            state,
            Some(format!("nothing to recover: the apply had {had}")),
            0,
        ));
    }
    // Where the fabric is, by the journal.
    let all: Vec<&Cell> = steps
        .iter()
        .flatten()
        .filter_map(|c| c.as_ref().ok())
        .collect();
    let got = x.read(&all);
    let mut held = BTreeMap::new();
    for (c, g) in all.iter().zip(got) {
        match g {
            Ok(g) => {
                held.insert(c.target.clone(), g);
            }
            Err(e @ SmpError::Crashed { .. }) => return Err(ApplyError::Crashed(e)),
            Err(_) => {}
        }
    }
    let at = in_flight(&steps, &held, j.last_begun()).map_err(ApplyError::NotJournaled)?;
    if direction == Direction::Forward && j.partial() {
        return Err(ApplyError::PartialJournal(path.to_owned()));
    }
    x.j = Some(Writer::append(path)?);
    match direction {
        Direction::Back => {
            let _ = x.event(Event::RollbackBegin);
            let left = x.undo(&steps, at, progress).map_err(ApplyError::Crashed)?;
            let state = x.classify(&steps);
            if state == Final::Old {
                let _ = x.event(Event::RolledBack);
            }
            // A block that will not go back is reported with the others still in place.
            let failure = (!left.is_empty()).then(|| format!("rolling back: {}", left.join("; ")));
            let mut r = report(&x, state, failure, 0);
            if let Some(e) = x.journal_failed.clone() {
                r.notes
                    .push(format!("the journal could not be written: {e}"));
            }
            Ok(r)
        }
        Direction::Forward => {
            let (done, failure) = match x.forward(&steps, at, None, progress) {
                Ok(done) => match x.verify(&steps).map_err(ApplyError::Crashed)? {
                    c if c.is_empty() => (done, None),
                    c => (done, Some(c.join("; "))),
                },
                Err((s, Stop::Crashed(e))) => {
                    let _ = s;
                    return Err(ApplyError::Crashed(e));
                }
                // Stopped where it failed: the journal still holds every block.
                Err((s, why)) => (s.saturating_sub(at), Some(why.describe(s))),
            };
            let state = x.classify(&steps);
            if state == Final::New {
                let _ = x.event(Event::Committed);
            }
            let mut r = report(&x, state, failure, done);
            if let Some(e) = x.journal_failed.clone() {
                r.notes
                    .push(format!("the journal could not be written: {e}"));
            }
            Ok(r)
        }
    }
}

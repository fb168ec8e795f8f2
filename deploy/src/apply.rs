//! Transactions: a plan written to a fabric so that it ends in exactly the old state or
//! exactly the new one.
//!
//! 1. Discover the fabric and compare it with the plan's wire view: any difference refuses
//!    the plan, naming each one, before anything is written.
//! 2. Read every block the plan touches; one that does not hold the plan's `old` refuses the
//!    plan (the fabric moved on since it was planned), naming the block.
//! 3. Journal every block, before and after, to disk (fsync).
//! 4. Apply the steps in order: a step's SMPs go out together, every response is checked, and
//!    every block is read back before the next step starts. LinearFDBTop is raised right
//!    after the step that first writes above it (so the new entries appear together, as the
//!    step's proof allows) and lowered after the last step.
//! 5. On any failure, undo the steps that began, last first, writing each block's journaled
//!    `before` and reading it back. Each undo step is the reverse of a proven step: the states
//!    it passes through are the ones that step's proof covered (any subset of its writes), so
//!    it is proven too.
//!
//! A crash leaves the journal; [`recover`] rolls back (or forward) from it.

use crate::discover::{discover, DiscoverError, Discovery, VfError};
use crate::journal::{self, Block, Event, Header, Journal, JournalError, Writer};
use crate::smp::{self, Attr, DrPath, Payload, PortInfo, SwitchInfo, PAYLOAD};
use crate::transport::{SmpError, Target, Transport, TransportExt};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use weft_fabric::plan::{Plan, Write, LFT_BLOCK, PKEY_BLOCK};
use weft_fabric::{Guid, WireDiff};

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
    /// Step `step` (from 0) of `of` goes out with `smps` SMPs.
    Step {
        /// The step.
        step: usize,
        /// Steps in all.
        of: usize,
        /// Its SMPs.
        smps: usize,
    },
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
    /// Neither: these blocks hold something else (or could not be read).
    Mixed(Vec<String>),
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
    /// Get SMPs sent (discovery, snapshot and read-back).
    pub gets: usize,
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
    /// The lock file.
    #[error("lock {path}: {source}")]
    Lock {
        /// Its path.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The journal.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// An SMP failed before anything was written.
    #[error("{0}; nothing was written")]
    Smp(SmpError),
    /// The writer crashed (fault injection): the journal is left for recovery.
    #[error("{0}; the journal is left for `weft apply --recover`")]
    Crashed(SmpError),
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
    what: String,
}

fn lft_payload(hex: &str) -> Payload {
    Write::lft_entries(hex)
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
                Some(p) => format!("node {:#018x} port {p} is not reachable", g.0),
                None => format!("node {:#018x} is not on the fabric", g.0),
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
    for (i, s) in plan.steps.iter().enumerate() {
        for w in &s.writes {
            match w {
                Write::Lft {
                    switch: sw,
                    block,
                    old,
                    new,
                } => {
                    known(*sw)?;
                    if !switch(*sw) {
                        return Err(ApplyError::Unaddressable(format!(
                            "{:#018x} is not a switch on the fabric",
                            sw.0
                        )));
                    }
                    ops.push(Op {
                        step: i,
                        node: *sw,
                        port: None,
                        target: Target {
                            path: path(*sw, None)?,
                            attr: Attr::Lft,
                            modifier: u32::from(*block),
                        },
                        after: lft_payload(new),
                        expect: Some(lft_payload(old)),
                        lid: None,
                        what: format!("switch {:#018x} LFT block {block}", sw.0),
                    });
                }
                Write::Pkeys {
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
                        what: format!("{:#018x} port {port} P_Key block {block}", node.0),
                    });
                }
                Write::Vport {
                    node,
                    port,
                    vf,
                    guid,
                    old_lid,
                    new_lid,
                    old_pkeys,
                    new_pkeys,
                } => {
                    let at = d
                        .vf_at(&vf_ports, (*node, *port), *vf, *guid, vfs)
                        .map_err(|e| match e {
                            VfError::NotFound { .. } => ApplyError::Unsupported(format!(
                                "writing {e} (a vSwitch shown as a switch with one adapter per \
                                 VF is written by directed route; vendor vPort attributes are \
                                 not built)"
                            )),
                            e => ApplyError::Unaddressable(e.to_string()),
                        })?;
                    // A PortInfo is compared by its LID only (see `same`); no LID reads 0.
                    let lid_info = |lid: &Option<u16>| {
                        let mut info = [0u8; PAYLOAD];
                        info[16..18].copy_from_slice(&lid.unwrap_or(0).to_be_bytes());
                        info
                    };
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
                        what: format!("{:#018x} port {port} VF {vf} LID", node.0),
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
                        what: format!("{:#018x} port {port} VF {vf} P_Keys", node.0),
                    });
                }
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

/// Compares what a Get returned with what was meant, by the fields weft writes: a PortInfo by
/// its LID, a SwitchInfo by LinearFDBTop (the rest of both holds state a device changes on
/// its own: PortStateChange, counters).
fn same(target: &Target, got: &Payload, want: &Payload) -> bool {
    match target.attr {
        Attr::PortInfo => got.get(16..18) == want.get(16..18),
        Attr::SwitchInfo => got.get(6..8) == want.get(6..8),
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
pub fn smps_of(
    plan: &Plan,
    d: &Discovery,
    vfs: bool,
) -> Result<Vec<(usize, Target, String)>, ApplyError> {
    Ok(resolve(plan, d, vfs)?
        .into_iter()
        .map(|o| (o.step, o.target, o.what))
        .collect())
}

fn checked_discovery(t: &mut impl Transport, plan: &Plan) -> Result<Discovery, ApplyError> {
    let d = discover(t)?;
    check_wire(plan, &d)?;
    Ok(d)
}

/// SMP counters kept while applying.
#[derive(Default)]
struct Count {
    sets: usize,
    gets: usize,
}

/// Applies `plan` through `t`.
pub fn apply(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let local = t.node_info(&DrPath::local()).map_err(ApplyError::Smp)?;
    let _lock = lock(&opts.lock_dir, local.node_guid, local.local_port)?;
    let d = checked_discovery(t, plan)?;
    let gets = d.smps + 1;
    apply_discovered(t, plan, opts, &d, gets, progress)
}

/// [`apply`] on a fabric the caller discovered, holding the lock (see [`lock`]) since before
/// it did: the plan is checked against `d` and applied. `gets` counts the SMPs already sent.
pub fn apply_discovered(
    t: &mut impl Transport,
    plan: &Plan,
    opts: &ApplyOptions,
    d: &Discovery,
    gets: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    check_wire(plan, d)?;
    let mut count = Count { sets: 0, gets };
    progress(Progress::Discovered {
        nodes: d.view.nodes.len(),
        links: d.view.links.len(),
    });
    let mut ops = resolve(plan, d, opts.vfs)?;
    // LinearFDBTop: raise it after the first step writing above it.
    let tops = fdb_tops(t, d, &mut ops, &mut count)?;
    // Snapshot: every block as it is; each must hold the plan's old. A block the plan writes
    // in several steps holds, before each later write, what the write before it left.
    let mut blocks = Vec::with_capacity(ops.len());
    let mut left: BTreeMap<Target, Payload> = BTreeMap::new();
    for o in &mut ops {
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
                let read = t.get(&o.target).map_err(ApplyError::Smp)?;
                count.gets += 1;
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
        left.insert(o.target.clone(), o.after);
        blocks.push(Block {
            step: o.step,
            node: o.node,
            port: o.port,
            attr: o.target.attr,
            modifier: o.target.modifier,
            before,
            after: o.after,
        });
    }
    let header = Header {
        format: journal::JOURNAL_FORMAT.to_owned(),
        version: 1,
        fabric: plan.fabric.clone(),
        from: plan.from.clone(),
        to: plan.to.clone(),
        // As the plan sees the fabric: its VFs' LIDs are the journal's to change.
        wire: plan
            .wire
            .as_ref()
            .map_or_else(|| d.view.clone(), |w| d.view.fold_vswitches(w)),
    };
    let mut j = Writer::create(&opts.journal, &header, &blocks)?;
    let steps = ops.iter().map(|o| o.step + 1).max().unwrap_or(0);
    let mut done = 0;
    let mut failure = None;
    for step in 0..steps {
        let batch: Vec<(Target, Payload)> = ops
            .iter()
            .filter(|o| o.step == step)
            .map(|o| (o.target.clone(), o.after))
            .collect();
        progress(Progress::Step {
            step,
            of: steps,
            smps: batch.len(),
        });
        j.event(Event::Begin { step })?;
        match run_step(t, &batch, &mut count) {
            Ok(()) => {
                j.event(Event::Done { step })?;
                done += 1;
            }
            Err(e @ SmpError::Crashed { .. }) => return Err(ApplyError::Crashed(e)),
            Err(e) => {
                failure = Some(format!("step {}: {e}", step + 1));
                break;
            }
        }
    }
    let journal = Journal {
        header,
        blocks,
        events: Vec::new(),
    };
    if failure.is_none() {
        // Every block read back as its last write left it: the new state.
        j.event(Event::Committed)?;
        return Ok(Report {
            state: Final::New,
            failure,
            steps_done: done,
            sets: count.sets,
            gets: count.gets,
        });
    }
    j.event(Event::RollbackBegin)?;
    let last = done.min(steps.saturating_sub(1));
    let undone = undo(t, d, &journal, last, &mut count, progress);
    if let Err(SmpError::Crashed { .. }) = undone {
        return Err(ApplyError::Crashed(
            undone.err().unwrap_or(SmpError::Crashed { after: 0 }),
        ));
    }
    let state = classify(t, d, &journal, &mut count);
    if state == Final::Old {
        j.event(Event::RolledBack)?;
    }
    Ok(Report {
        state,
        failure,
        steps_done: done,
        sets: count.sets,
        gets: count.gets,
    })
}

/// Sends a step and reads every block back.
fn run_step(
    t: &mut impl Transport,
    batch: &[(Target, Payload)],
    count: &mut Count,
) -> Result<(), SmpError> {
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

/// Writes the journaled `before` of every block of steps `last` down to 0, last first.
fn undo(
    t: &mut impl Transport,
    d: &Discovery,
    j: &Journal,
    last: usize,
    count: &mut Count,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), SmpError> {
    let mut result = Ok(());
    for step in (0..=last).rev() {
        progress(Progress::Undo { step });
        let batch: Vec<(Target, Payload)> = j
            .blocks
            .iter()
            .filter(|b| b.step == step)
            .filter_map(|b| Some((target_of(d, b)?, b.before)))
            .collect();
        // Undo goes on past a failed block: every other block still goes back.
        let mut tries = 0;
        loop {
            tries += 1;
            match run_step(t, &batch, count) {
                Ok(()) => break,
                Err(e @ SmpError::Crashed { .. }) => return Err(e),
                Err(e) if tries >= 3 => {
                    result = Err(e);
                    break;
                }
                Err(_) => {}
            }
        }
    }
    result
}

fn target_of(d: &Discovery, b: &Block) -> Option<Target> {
    Some(Target {
        path: d.path(b.node, b.port)?.clone(),
        attr: b.attr,
        modifier: b.modifier,
    })
}

/// Reads every journaled block and says which state the fabric is in.
fn classify(t: &mut impl Transport, d: &Discovery, j: &Journal, count: &mut Count) -> Final {
    let (mut old, mut new) = (true, true);
    let mut odd = Vec::new();
    let mut newer = Vec::new();
    // Per block: what it held before the first write and what the last write leaves.
    let mut ends: BTreeMap<(Guid, Option<u8>, Attr, u32), Block> = BTreeMap::new();
    for b in &j.blocks {
        ends.entry((b.node, b.port, b.attr, b.modifier))
            .and_modify(|e| {
                if b.step < e.step {
                    e.before = b.before;
                } else {
                    e.after = b.after;
                }
            })
            .or_insert_with(|| b.clone());
    }
    for b in ends.values() {
        let got = target_of(d, b).and_then(|tg| {
            count.gets += 1;
            t.get(&tg).ok().map(|g| (tg, g))
        });
        let what = format!(
            "{} (modifier {:#x}) of {:#018x}{}",
            b.attr,
            b.modifier,
            b.node.0,
            b.port.map(|p| format!(" port {p}")).unwrap_or_default()
        );
        match got {
            Some((tg, g)) => {
                let (o, n) = (same(&tg, &g, &b.before), same(&tg, &g, &b.after));
                old &= o;
                new &= n;
                if !o && !n {
                    odd.push(format!("{what} holds neither value"));
                } else if n && !o {
                    newer.push(format!("{what} holds the plan's new value"));
                }
            }
            None => {
                old = false;
                new = false;
                odd.push(format!("{what} could not be read"));
            }
        }
    }
    if new && !j.blocks.is_empty() || j.blocks.is_empty() {
        Final::New
    } else if old {
        Final::Old
    } else {
        // Neither state: the blocks that are not as they were.
        odd.extend(newer);
        Final::Mixed(odd)
    }
}

/// LinearFDBTop changes a plan needs, as extra ops: raising a switch's top right after the
/// first step that writes above it, lowering it after the last step.
struct Tops {
    /// Per switch: its top before.
    before: BTreeMap<Guid, u16>,
}

impl Tops {
    /// Whether an LFT block that differs from the plan's old differs only above the switch's
    /// top (entries a switch does not forward by, which the plan counts as unset).
    fn beyond(&self, o: &Op, got: &Payload, want: &Payload) -> bool {
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

fn fdb_tops(
    t: &mut impl Transport,
    d: &Discovery,
    ops: &mut Vec<Op>,
    count: &mut Count,
) -> Result<Tops, ApplyError> {
    let mut tops = Tops {
        before: BTreeMap::new(),
    };
    let mut switches: Vec<Guid> = ops
        .iter()
        .filter(|o| o.target.attr == Attr::Lft)
        .map(|o| o.node)
        .collect();
    switches.sort_unstable();
    switches.dedup();
    for g in &switches {
        let Some(path) = d.path(*g, None) else {
            continue;
        };
        let (info, _) = t.switch_info(path).map_err(ApplyError::Smp)?;
        count.gets += 1;
        tops.before.insert(*g, info.linear_fdb_top);
    }
    // Per switch: the first step that sets an entry above its top, and the top it needs.
    let mut raise: BTreeMap<Guid, (usize, usize)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.target.attr == Attr::Lft) {
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
    for (g, (step, top)) in raise {
        let Some(path) = d.path(g, None) else {
            continue;
        };
        let (_, mut raw) = t.switch_info(path).map_err(ApplyError::Smp)?;
        count.gets += 1;
        SwitchInfo {
            linear_fdb_cap: 0,
            linear_fdb_top: u16::try_from(top).unwrap_or(u16::MAX),
            partition_enforcement_cap: 0,
        }
        .encode_into(&mut raw);
        ops.push(Op {
            step: 2 * step + 1,
            node: g,
            port: None,
            target: Target {
                path: path.clone(),
                attr: Attr::SwitchInfo,
                modifier: 0,
            },
            after: raw,
            expect: None,
            lid: None,
            what: format!("switch {:#018x} LinearFDBTop", g.0),
        });
    }
    let mut used: Vec<usize> = ops.iter().map(|o| o.step).collect();
    used.sort_unstable();
    used.dedup();
    for o in ops.iter_mut() {
        o.step = used.binary_search(&o.step).unwrap_or(0);
    }
    ops.sort_by_key(|o| o.step);
    Ok(tops)
}

/// How to recover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Put every block back as it was (the default).
    Back,
    /// Finish the plan: every block as the plan writes it.
    Forward,
}

/// Recovers from the journal at `path`: discovers the fabric (it must be the journal's),
/// then writes every block of the steps that began back (or every block forward), reading
/// each back.
pub fn recover(
    t: &mut impl Transport,
    path: &Path,
    direction: Direction,
    lock_dir: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<Report, ApplyError> {
    let j = journal::read(path)?;
    let local = t.node_info(&DrPath::local()).map_err(ApplyError::Smp)?;
    let _lock = lock(lock_dir, local.node_guid, local.local_port)?;
    let d = discover(t)?;
    let mut count = Count {
        sets: 0,
        gets: d.smps + 1,
    };
    let diffs = j.header.wire.diff(&d.view.fold_vswitches(&j.header.wire));
    if !diffs.is_empty() {
        return Err(ApplyError::Stale(diffs));
    }
    if let Some(end) = j.ended() {
        let state = classify(t, &d, &j, &mut count);
        return Ok(Report {
            state,
            failure: Some(format!(
                "nothing to recover: the apply had {}",
                if end == Event::Committed {
                    "committed"
                } else {
                    "rolled back"
                }
            )),
            steps_done: 0,
            sets: 0,
            gets: count.gets,
        });
    }
    let mut w = Writer::append(path)?;
    let steps = j.blocks.iter().map(|b| b.step + 1).max().unwrap_or(0);
    match direction {
        Direction::Back => {
            w.event(Event::RollbackBegin)?;
            let last = j.last_begun().unwrap_or(0).min(steps.saturating_sub(1));
            // A block that will not go back is reported with the others still in place.
            let failure = match undo(t, &d, &j, last, &mut count, progress) {
                Err(e @ SmpError::Crashed { .. }) => return Err(ApplyError::Crashed(e)),
                Err(e) => Some(format!("rolling back: {e}")),
                Ok(()) => None,
            };
            let state = classify(t, &d, &j, &mut count);
            if state == Final::Old {
                w.event(Event::RolledBack)?;
            }
            Ok(Report {
                state,
                failure,
                steps_done: 0,
                sets: count.sets,
                gets: count.gets,
            })
        }
        Direction::Forward => {
            // After a rollback that began, every step goes forward again.
            let first = if j.events.contains(&Event::RollbackBegin) {
                0
            } else {
                j.last_begun().unwrap_or(0)
            };
            let mut done = 0;
            let mut failure = None;
            for step in first..steps {
                let batch: Vec<(Target, Payload)> = j
                    .blocks
                    .iter()
                    .filter(|b| b.step == step)
                    .filter_map(|b| Some((target_of(&d, b)?, b.after)))
                    .collect();
                progress(Progress::Step {
                    step,
                    of: steps,
                    smps: batch.len(),
                });
                w.event(Event::Begin { step })?;
                match run_step(t, &batch, &mut count) {
                    Ok(()) => {}
                    Err(e @ SmpError::Crashed { .. }) => return Err(ApplyError::Crashed(e)),
                    Err(e) => {
                        // Stopped where it failed: the journal still holds every block.
                        failure = Some(format!("step {}: {e}", step + 1));
                        break;
                    }
                }
                w.event(Event::Done { step })?;
                done += 1;
            }
            let state = classify(t, &d, &j, &mut count);
            if state == Final::New {
                w.event(Event::Committed)?;
            }
            Ok(Report {
                state,
                failure,
                steps_done: done,
                sets: count.sets,
                gets: count.gets,
            })
        }
    }
}

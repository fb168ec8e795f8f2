//! Transactions: a plan written to a fabric so that it ends in exactly the old state or
//! exactly the new one, and says which — or, when another writer got in the way, exactly
//! which block holds what.
//!
//! 1. Discover the fabric and compare it with the plan's wire view: any difference refuses
//!    the plan, naming each one, before anything is written.
//! 2. Prove the plan's steps again on the tables read off the fabric ([`crate::prove`]);
//!    `--no-reprove` skips that only for a plan whose digest matches its content.
//! 3. Read every block the plan touches; one that does not hold the plan's `old` refuses the
//!    plan (the fabric moved on since it was planned), naming the block. An LFT block wholly
//!    above its switch's LinearFDBTop, written before the top is raised over it, is not read:
//!    the switch forwards by none of it, so whatever it holds counts as its old (journaled
//!    `hidden`, with the plan's old as `before`; see [`crate::journal::Block::hidden`]).
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

use crate::discover::{discover, DiscoverError, Discovery};
use crate::journal::{JournalError, JournalFault};
use crate::prove::{LiveError, ProofError};
use crate::smp::DrPath;
use crate::transport::{SmpError, Target, Transport, TransportExt};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_formats::plan::Plan;

mod parts;
mod recover;
mod resolve;
mod tops;
mod txn;

pub use recover::{recover, recover_with, Direction};
use resolve::{resolve, same, Op, Top};
use tops::{fdb_tops, mft_tops, Tops};
use txn::{block_name, block_of, cells, conclude, header_of, transact, Cell, Stop, Txn};
use weft_fabric::{ValidState, WireDiff};

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

impl weft_fabric::code::Coded for ApplyError {
    /// The error's registered code ([`crate::CODES`]): a wrapped error's own (discovery, the
    /// proof, the planning, the journal, an SMP), or the apply's.
    fn code(&self) -> &'static str {
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

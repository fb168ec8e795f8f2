//! dFtree's run-time loop on a live fabric ([`Loop`]): each sweep reads every live port's
//! counters through a [`Pma`] (`weft_deploy::pma`), feeds the ports it may judge
//! ([`trust`]) to dFtree's controller (`weft_traffic::dftree`), and carries its moves out as
//! files OpenSM and the hosts read.
//!
//! Before the first sweep the fabric discovered is compared with the state the controller was
//! built from (its wire view, as `weft apply` checks a plan's, and the port GUIDs of the end
//! ports it watches): a fabric that is not the state's is refused ([`LoopError::WrongFabric`]).
//! Utilisation is taken against each link's live rate, as discovery read it.
//!
//! **Files**, in the output directory, all through [`crate::files`]: `qos-policy.conf` (the
//! policy with the flows on their slow lane, made by the caller's [`PolicyFn`]: deploy never
//! compiles) and `repath.txt` (the flows whose SL changed, for the hosts to re-path their QPs)
//! are replaced whole at the start (no flow moved), whenever the set of flows on their slow
//! lane changes, and at a clean stop ([`Loop::stop`]: every flow back on its fast lane); every
//! move is also appended to `repath.log`, with its time in UTC ([`utc`]) and its sweep.
//!
//! The caller keeps the clock: it says when each sweep is (its time since the start, and the
//! wall time for the log), waits between sweeps and decides when to stop.

use weft_fabric::code::Coded as _;
pub mod trust;
pub mod utc;

use crate::discover::Discovery;
use crate::files::{self, FileError};
use crate::pma::{self, CounterReader, Pma, PmaError, PortAt};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use trust::{Named, Unjudged};
use weft_fabric::{FabricState, Guid, PortNum, WireView};
use weft_traffic::dftree::{Controller, EndPort, Flow, Moves};

/// The QoS policy with `flows` on their slow lane (with none: the base policy).
pub type PolicyFn = Box<dyn FnMut(&[Flow]) -> Result<String, String>>;

/// Why the loop cannot start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopError {
    /// The fabric discovered is not the state's: every difference.
    #[error("the fabric is not the state's: {}", .0.join("; "))]
    WrongFabric(Vec<String>),
    /// The live ports cannot be listed (a port without a LID).
    #[error(transparent)]
    Ports(PmaError),
    /// Not one port's counters could be read in a sweep: the fabric, or the local port, is gone.
    #[error("sweep {sweep}: no port's counters could be read; the first: {first}")]
    NothingRead {
        /// The sweep.
        sweep: u64,
        /// Why the first port was not read.
        first: PmaError,
    },
    /// The caller's policy could not be made.
    #[error("cannot write the QoS policy: {0}")]
    Policy(String),
    /// A file could not be written.
    #[error(transparent)]
    File(#[from] FileError),
}

impl LoopError {
    /// The registered code ([`crate::CODES`]); `None` for the caller's policy.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            LoopError::WrongFabric(_) => Some("weft::deploy::wrong_fabric"),
            LoopError::Ports(e) | LoopError::NothingRead { first: e, .. } => Some(e.code()),
            LoopError::Policy(_) => None,
            LoopError::File(e) => Some(e.code()),
        }
    }
}

/// What one sweep read, judged and moved.
#[derive(Debug)]
pub struct Sweep {
    /// Its number, from 1.
    pub number: u64,
    /// The ports read, in the order of [`Loop::ports`].
    pub read: Vec<pma::PortCounters>,
    /// Why each other port was not read.
    pub unread: Vec<PmaError>,
    /// PMA Gets this sweep sent.
    pub gets: usize,
    /// What the controller was told, and what not ([`trust::judged`]).
    pub judged: trust::Judged,
    /// Ports and nodes found not judged that no sweep before named.
    pub news: Vec<Unjudged>,
    /// The controller's moves.
    pub moves: Moves,
    /// Flows on their slow lane after the sweep.
    pub slow_flows: usize,
    /// Whether the files were written (the set of slow flows changed).
    pub wrote: bool,
}

/// What a clean stop did.
#[derive(Debug)]
pub struct Stopped {
    /// The flows moved back to their fast lane.
    pub moves: Moves,
    /// Times the files were written, the stop's included.
    pub writes: u64,
}

/// dFtree's loop over the fabric a [`Pma`] reaches.
pub struct Loop<P: Pma> {
    controller: Controller,
    pma: P,
    reader: CounterReader,
    ports: Vec<PortAt>,
    out: PathBuf,
    policy: PolicyFn,
    slow: BTreeSet<Flow>,
    sweeps: u64,
    writes: u64,
    named: Named,
}

impl<P: Pma> Loop<P> {
    /// The loop of `controller` (built from `state`) on the fabric `found` describes, reading
    /// counters through `pma`, writing into the directory `out` (which must exist) with the
    /// policy `policy` makes. Refuses a fabric that is not `state`'s; writes the base policy
    /// and an empty `repath.txt`.
    pub fn new(
        state: &FabricState,
        mut controller: Controller,
        found: &Discovery,
        pma: P,
        out: &Path,
        policy: PolicyFn,
    ) -> Result<Loop<P>, LoopError> {
        let differences = fabric_differences(state, found, &controller.ports());
        if !differences.is_empty() {
            return Err(LoopError::WrongFabric(differences));
        }
        controller.use_live_rates(|guid, port| {
            let end = (Guid(guid), PortNum(port));
            let width = found.widths.get(&end)?;
            let speed = found.speeds.get(&end)?;
            Some(f64::from(width.lanes()) * f64::from(speed.lane_mbps()))
        });
        let ports = pma::live_ports(found).map_err(LoopError::Ports)?;
        let mut l = Loop {
            controller,
            pma,
            reader: CounterReader::new(),
            ports,
            out: out.to_path_buf(),
            policy,
            slow: BTreeSet::new(),
            sweeps: 0,
            writes: 0,
            named: Named::default(),
        };
        // OpenSM pointed at the output has the base policy from the start.
        l.write(
            &BTreeSet::new(),
            0,
            "",
            &Moves::default(),
            SystemTime::now(),
        )?;
        Ok(l)
    }

    /// The live ports each sweep reads.
    pub fn ports(&self) -> &[PortAt] {
        &self.ports
    }

    /// What carries the PMA Gets.
    pub fn pma(&self) -> &P {
        &self.pma
    }

    /// What carries the PMA Gets, to change (a simulated fabric's counters).
    pub fn pma_mut(&mut self) -> &mut P {
        &mut self.pma
    }

    /// Times the files were written.
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// Sweeps taken.
    pub fn sweeps(&self) -> u64 {
        self.sweeps
    }

    /// The flows on their slow lane.
    pub fn slow_flows(&self) -> &BTreeSet<Flow> {
        &self.slow
    }

    /// One sweep, `at_ns` after the start (the controller's clock), at `wall` (the log's).
    pub fn sweep(&mut self, at_ns: u64, wall: SystemTime) -> Result<Sweep, LoopError> {
        self.sweeps += 1;
        let number = self.sweeps;
        let gets_before = self.reader.gets;
        let (read, unread) = self.reader.read(&mut self.pma, &self.ports);
        if read.is_empty() {
            if let Some(first) = unread.first() {
                return Err(LoopError::NothingRead {
                    sweep: number,
                    first: first.clone(),
                });
            }
        }
        let judged = trust::judged(&read);
        let news = self.named.news(&read);
        let moves = self.controller.sweep(at_ns, &judged.counters);
        let now: BTreeSet<Flow> = self.controller.slow_flows().into_iter().collect();
        let wrote = now != self.slow;
        if wrote {
            self.write(&now, number, "", &moves, wall)?;
            self.slow = now;
        }
        Ok(Sweep {
            number,
            gets: self.reader.gets - gets_before,
            read,
            unread,
            judged,
            news,
            moves,
            slow_flows: self.slow.len(),
            wrote,
        })
    }

    /// A clean stop at `wall`: every flow still on its slow lane moves back (the base policy
    /// again, written only when a flow moved), so nothing stays slowed with no loop left to
    /// release it.
    pub fn stop(mut self, wall: SystemTime) -> Result<Stopped, LoopError> {
        let back = Moves {
            to_fast: self.slow.iter().copied().collect(),
            ..Moves::default()
        };
        if !back.to_fast.is_empty() {
            self.write(&BTreeSet::new(), self.sweeps, " (stop)", &back, wall)?;
            self.slow.clear();
        }
        Ok(Stopped {
            moves: back,
            writes: self.writes,
        })
    }

    /// Writes the policy with `slow` on their slow lane and `repath.txt` with `moves`
    /// (`sweep`, and `note` after it, in its header), and appends the moves to `repath.log`.
    fn write(
        &mut self,
        slow: &BTreeSet<Flow>,
        sweep: u64,
        note: &str,
        moves: &Moves,
        wall: SystemTime,
    ) -> Result<(), LoopError> {
        let flows: Vec<Flow> = slow.iter().copied().collect();
        let policy = (self.policy)(&flows).map_err(LoopError::Policy)?;
        files::replace(&self.out.join("qos-policy.conf"), policy.as_bytes())?;
        let text = repath(self.writes, sweep, note, moves);
        files::replace(&self.out.join("repath.txt"), text.as_bytes())?;
        self.writes += 1;
        let lines = repath_log(&utc::utc_of(wall), sweep, moves);
        if !lines.is_empty() {
            files::append(&self.out.join("repath.log"), lines.as_bytes())?;
        }
        Ok(())
    }
}

/// Every way the fabric `d` discovered differs from `st`, the state the controller was
/// built from: its wire view (nodes, live links, LIDs, as `weft apply` checks a plan's
/// fabric), and the port GUID of each end port the controller watches.
fn fabric_differences(st: &FabricState, d: &Discovery, watched: &[EndPort]) -> Vec<String> {
    let wire = WireView::of(st);
    let mut out: Vec<String> = wire
        .diff(&d.view.fold_vswitches(&wire))
        .iter()
        .map(ToString::to_string)
        .collect();
    for p in watched {
        let expected = st
            .fabric
            .find_guid(Guid(p.guid))
            .and_then(|n| st.fabric.nodes().get(n.index()))
            .and_then(|n| n.port(PortNum(p.port)))
            .map(|x| x.guid.0);
        // A node or port not found is a wire difference already.
        if let (Some(e), Some(f)) = (expected, d.port_guid(Guid(p.guid), p.port)) {
            if e != f {
                out.push(format!(
                    "node {:#018x} port {} has port GUID {f:#018x}, not {e:#018x}",
                    p.guid, p.port
                ));
            }
        }
    }
    out
}

/// Every move of `moves` (to the slow lane, then back), with the SL each flow takes now.
pub fn moved(moves: &Moves) -> impl Iterator<Item = (&Flow, u8)> {
    moves
        .to_slow
        .iter()
        .map(|f| (f, f.slow_sl))
        .chain(moves.to_fast.iter().map(|f| (f, f.fast_sl)))
}

/// `repath.txt`, write `seq` (0 at the start, one more at each write), at `sweep` (0: before
/// the first), with `note` after it in the header: one line per flow whose SL changed.
pub fn repath(seq: u64, sweep: u64, note: &str, moves: &Moves) -> String {
    let mut t = format!(
        "# weft dftree write {seq}, sweep {sweep}{note}: flows to re-path. Each line: the \
         source node GUID, its port, the destination LID, the SL every QP from that port toward \
         that LID takes now.\n"
    );
    for (f, sl) in moved(moves) {
        t += &format!("{:#018x} {} {} {sl}\n", f.src_guid, f.src_port, f.dst_lid);
    }
    t
}

/// `repath.log`'s lines for `moves` at `sweep`: the time (UTC), the sweep, then
/// `repath.txt`'s columns.
pub fn repath_log(time: &str, sweep: u64, moves: &Moves) -> String {
    moved(moves)
        .map(|(f, sl)| {
            format!(
                "{time} {sweep} {:#018x} {} {} {sl}\n",
                f.src_guid, f.src_port, f.dst_lid
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;

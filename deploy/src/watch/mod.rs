//! `weft watch`'s sweeps: a fabric kept under watch through any [`Transport`](crate::Transport).
//!
//! A **light sweep** ([`light_sweep`]) reads one SwitchInfo per switch discovery found (its
//! PortStateChange bit and LinearFDBTop), as one batch: one SMP per switch, nothing else. A
//! switch that does not answer, whose PortStateChange is newly set or whose LinearFDBTop
//! moved is a [`Change`].
//!
//! The master SM's LID is read by a heavy sweep only (the local port's PortInfo, one SMP),
//! not by the light one: the LID the kernel keeps for the port in sysfs (libibumad's
//! `umad_get_port`) costs no SMP on a real HCA, but ibsim's umad (libumad2sim) writes its
//! sysfs once, when the process starts, so a watcher there would keep the LID of before the
//! SM came up (seen: a process started before OpenSM read `sm_lid` 0 for 25 s after
//! OpenSM had set it to 3, while a fresh `ibstat` read 3). A master SM that changes while no
//! switch does is therefore seen at the next heavy or full sweep.
//!
//! weft never clears PortStateChange: that is the SM's (a watcher that cleared it would hide
//! the change from OpenSM's own light sweep); a bit that stays set costs its switch's
//! PortInfos each sweep, and nothing more while its ports stay as they were.
//!
//! A **heavy sweep** ([`Watcher::sweep`]) reads what changed: the PortInfo of every port of
//! each switch flagged. A port down where discovery found a cable takes that cable out of
//! the topology known; the switches that stopped answering (their directed routes crossed
//! it) are routed around it over the links already known (`reroute`: no SMP) and asked their
//! NodeInfo and SwitchInfo there, and those that show a change are read the same way. Then
//! the LFT blocks, up to LinearFDBTop, of the switches whose PortStateChange or LinearFDBTop
//! moved. The new routes are kept for the light sweeps that follow. The whole fabric is
//! discovered and read again ([`audit_discovered`]: what `weft audit` reads) only when that
//! cannot be done, and [`Heavy::because`] says why ([`FullBecause`]). An LFT block written by
//! someone else shows in no SwitchInfo, nor does a PortStateChange the SM set and cleared
//! between two sweeps: a **full** sweep (every `--full-every` sweeps, and `--once`) reads
//! every table, and every [`Sweep`] says which sweep last did ([`Sweep::last_full`]).
//!
//! A state is offered for proof only when every read of the sweep answered
//! ([`Watcher::state`]); otherwise the verdict is unknown and the error is said.
//!
//! [`difference`] compares the state read with a reference (the desired state, or the last
//! sweep's): LFT blocks by switch and block, cables down or new, nodes gone or new;
//! [`repair_states`] puts the live tables on the desired state's fabric, with the cables and
//! nodes the fabric lost marked down, for `weft_plan::plan` to plan a minimal repair.

mod differ;
mod reroute;

pub use differ::{difference, repair_states, Block, Cable, Difference, RepairError};

use crate::audit::{audit_discovered, AuditError};
use crate::discover::{discover, port_up, Discovery};
use crate::observe;
use crate::smp::{self, Attr, DrPath, NodeInfo, NodeType, PortInfo, SwitchInfo, LFT_BLOCK};
use crate::transport::{Counted, SmpError, Target, TransportExt};
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;
use weft_fabric::{FabricBuilder, FabricState, Guid, LinkId, PortNum, PortRef, WireEnd};

/// What a switch's SwitchInfo said in a light sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// PortStateChange: one of its ports changed state since the SM last cleared the bit.
    pub port_state_change: bool,
    /// The highest LID its LFT forwards.
    pub linear_fdb_top: u16,
}

/// A light sweep: one SwitchInfo per switch.
#[derive(Clone, Debug)]
pub struct Light {
    /// Per switch GUID: its SwitchInfo, or why it did not answer.
    pub switches: BTreeMap<Guid, Result<Seen, SmpError>>,
    /// SMPs to switches (one each).
    pub switch_smps: usize,
    /// Nodes in the node set the sweep watched (discovery's).
    pub nodes: usize,
}

impl Light {
    /// Every SMP the sweep sent: one per switch.
    pub fn smps(&self) -> usize {
        self.switch_smps
    }
}

/// The switches `d` found, with their routes, in GUID order.
fn switches(d: &Discovery) -> Vec<(Guid, &DrPath, u8)> {
    d.nodes
        .iter()
        .filter(|(_, f)| f.info.node_type == NodeType::Switch)
        .map(|(g, f)| (*g, &f.path, f.info.num_ports))
        .collect()
}

/// A batch answered with fewer results than it asked.
fn short() -> SmpError {
    SmpError::Transport("a batch came back short".to_owned())
}

/// One SwitchInfo per switch `d` found (one batch).
pub fn light_sweep(t: &mut impl TransportExt, d: &Discovery) -> Light {
    let sw = switches(d);
    let targets: Vec<Target> = sw
        .iter()
        .map(|(_, path, _)| Target {
            path: (*path).clone(),
            attr: Attr::SwitchInfo,
            modifier: 0,
        })
        .collect();
    let mut answers = t.get_all(&targets).into_iter();
    let mut out = BTreeMap::new();
    for (g, _, _) in &sw {
        let seen = answers
            .next()
            .unwrap_or_else(|| Err(short()))
            .map(|p| Seen {
                port_state_change: smp::port_state_change(&p),
                linear_fdb_top: SwitchInfo::decode(&p).linear_fdb_top,
            });
        out.insert(*g, seen);
    }
    Light {
        switches: out,
        switch_smps: targets.len(),
        nodes: d.nodes.len(),
    }
}

/// What a sweep found changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A switch's PortStateChange is newly set.
    PortStateChange {
        /// The switch.
        switch: Guid,
    },
    /// A switch's LinearFDBTop moved.
    Top {
        /// The switch.
        switch: Guid,
        /// Before.
        was: u16,
        /// Now.
        now: u16,
    },
    /// A switch (`None`: the local port) did not answer.
    Unanswered {
        /// The switch.
        switch: Option<Guid>,
        /// Why.
        error: SmpError,
    },
    /// The master SM's LID changed.
    MasterSm {
        /// Before (`None`: not read yet).
        was: Option<u16>,
        /// Now.
        now: u16,
    },
    /// Ports of a switch whose state no longer matches the cables discovery found.
    Ports {
        /// The switch.
        switch: Guid,
        /// The ports.
        ports: Vec<u8>,
    },
    /// LFT blocks of a switch that are not what the last read found.
    Blocks {
        /// The switch.
        switch: Guid,
        /// The blocks.
        blocks: Vec<u16>,
    },
}

/// Why a heavy sweep read the whole fabric again rather than what changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FullBecause {
    /// The first read of the fabric.
    #[error("the first read")]
    First,
    /// A full read was asked (`--full-every`, `--once`).
    #[error("a full read was asked")]
    Asked,
    /// The read before was partial: nothing short of a full one makes the state whole.
    #[error("the read before was partial")]
    Partial,
    /// A flagged switch's PortInfo did not answer.
    #[error("a port of a flagged switch did not answer: {0}")]
    PortUnread(SmpError),
    /// A port came up where discovery found no cable: a cable or a node may be new.
    #[error(
        "port {port} of {switch} came up where no cable was known (a cable or node may be new)"
    )]
    PortUp {
        /// The switch.
        switch: Guid,
        /// The port.
        port: u8,
    },
    /// A node no known link reaches any more.
    #[error("{node} is unreachable over every known link")]
    Unreachable {
        /// The node.
        node: Guid,
    },
    /// A switch did not answer on its new route either.
    #[error("{switch} did not answer on a route around the cables down: {error}")]
    StillUnanswered {
        /// The switch.
        switch: Guid,
        /// Why.
        error: SmpError,
    },
    /// A route leads to another node than discovery found there: the topology moved.
    #[error("the route to {expected} now leads to {found}")]
    Moved {
        /// The node discovery found there.
        expected: Guid,
        /// The node that answered.
        found: Guid,
    },
}

/// What a heavy sweep read.
#[derive(Debug)]
pub struct Heavy {
    /// The whole fabric, discovered and read again (else: only the switches flagged).
    pub full: bool,
    /// Why it was a full read (`None`: a partial one).
    pub because: Option<FullBecause>,
    /// The switches whose ports or LFT blocks were read (a partial sweep).
    pub switches: Vec<Guid>,
    /// Switches that stopped answering and were reached again on a route around the cables
    /// down (their new routes kept for the light sweeps that follow).
    pub rerouted: Vec<Guid>,
    /// SMPs it sent.
    pub smps: usize,
    /// Why the state it read is partial (no proof: unknown).
    pub error: Option<AuditError>,
    /// The state read, against the one before (a full sweep).
    pub moved: Option<Difference>,
}

impl Heavy {
    fn new(because: Option<FullBecause>) -> Heavy {
        Heavy {
            full: because.is_some(),
            because,
            switches: Vec::new(),
            rerouted: Vec::new(),
            smps: 0,
            error: None,
            moved: None,
        }
    }
}

/// One sweep: the light sweep, what changed, and the heavy sweep that followed.
#[derive(Debug)]
pub struct Sweep {
    /// The light sweep.
    pub light: Light,
    /// What changed (the light sweep's, then the heavy sweep's).
    pub changes: Vec<Change>,
    /// The heavy sweep, when anything changed or a full one was asked.
    pub heavy: Option<Heavy>,
    /// This sweep's number (0: the first read, [`Watcher::begin`]).
    pub number: usize,
    /// The number of the last sweep that read every table whole (this one's, if it did):
    /// what the state is "as of" for changes no SwitchInfo shows (a block written by
    /// another writer; a PortStateChange the SM set and cleared between two sweeps).
    pub last_full: usize,
    /// When that full read ended.
    pub last_full_at: SystemTime,
}

impl Sweep {
    /// Every SMP the sweep sent, light and heavy.
    pub fn smps(&self) -> usize {
        self.light.smps() + self.heavy.as_ref().map_or(0, |h| h.smps)
    }
}

/// A fabric under watch: the discovery its light sweeps follow and the state last read.
#[derive(Debug)]
pub struct Watcher {
    name: String,
    d: Discovery,
    state: FabricState,
    /// Whether every read of `state` answered.
    complete: bool,
    tops: BTreeMap<Guid, u16>,
    flagged: BTreeSet<Guid>,
    master_sm_lid: Option<u16>,
    sweeps: usize,
    last_full: usize,
    last_full_at: SystemTime,
}

impl Watcher {
    /// Discovers the fabric through `t` and reads it whole (named `name`, as `weft audit`
    /// names it); the SMPs it took. [`Watcher::begin`], which also says what did not answer.
    pub fn start(t: &mut impl TransportExt, name: &str) -> Result<(Watcher, usize), AuditError> {
        Watcher::begin(t, name).map(|(w, s)| (w, s.smps()))
    }

    /// Discovers the fabric through `t`, light-sweeps it (the tops and PortStateChange bits
    /// later sweeps compare with, read before the tables so that a top moving during the read
    /// shows at the next sweep) and reads it whole (named `name`, as `weft audit` names it).
    /// The sweep it was (number 0): a switch that did not answer its SwitchInfo is an
    /// [`Change::Unanswered`] there, and the state is then not offered for proof
    /// ([`Watcher::state`] is `None`) until a full read answers.
    pub fn begin(t: &mut impl TransportExt, name: &str) -> Result<(Watcher, Sweep), AuditError> {
        let d = discover(t)?;
        let light = light_sweep(t, &d);
        let read = audit_discovered(t, &d, name)?;
        let mut heavy = Heavy::new(Some(FullBecause::First));
        heavy.smps = d.smps + read.smps;
        let mut w = Watcher {
            name: name.to_owned(),
            d,
            state: read.state,
            complete: true,
            tops: BTreeMap::new(),
            flagged: BTreeSet::new(),
            master_sm_lid: None,
            sweeps: 0,
            last_full: 0,
            last_full_at: SystemTime::now(),
        };
        // What the first light sweep compares with: the tops as read now, and the
        // PortStateChange bits already set (an SM's to clear, not a change since). Only
        // what did not answer is a change.
        let mut changes: Vec<Change> = w
            .light_changes(&light)
            .into_iter()
            .filter(|c| matches!(c, Change::Unanswered { .. }))
            .collect();
        if let Some(Change::Unanswered { error, .. }) = changes.first() {
            w.complete = false;
            heavy.error = Some(AuditError::Smp(error.clone()));
        }
        w.record(&light);
        let (smps, sm_error) = w.read_sm(t, &mut changes);
        heavy.smps += smps;
        if let Some(e) = sm_error {
            w.complete = false;
            heavy.error = Some(AuditError::Smp(e));
        }
        let sweep = w.sweep_of(light, changes, Some(heavy));
        Ok((w, sweep))
    }

    fn sweep_of(&self, light: Light, changes: Vec<Change>, heavy: Option<Heavy>) -> Sweep {
        Sweep {
            light,
            changes,
            heavy,
            number: self.sweeps,
            last_full: self.last_full,
            last_full_at: self.last_full_at,
        }
    }

    /// Keeps what `light` read (the tops, the switches flagged) for the next sweep to compare
    /// with; a switch that did not answer keeps what was known of it.
    fn record(&mut self, light: &Light) {
        let mut flagged = BTreeSet::new();
        for (g, s) in &light.switches {
            match s {
                Ok(s) => {
                    self.tops.insert(*g, s.linear_fdb_top);
                    if s.port_state_change {
                        flagged.insert(*g);
                    }
                }
                Err(_) => {
                    if self.flagged.contains(g) {
                        flagged.insert(*g);
                    }
                }
            }
        }
        self.flagged = flagged;
    }

    /// The state last read, when every read of it answered (else `None`: not proven, not
    /// refuted).
    pub fn state(&self) -> Option<&FabricState> {
        self.complete.then_some(&self.state)
    }

    /// The discovery the light sweeps follow.
    pub fn discovery(&self) -> &Discovery {
        &self.d
    }

    /// Switches the light sweeps read.
    pub fn switch_count(&self) -> usize {
        switches(&self.d).len()
    }

    /// A light sweep, and the heavy sweep of what it found changed (`full`: of the whole
    /// fabric, changed or not).
    pub fn sweep(&mut self, t: &mut impl TransportExt, full: bool) -> Sweep {
        self.sweeps += 1;
        let light = light_sweep(t, &self.d);
        let mut changes = self.light_changes(&light);
        self.record(&light);
        let because = if full {
            Some(FullBecause::Asked)
        } else if !self.complete {
            Some(FullBecause::Partial)
        } else {
            None
        };
        let heavy = if let Some(because) = because {
            Some(self.full(t, &mut changes, because))
        } else if changes.is_empty() && self.flagged.is_empty() {
            None
        } else {
            Some(self.partial(t, &mut changes))
        };
        self.sweep_of(light, changes, heavy)
    }

    /// The top the LFT last read of `g` reaches (0: none read).
    fn top_read(&self, g: Guid) -> u16 {
        self.state
            .fabric
            .find_guid(g)
            .and_then(|id| self.state.switches.get(&id))
            .map_or(0, |s| {
                u16::try_from(s.lft.ports.len().saturating_sub(1)).unwrap_or(u16::MAX)
            })
    }

    /// What switch `g`'s SwitchInfo `s` shows changed since the last one read.
    fn seen_changes(&self, g: Guid, s: &Seen, out: &mut Vec<Change>) {
        if s.port_state_change && !self.flagged.contains(&g) {
            out.push(Change::PortStateChange { switch: g });
        }
        match self.tops.get(&g) {
            Some(&was) if was != s.linear_fdb_top => out.push(Change::Top {
                switch: g,
                was,
                now: s.linear_fdb_top,
            }),
            Some(_) => {}
            // Never read before: a change, from the top its LFT as last read reaches.
            None => out.push(Change::Top {
                switch: g,
                was: self.top_read(g),
                now: s.linear_fdb_top,
            }),
        }
    }

    /// What the light sweep shows changed since the last one.
    fn light_changes(&self, light: &Light) -> Vec<Change> {
        let mut out = Vec::new();
        for (g, s) in &light.switches {
            match s {
                Err(e) => out.push(Change::Unanswered {
                    switch: Some(*g),
                    error: e.clone(),
                }),
                Ok(s) => self.seen_changes(*g, s, &mut out),
            }
        }
        out
    }

    /// The master SM's LID, from the local port's PortInfo (one SMP): a change, or the
    /// local port not answering, goes to `changes`. The SMPs it took, and the error when the
    /// local port did not answer (the state's SM port is then stale: no proof).
    fn read_sm(
        &mut self,
        t: &mut impl TransportExt,
        changes: &mut Vec<Change>,
    ) -> (usize, Option<SmpError>) {
        match t.port_info(&DrPath::local(), 0) {
            Err(error) => {
                changes.push(Change::Unanswered {
                    switch: None,
                    error: error.clone(),
                });
                return (1, Some(error));
            }
            Ok((i, _)) => {
                let now = i.master_sm_lid;
                if self.master_sm_lid != Some(now) {
                    changes.push(Change::MasterSm {
                        was: self.master_sm_lid,
                        now,
                    });
                }
                self.master_sm_lid = Some(now);
                place_sm(&mut self.state, now);
            }
        }
        (1, None)
    }

    /// Discovers and reads the whole fabric again (its SwitchInfos first, for the tops the
    /// next sweep compares with); what moved against the state before.
    fn full(
        &mut self,
        t: &mut impl TransportExt,
        changes: &mut Vec<Change>,
        because: FullBecause,
    ) -> Heavy {
        let mut heavy = Heavy::new(Some(because));
        let d = match discover(t) {
            Ok(d) => d,
            Err(e) => {
                self.complete = false;
                heavy.error = Some(AuditError::Discover(e));
                return heavy;
            }
        };
        heavy.smps = d.smps;
        let light = light_sweep(t, &d);
        heavy.smps += light.smps();
        // A switch whose SwitchInfo did not answer here has no top: the next sweep reads
        // its LFT again.
        self.tops.clear();
        self.flagged.clear();
        self.record(&light);
        for (g, r) in &light.switches {
            if let Err(e) = r {
                changes.push(Change::Unanswered {
                    switch: Some(*g),
                    error: e.clone(),
                });
            }
        }
        let (smps, sm_error) = self.read_sm(t, changes);
        heavy.smps += smps;
        let mut c = Counted::new(&mut *t);
        let read = audit_discovered(&mut c, &d, &self.name);
        heavy.smps += c.gets();
        match read {
            Ok(mut read) => {
                if let Some(lid) = self.master_sm_lid {
                    place_sm(&mut read.state, lid);
                }
                let moved = difference(&read.state, &self.state);
                for b in &moved.blocks_by_switch() {
                    changes.push(Change::Blocks {
                        switch: b.0,
                        blocks: b.1.clone(),
                    });
                }
                heavy.moved = Some(moved);
                self.state = read.state;
                self.d = d;
                self.complete = true;
                self.last_full = self.sweeps;
                self.last_full_at = SystemTime::now();
                if let Some(e) = sm_error {
                    self.complete = false;
                    heavy.error = Some(AuditError::Smp(e));
                }
            }
            Err(e) => {
                self.d = d;
                self.complete = false;
                heavy.error = Some(e);
            }
        }
        heavy
    }

    /// Reads the ports of the switches flagged or moved, routes the switches that stopped
    /// answering around the cables those ports show down (and reads them the same way), then
    /// the LFT blocks of those whose PortStateChange or LinearFDBTop moved. The whole fabric
    /// again only when that cannot be done ([`FullBecause`]).
    fn partial(&mut self, t: &mut impl TransportExt, changes: &mut Vec<Change>) -> Heavy {
        let mut heavy = Heavy::new(None);
        let mut lfts: BTreeSet<Guid> = BTreeSet::new();
        let mut unanswered: BTreeSet<Guid> = BTreeSet::new();
        for c in changes.iter() {
            match c {
                Change::Top { switch, .. } | Change::PortStateChange { switch } => {
                    lfts.insert(*switch);
                }
                Change::Unanswered {
                    switch: Some(g), ..
                } => {
                    unanswered.insert(*g);
                }
                _ => {}
            }
        }
        let mut pending: BTreeSet<Guid> = self.flagged.union(&lfts).copied().collect();
        pending.retain(|g| !unanswered.contains(g));
        let peers = reroute::peers(&self.d);
        let mut down: BTreeSet<WireEnd> = BTreeSet::new();
        // Ends read up on their known cable: one of them also down (its peer's end read down)
        // means the cable moved.
        let mut read_up: BTreeSet<WireEnd> = BTreeSet::new();
        let mut read: BTreeSet<Guid> = BTreeSet::new();
        let mut c = Counted::new(&mut *t);
        let fallback = loop {
            let batch: Vec<(Guid, DrPath, u8)> = pending
                .iter()
                .filter(|g| !read.contains(g))
                .filter_map(|g| {
                    let f = self.d.nodes.get(g)?;
                    Some((*g, f.path.clone(), f.info.num_ports))
                })
                .collect();
            match read_ports(&mut c, &batch) {
                Err(e) => break Some(FullBecause::PortUnread(e)),
                Ok(per) => {
                    if let Err(why) = same_peers(&mut c, &batch, &per, &peers) {
                        break Some(why);
                    }
                    let mut up = None;
                    for (g, ports) in per {
                        let mut moved = Vec::new();
                        for (p, is_up) in ports {
                            let end = (g, PortNum(p));
                            if is_up == peers.contains_key(&end) {
                                if is_up {
                                    read_up.insert(end);
                                }
                                continue;
                            }
                            moved.push(p);
                            if is_up {
                                up = Some(FullBecause::PortUp { switch: g, port: p });
                            } else {
                                down.insert(end);
                                down.extend(peers.get(&end).copied());
                            }
                        }
                        if !moved.is_empty() {
                            changes.push(Change::Ports {
                                switch: g,
                                ports: moved,
                            });
                        }
                        read.insert(g);
                    }
                    if up.is_some() {
                        break up;
                    }
                }
            }
            if unanswered.is_empty() {
                break None;
            }
            match self.reroute(&mut c, &unanswered, &down, changes) {
                Err(why) => break Some(why),
                Ok(again) => {
                    heavy.rerouted.extend(unanswered.iter().copied());
                    unanswered.clear();
                    lfts.extend(again.iter().copied());
                    pending.extend(again);
                    pending.extend(heavy.rerouted.iter().filter(|g| self.flagged.contains(g)));
                }
            }
        };
        heavy.smps += c.gets();
        let fallback = fallback
            .or_else(|| {
                down.iter()
                    .find(|e| read_up.contains(e))
                    .map(|e| FullBecause::PortUp {
                        switch: e.0,
                        port: e.1 .0,
                    })
            })
            .or_else(|| self.route_around(&down).err());
        if let Some(because) = fallback {
            let rerouted = std::mem::take(&mut heavy.rerouted);
            let mut full = self.full(t, changes, because);
            full.smps += heavy.smps;
            full.rerouted = rerouted;
            return full;
        }
        if !down.is_empty() {
            // A cable down is when an SM reroutes, and its writes show in no SwitchInfo:
            // every switch's LFT is read again, so the state proven is the one now live.
            lfts.extend(self.tops.keys().copied());
        }
        heavy.switches = read.union(&lfts).copied().collect();
        let mut c = Counted::new(&mut *t);
        for g in &lfts {
            let (Some(path), Some(&top)) = (self.d.nodes.get(g).map(|f| &f.path), self.tops.get(g))
            else {
                continue;
            };
            match read_lft(&mut c, path, top) {
                Ok(lft) => {
                    if let Some(id) = self.state.fabric.find_guid(*g) {
                        let sw = self.state.switches.entry(id).or_default();
                        let blocks = differ::blocks_differing(&sw.lft.ports, &lft.ports);
                        if !blocks.is_empty() {
                            changes.push(Change::Blocks { switch: *g, blocks });
                        }
                        sw.lft = lft;
                    }
                }
                Err(e) => {
                    self.complete = false;
                    heavy.error = Some(AuditError::Smp(e));
                }
            }
        }
        heavy.smps += c.gets();
        let (smps, sm_error) = self.read_sm(t, changes);
        heavy.smps += smps;
        if let Some(e) = sm_error {
            self.complete = false;
            heavy.error = Some(AuditError::Smp(e));
        }
        heavy
    }

    /// Routes `unanswered` around the ends `down` over the links discovery found, and reads
    /// each one's NodeInfo (the same node?) and SwitchInfo on its new route; keeps the routes
    /// that answered. The switches whose SwitchInfo shows a change (then in `changes`).
    fn reroute(
        &mut self,
        t: &mut impl TransportExt,
        unanswered: &BTreeSet<Guid>,
        down: &BTreeSet<WireEnd>,
        changes: &mut Vec<Change>,
    ) -> Result<Vec<Guid>, FullBecause> {
        let routes = reroute::routes(&self.d, down);
        let mut tries = Vec::with_capacity(unanswered.len());
        for g in unanswered {
            let path = routes
                .node
                .get(g)
                .ok_or(FullBecause::Unreachable { node: *g })?;
            tries.push((*g, path.clone()));
        }
        let targets: Vec<Target> = tries
            .iter()
            .flat_map(|(_, path)| {
                [Attr::NodeInfo, Attr::SwitchInfo].map(|attr| Target {
                    path: path.clone(),
                    attr,
                    modifier: 0,
                })
            })
            .collect();
        let mut answers = t.get_all(&targets).into_iter();
        let mut again = Vec::new();
        for (g, path) in tries {
            let still = |error| FullBecause::StillUnanswered { switch: g, error };
            let node = answers.next().unwrap_or_else(|| Err(short()));
            let info = answers.next().unwrap_or_else(|| Err(short()));
            let found = Guid(NodeInfo::decode(&node.map_err(still)?).node_guid);
            if found != g {
                return Err(FullBecause::Moved { expected: g, found });
            }
            let info = info.map_err(still)?;
            let seen = Seen {
                port_state_change: smp::port_state_change(&info),
                linear_fdb_top: SwitchInfo::decode(&info).linear_fdb_top,
            };
            let before = changes.len();
            self.seen_changes(g, &seen, changes);
            if changes.len() > before {
                again.push(g);
            }
            self.tops.insert(g, seen.linear_fdb_top);
            if seen.port_state_change {
                self.flagged.insert(g);
            } else {
                self.flagged.remove(&g);
            }
            if let Some(f) = self.d.nodes.get_mut(&g) {
                f.path = path;
            }
        }
        Ok(again)
    }

    /// Takes the cables with an end in `down` out of the discovery (and marks them down in
    /// the state), and gives every node whose route crossed one a route around them; an end
    /// node no route reaches any more is gone (out of the discovery, down in the state). The
    /// switch no route reaches any more, if one.
    fn route_around(&mut self, down: &BTreeSet<WireEnd>) -> Result<(), FullBecause> {
        if down.is_empty() {
            return Ok(());
        }
        let peers = reroute::peers(&self.d);
        let local = reroute::local(&self.d).ok_or(FullBecause::Partial)?;
        let routes = reroute::routes(&self.d, down);
        // End nodes no route reaches any more: gone, as a discovery would not find them.
        let mut gone = Vec::new();
        for (g, f) in &mut self.d.nodes {
            let switch = f.info.node_type == NodeType::Switch;
            if reroute::crosses(&peers, local, &f.path, down) {
                match routes.node.get(g) {
                    Some(r) => f.path = r.clone(),
                    None if switch => return Err(FullBecause::Unreachable { node: *g }),
                    None => {
                        gone.push(*g);
                        continue;
                    }
                }
            }
            let mut ports = BTreeMap::new();
            for (p, path) in &f.ports {
                if !reroute::crosses(&peers, local, path, down) {
                    ports.insert(*p, path.clone());
                } else if let Some(r) = routes.end.get(&(*g, PortNum(*p))) {
                    ports.insert(*p, r.clone());
                }
            }
            if ports.is_empty() && !f.ports.is_empty() {
                gone.push(*g);
            }
            f.ports = ports;
        }
        for g in &gone {
            self.d.nodes.remove(g);
            self.d.view.nodes.remove(g);
            self.d.view.lids.retain(|(n, _), _| n != g);
        }
        self.d.view.links.retain(|(a, b)| {
            !down.contains(a) && !down.contains(b) && !gone.contains(&a.0) && !gone.contains(&b.0)
        });
        for end in down {
            self.d.widths.remove(end);
            self.d.speeds.remove(end);
        }
        let f = &self.state.fabric;
        let links: Vec<LinkId> = down
            .iter()
            .filter_map(|(g, p)| {
                let id = f.find_guid(*g)?;
                f.peer(PortRef::new(id, p.0)).map(|(_, l)| l)
            })
            .collect();
        let nodes: Vec<_> = gone.iter().filter_map(|g| f.find_guid(*g)).collect();
        let mut b = FabricBuilder::from(self.state.fabric.clone());
        for l in links {
            b.set_link_down(l);
        }
        for n in nodes {
            b.set_node_down(n);
        }
        self.state.fabric = b.finish();
        Ok(())
    }
}

/// The PortInfo of every port of each switch of `read` (one batch): per switch, each port
/// and whether its link is up.
type PortsUp = Vec<(Guid, Vec<(u8, bool)>)>;

/// Reads the NodeInfo across every port of `read` that is up on a cable discovery found
/// (`peers`): the node and port there must be the ones found, else a cable or a node moved
/// (a swapped cable or a replaced node keeps the port up and shows in no PortInfo).
fn same_peers(
    t: &mut impl TransportExt,
    read: &[(Guid, DrPath, u8)],
    per: &PortsUp,
    peers: &BTreeMap<WireEnd, WireEnd>,
) -> Result<(), FullBecause> {
    let mut across = Vec::new();
    for ((g, path, _), (_, ports)) in read.iter().zip(per) {
        for &(p, is_up) in ports {
            let peer = peers.get(&(*g, PortNum(p)));
            if let (true, Some(peer), Some(next)) = (is_up, peer, path.then(p)) {
                across.push((*peer, next));
            }
        }
    }
    let targets: Vec<Target> = across
        .iter()
        .map(|(_, path)| Target {
            path: path.clone(),
            attr: Attr::NodeInfo,
            modifier: 0,
        })
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    let mut answers = t.get_all(&targets).into_iter();
    for ((guid, port), _) in across {
        let info = NodeInfo::decode(
            &answers
                .next()
                .unwrap_or_else(|| Err(short()))
                .map_err(FullBecause::PortUnread)?,
        );
        let found = Guid(info.node_guid);
        if found != guid || info.local_port != port.0 {
            return Err(FullBecause::Moved {
                expected: guid,
                found,
            });
        }
    }
    Ok(())
}

fn read_ports(t: &mut impl TransportExt, read: &[(Guid, DrPath, u8)]) -> Result<PortsUp, SmpError> {
    let targets: Vec<Target> = read
        .iter()
        .flat_map(|(_, path, n)| {
            (1..=*n).map(move |p| Target {
                path: path.clone(),
                attr: Attr::PortInfo,
                modifier: u32::from(p),
            })
        })
        .collect();
    if targets.is_empty() {
        return Ok(Vec::new());
    }
    let mut answers = t.get_all(&targets).into_iter();
    let mut out = Vec::with_capacity(read.len());
    for (g, _, n) in read {
        let mut ports = Vec::with_capacity(usize::from(*n));
        for p in 1..=*n {
            let pi = answers.next().unwrap_or_else(|| Err(short()))?;
            ports.push((p, port_up(&PortInfo::decode(&pi))));
        }
        out.push((*g, ports));
    }
    Ok(out)
}

/// One switch's LFT, block by block up to `top` (one batch).
fn read_lft(
    t: &mut impl TransportExt,
    path: &DrPath,
    top: u16,
) -> Result<weft_fabric::Lft, SmpError> {
    let targets: Vec<Target> = (0..=(usize::from(top) / LFT_BLOCK))
        .map(|b| Target {
            path: path.clone(),
            attr: Attr::Lft,
            modifier: b as u32,
        })
        .collect();
    let answers = t.get_all(&targets);
    if answers.len() < targets.len() {
        return Err(short());
    }
    let mut entries = Vec::with_capacity(usize::from(top) + 1);
    for r in answers {
        entries.extend_from_slice(&r?);
    }
    Ok(observe::lft(entries, top))
}

/// The SM on the port that owns `lid` (none: LID 0, or a LID no port owns).
fn place_sm(state: &mut FabricState, lid: u16) {
    let owners = state.lids.owners(&state.fabric);
    state.sm = match owners.get(usize::from(lid)) {
        Some(Some((n, p))) if lid != 0 => vec![PortRef::new(*n, p.0)],
        _ => Vec::new(),
    };
}

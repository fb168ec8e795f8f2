//! `weft watch`'s sweeps: a fabric kept under watch through any [`Transport`](crate::Transport).
//!
//! A **light sweep** ([`light_sweep`]) reads one SwitchInfo per switch discovery found (its
//! PortStateChange bit and LinearFDBTop), as one batch, and the local port's PortInfo (the
//! master SM's LID): one SMP per switch and one to the local port. A switch that does not
//! answer, whose PortStateChange is newly set or whose LinearFDBTop moved is a [`Change`].
//! weft never clears PortStateChange: that is the SM's (a watcher that cleared it would hide
//! the change from OpenSM's own light sweep); a bit that stays set costs its switch's
//! PortInfos each sweep, and nothing more while its ports stay as they were.
//!
//! A **heavy sweep** ([`Watcher::sweep`]) reads what changed: the PortInfo of every port of
//! each switch flagged, and its LFT blocks up to its LinearFDBTop; when a port's state no
//! longer matches the cables discovery found (a cable pulled or plugged), a switch stopped
//! answering, or the last read was partial, the whole fabric is discovered and read again
//! ([`audit_discovered`]: what `weft audit` reads). An LFT block written by someone else
//! shows in no SwitchInfo: a **full** sweep (every `--full-every` sweeps, and `--once`)
//! reads every table.
//!
//! A state is offered for proof only when every read of the sweep answered
//! ([`Watcher::state`]); otherwise the verdict is unknown and the error is said.
//!
//! [`difference`] compares the state read with a reference (the desired state, or the last
//! sweep's): LFT blocks by switch and block, cables down or new, nodes gone or new;
//! [`repair_states`] puts the live tables on the desired state's fabric, with the cables and
//! nodes the fabric lost marked down, for `weft_plan::plan` to plan a minimal repair.

mod differ;

pub use differ::{difference, repair_states, Block, Cable, Difference, RepairError};

use crate::audit::{audit_discovered, AuditError};
use crate::discover::{discover, port_up, Discovery};
use crate::observe;
use crate::smp::{self, Attr, DrPath, NodeType, PortInfo, SwitchInfo, LFT_BLOCK};
use crate::transport::{Counted, SmpError, Target, Transport as _, TransportExt};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{FabricState, Guid, PortRef};

/// What a switch's SwitchInfo said in a light sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// PortStateChange: one of its ports changed state since the SM last cleared the bit.
    pub port_state_change: bool,
    /// The highest LID its LFT forwards.
    pub linear_fdb_top: u16,
}

/// A light sweep: one SwitchInfo per switch, the master SM's LID.
#[derive(Clone, Debug)]
pub struct Light {
    /// Per switch GUID: its SwitchInfo, or why it did not answer.
    pub switches: BTreeMap<Guid, Result<Seen, SmpError>>,
    /// The master SM's LID in the local port's PortInfo.
    pub master_sm_lid: Result<u16, SmpError>,
    /// SMPs to switches (one each).
    pub switch_smps: usize,
    /// SMPs to the local port (one).
    pub local_smps: usize,
    /// Nodes in the node set the sweep watched (discovery's).
    pub nodes: usize,
}

impl Light {
    /// Every SMP the sweep sent.
    pub fn smps(&self) -> usize {
        self.switch_smps + self.local_smps
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

/// One SwitchInfo per switch `d` found (one batch), and the local port's PortInfo.
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
    let master_sm_lid = t
        .port_info(&DrPath::local(), 0)
        .map(|(i, _)| i.master_sm_lid);
    Light {
        switches: out,
        master_sm_lid,
        switch_smps: targets.len(),
        local_smps: 1,
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

/// What a heavy sweep read.
#[derive(Debug)]
pub struct Heavy {
    /// The whole fabric, discovered and read again (else: only the switches flagged).
    pub full: bool,
    /// The switches whose ports or LFT blocks were read (a partial sweep).
    pub switches: Vec<Guid>,
    /// SMPs it sent.
    pub smps: usize,
    /// Why the state it read is partial (no proof: unknown).
    pub error: Option<AuditError>,
    /// The state read, against the one before (a full sweep).
    pub moved: Option<Difference>,
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
}

impl Watcher {
    /// Discovers the fabric through `t` and reads it whole (named `name`, as `weft audit`
    /// names it); the SMPs it took.
    pub fn start(t: &mut impl TransportExt, name: &str) -> Result<(Watcher, usize), AuditError> {
        let d = discover(t)?;
        let read = audit_discovered(t, &d, name)?;
        let light = light_sweep(t, &d);
        let smps = d.smps + read.smps + light.smps();
        let mut w = Watcher {
            name: name.to_owned(),
            d,
            state: read.state,
            complete: true,
            tops: BTreeMap::new(),
            flagged: BTreeSet::new(),
            master_sm_lid: None,
        };
        // What the first light sweep compares with: the tops and the SM as read now, and
        // the PortStateChange bits already set (an SM's to clear, not a change since).
        w.light_changes(&light);
        w.record(&light);
        Ok((w, smps))
    }

    /// Keeps what `light` read (the tops, the SM, the switches flagged) for the next sweep
    /// to compare with.
    fn record(&mut self, light: &Light) {
        for (g, s) in &light.switches {
            if let Ok(s) = s {
                self.tops.insert(*g, s.linear_fdb_top);
            }
        }
        if let Ok(lid) = light.master_sm_lid {
            self.master_sm_lid = Some(lid);
            place_sm(&mut self.state, lid);
        }
        self.flagged = light
            .switches
            .iter()
            .filter(|(_, s)| s.as_ref().is_ok_and(|s| s.port_state_change))
            .map(|(g, _)| *g)
            .collect();
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
        self.tops.len()
    }

    /// A light sweep, and the heavy sweep of what it found changed (`full`: of the whole
    /// fabric, changed or not).
    pub fn sweep(&mut self, t: &mut impl TransportExt, full: bool) -> Sweep {
        let light = light_sweep(t, &self.d);
        let mut changes = self.light_changes(&light);
        let rediscover = !self.complete
            || changes
                .iter()
                .any(|c| matches!(c, Change::Unanswered { .. }));
        self.record(&light);
        let heavy = if full || rediscover {
            Some(self.full(t, &mut changes))
        } else if changes.is_empty() && self.flagged.is_empty() {
            None
        } else {
            Some(self.partial(t, &light, &mut changes))
        };
        Sweep {
            light,
            changes,
            heavy,
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
                Ok(s) => {
                    if s.port_state_change && !self.flagged.contains(g) {
                        out.push(Change::PortStateChange { switch: *g });
                    }
                    match self.tops.get(g) {
                        Some(&was) if was != s.linear_fdb_top => out.push(Change::Top {
                            switch: *g,
                            was,
                            now: s.linear_fdb_top,
                        }),
                        _ => {}
                    }
                }
            }
        }
        match &light.master_sm_lid {
            Err(e) => out.push(Change::Unanswered {
                switch: None,
                error: e.clone(),
            }),
            Ok(now) if self.master_sm_lid != Some(*now) => out.push(Change::MasterSm {
                was: self.master_sm_lid,
                now: *now,
            }),
            Ok(_) => {}
        }
        out
    }

    /// Discovers and reads the whole fabric again; what moved against the state before.
    fn full(&mut self, t: &mut impl TransportExt, changes: &mut Vec<Change>) -> Heavy {
        let mut heavy = Heavy {
            full: true,
            switches: Vec::new(),
            smps: 0,
            error: None,
            moved: None,
        };
        let d = match discover(t) {
            Ok(d) => d,
            Err(e) => {
                self.complete = false;
                heavy.error = Some(AuditError::Discover(e));
                return heavy;
            }
        };
        heavy.smps = d.smps;
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
            }
            Err(e) => {
                self.d = d;
                self.complete = false;
                heavy.error = Some(e);
            }
        }
        heavy
    }

    /// Reads the ports and LFT blocks of the switches the light sweep flagged; the whole
    /// fabric again when their ports no longer match the cables discovery found.
    fn partial(
        &mut self,
        t: &mut impl TransportExt,
        light: &Light,
        changes: &mut Vec<Change>,
    ) -> Heavy {
        let moved_tops: BTreeSet<Guid> = changes
            .iter()
            .filter_map(|c| match c {
                Change::Top { switch, .. } | Change::PortStateChange { switch } => Some(*switch),
                _ => None,
            })
            .collect();
        let read: Vec<(Guid, DrPath, u8)> = switches(&self.d)
            .into_iter()
            .filter(|(g, _, _)| self.flagged.contains(g) || moved_tops.contains(g))
            .map(|(g, p, n)| (g, p.clone(), n))
            .collect();
        let mut c = Counted::new(&mut *t);
        let linked: BTreeSet<(Guid, u8)> = self
            .d
            .view
            .links
            .iter()
            .flat_map(|&(a, b)| [(a.0, a.1 .0), (b.0, b.1 .0)])
            .collect();
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
        let mut answers = c.get_all(&targets).into_iter();
        let mut failed = None;
        for (g, _, n) in &read {
            let mut ports = Vec::new();
            for p in 1..=*n {
                match answers.next().unwrap_or_else(|| Err(short())) {
                    Ok(pi) => {
                        if port_up(&PortInfo::decode(&pi)) != linked.contains(&(*g, p)) {
                            ports.push(p);
                        }
                    }
                    Err(e) => failed = Some(e),
                }
            }
            if !ports.is_empty() {
                changes.push(Change::Ports { switch: *g, ports });
            }
        }
        let ports_read = c.gets();
        if failed.is_some() || changes.iter().any(|c| matches!(c, Change::Ports { .. })) {
            let mut heavy = self.full(t, changes);
            heavy.smps += ports_read;
            return heavy;
        }
        let lfts: Vec<(Guid, DrPath)> = read
            .iter()
            .filter(|(g, _, _)| moved_tops.contains(g))
            .map(|(g, p, _)| (*g, p.clone()))
            .collect();
        let mut heavy = Heavy {
            full: false,
            switches: read.iter().map(|(g, _, _)| *g).collect(),
            smps: ports_read,
            error: None,
            moved: None,
        };
        let mut c = Counted::new(&mut *t);
        for (g, path) in &lfts {
            let top = light
                .switches
                .get(g)
                .and_then(|s| s.as_ref().ok())
                .map_or(0, |s| s.linear_fdb_top);
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
        heavy
    }
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
    let mut entries = Vec::with_capacity(usize::from(top) + 1);
    for r in t.get_all(&targets) {
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

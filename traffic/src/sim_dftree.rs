//! dFtree inside the simulation: the run-time loop ([`crate::dftree::Controller`] fed with the
//! simulator's own port counters every sweep, its moves applied after the re-path delay) or
//! the papers' best case (every hot-spot-bound packet on the slow lane from the start).
//!
//! The counters a sweep reads, per port (cumulative from the start of the run, warm-up
//! included):
//!
//! * *XmitWait*: the time the port had a packet waiting but could send nothing (for lack of
//!   credits or of arbitration), in ticks of [`TICK_BYTES`] bytes' time on that port (64
//!   bytes, one credit block: 5.12 ns on 4x EDR). Hardware ticks are a multiple of the
//!   symbol time (Quantum switches count every 8 bytes' time, Switch-IB every 32 bytes' per
//!   lane, 128 on a 4x port); 64 bytes lies between. The threshold is in ticks per second
//!   ([`Params::dftree_threshold_ticks_per_s`]): the paper's 100 000 ticks/s is a port waiting
//!   0.05 % of the time at 4x EDR, the simulator's default 10 000 000 one waiting 5.12 %.
//! * *XmitData*: the bytes of every packet the port started sending, divided by 4.

use crate::dftree::{lanes_of, Config, Controller, Moves, PortCounters};
use crate::pattern::Pattern;
use crate::{DftreeMode, Params, SimError};
use serde::Serialize;
use std::collections::BTreeMap;
use weft_fabric::{FabricState, PortRef, Sl, SlSet};

/// Bytes' time in one simulated XmitWait tick.
pub const TICK_BYTES: u32 = 64;

/// What dFtree did during a run (`dftree` in the JSON).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DftreeReport {
    /// `loop` (the run-time loop), `oracle` (hot-spot-bound packets always on the slow lane)
    /// or `off` (every flow on its fast lane).
    pub mode: DftreeMode,
    /// Time between sweeps, in nanoseconds.
    pub sweep_ns: u64,
    /// From a sweep to its moves reaching the sources' new packets, in nanoseconds.
    pub repath_ns: u64,
    /// Bytes' time in one XmitWait tick.
    pub tick_bytes: u32,
    /// Congestion threshold, in XmitWait ticks per second.
    pub threshold_ticks_per_s: f64,
    /// Utilisation below which a congested sender is a contributor.
    pub max_utilisation: f64,
    /// Sweeps at or below the threshold before a hot-spot is released.
    pub release_sweeps: u32,
    /// Sweeps taken (the first, at 0, only records).
    pub sweeps: u64,
    /// Every hot-spot the loop marked, in order of marking.
    pub hotspots: Vec<Hotspot>,
    /// Every flow moved, in order.
    pub moves: Vec<Move>,
    /// The flows on their slow lane at the end, sorted by source and destination.
    pub slow_flows_at_end: Vec<SlowFlow>,
}

/// A hot-spot the loop marked.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Hotspot {
    /// The end port, `node:port`.
    pub port: String,
    /// The sweep that marked it, in nanoseconds.
    pub marked_ns: u64,
    /// The sweep that cleared it (`null`: still marked at the end).
    pub cleared_ns: Option<u64>,
}

/// One flow moved.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Move {
    /// The sweep that decided it, in nanoseconds.
    pub swept_ns: u64,
    /// When the source's new packets took the new SL, in nanoseconds.
    pub applied_ns: u64,
    /// `slow` or `fast`.
    pub lane: &'static str,
    /// The source end port, `node:port`.
    pub src: String,
    /// The destination (the hot-spot), `node:port`.
    pub dst: String,
    /// The SL the flow's new packets carry.
    pub sl: u8,
}

/// A flow on its slow lane.
#[derive(Clone, Debug, Serialize, PartialEq, PartialOrd)]
pub struct SlowFlow {
    /// The source end port, `node:port`.
    pub src: String,
    /// The destination, `node:port`.
    pub dst: String,
    /// Its slow-lane SL.
    pub sl: u8,
}

/// The loop's state inside one run.
pub(crate) struct Loop {
    mode: DftreeMode,
    ctl: Option<Controller>,
    /// The state's dFtree lane pairs, (fast, slow).
    lanes: Vec<(Sl, Sl)>,
    /// Ports read at a sweep: (node GUID, port) and its channel.
    watch: Vec<((u64, u8), u32)>,
    /// Per channel: picoseconds of one tick.
    tick_ps: Vec<u64>,
    /// Per channel: cumulative wait (closed stalls) in picoseconds, and bytes sent.
    wait_ps: Vec<u64>,
    data: Vec<u64>,
    /// End port (node GUID, port) → host, and LID → host.
    host_of_key: BTreeMap<(u64, u8), u32>,
    host_of_lid: BTreeMap<u16, u32>,
    /// Moves decided and not yet applied.
    pending: Vec<(u64, Moves)>,
    /// (source host, destination LID) → the slow SL its new packets carry.
    slow: BTreeMap<(u32, u16), u8>,
    /// Hot-spots: (end port, marked, cleared), in picoseconds.
    hot: Vec<((u64, u8), u64, Option<u64>)>,
    /// Moves: (swept, applied, lane, source host, destination LID, SL).
    moved: Vec<(u64, u64, &'static str, u32, u16, u8)>,
    report: DftreeReport,
}

impl Loop {
    /// The loop for a run, `None` for a state without dFtree lanes. `chans` are the
    /// channels' (from, rate in Mb/s); `hosts` the hosts' (port, LID).
    pub(crate) fn new(
        st: &FabricState,
        p: &Params,
        chans: &[(PortRef, u64)],
        hosts: &[(PortRef, u16)],
    ) -> Result<Option<Loop>, SimError> {
        let config = Config {
            threshold_ticks_per_s: p.dftree_threshold_ticks_per_s,
            release_sweeps: p.dftree_release_sweeps,
            ..Config::default()
        };
        let ctl = match Controller::new(st, config.clone()) {
            Ok(c) => c,
            Err(crate::dftree::DftreeError::NoLanes) => return Ok(None),
            Err(e) => return Err(SimError::Param(e.to_string())),
        };
        if p.dftree == DftreeMode::Loop && p.dftree_sweep_ns == 0 {
            return Err(SimError::Param(
                "the dFtree sweep interval must be above 0".into(),
            ));
        }
        let guid = |pr: PortRef| {
            st.fabric
                .nodes()
                .get(pr.node.index())
                .map_or(0, |n| n.guid().0)
        };
        let by_key: BTreeMap<(u64, u8), u32> = chans
            .iter()
            .enumerate()
            .map(|(i, (from, _))| ((guid(*from), from.port.0), i as u32))
            .collect();
        let watch = ctl
            .ports()
            .iter()
            .flat_map(|e| [(e.guid, e.port), (e.switch_guid, e.switch_port)])
            .filter_map(|k| by_key.get(&k).map(|&c| (k, c)))
            .collect();
        let host_of_key = hosts
            .iter()
            .enumerate()
            .map(|(i, (pr, _))| ((guid(*pr), pr.port.0), i as u32))
            .collect();
        let host_of_lid = hosts
            .iter()
            .enumerate()
            .map(|(i, &(_, lid))| (lid, i as u32))
            .collect();
        let n = chans.len();
        Ok(Some(Loop {
            mode: p.dftree,
            lanes: st.dftree_lanes.clone(),
            watch,
            tick_ps: chans
                .iter()
                .map(|&(_, mbps)| crate::sim::ser(TICK_BYTES, mbps).max(1))
                .collect(),
            wait_ps: vec![0; n],
            data: vec![0; n],
            host_of_key,
            host_of_lid,
            pending: Vec::new(),
            slow: BTreeMap::new(),
            hot: Vec::new(),
            moved: Vec::new(),
            report: DftreeReport {
                mode: p.dftree,
                sweep_ns: p.dftree_sweep_ns,
                repath_ns: p.dftree_repath_ns,
                tick_bytes: TICK_BYTES,
                threshold_ticks_per_s: config.threshold_ticks_per_s,
                max_utilisation: config.max_utilisation,
                release_sweeps: config.release_sweeps,
                sweeps: 0,
                hotspots: Vec::new(),
                moves: Vec::new(),
                slow_flows_at_end: Vec::new(),
            },
            ctl: (p.dftree == DftreeMode::Loop).then_some(ctl),
        }))
    }

    /// Whether sweeps run.
    pub(crate) fn sweeping(&self) -> bool {
        self.ctl.is_some()
    }

    /// Channel `c` sent `bytes`.
    pub(crate) fn sent(&mut self, c: usize, bytes: u32) {
        if let Some(d) = self.data.get_mut(c) {
            *d += u64::from(bytes);
        }
    }

    /// Channel `c` waited `ps`.
    pub(crate) fn waited(&mut self, c: usize, ps: u64) {
        if let Some(w) = self.wait_ps.get_mut(c) {
            *w += ps;
        }
    }

    /// The SL of a packet from host `src` to host `dst` (LID `dlid`) whose pair has `sls`.
    pub(crate) fn sl(&self, src: u32, dst: u32, dlid: u16, sls: SlSet, pattern: &Pattern) -> Sl {
        // A dFtree pair's fast SL; a pair without lanes, its lowest (the traffic carries no
        // service ID to pick another class by).
        let lanes = lanes_of(&self.lanes, sls);
        let fast = lanes
            .map(|(fast, _)| fast)
            .or_else(|| sls.iter().next())
            .unwrap_or(Sl(0));
        match self.mode {
            DftreeMode::Off => fast,
            DftreeMode::Oracle => match lanes {
                Some((_, slow)) if pattern.is_hotspot(dst) => slow,
                _ => fast,
            },
            DftreeMode::Loop => self.slow.get(&(src, dlid)).map_or(fast, |&s| Sl(s)),
        }
    }

    /// A sweep at `now` (picoseconds), with the stalls open since `stall_since`; returns the
    /// index of moves to apply after the re-path delay, if any.
    pub(crate) fn sweep(&mut self, now: u64, stall_since: &[Option<u64>]) -> Option<u32> {
        let ctl = self.ctl.as_mut()?;
        let counters: Vec<PortCounters> = self
            .watch
            .iter()
            .map(|&((guid, port), c)| {
                let c = c as usize;
                let open = stall_since
                    .get(c)
                    .copied()
                    .flatten()
                    .map_or(0, |s| now.saturating_sub(s));
                let wait = self.wait_ps.get(c).copied().unwrap_or(0) + open;
                PortCounters {
                    guid,
                    port,
                    xmit_wait: wait / self.tick_ps.get(c).copied().unwrap_or(1),
                    xmit_data_words: self.data.get(c).copied().unwrap_or(0) / 4,
                }
            })
            .collect();
        let moves = ctl.sweep(now / 1000, &counters);
        self.report.sweeps = ctl.sweeps();
        for &k in &moves.hotspots_marked {
            self.hot.push((k, now, None));
        }
        for &k in &moves.hotspots_cleared {
            if let Some(h) = self
                .hot
                .iter_mut()
                .rev()
                .find(|h| h.0 == k && h.2.is_none())
            {
                h.2 = Some(now);
            }
        }
        if moves.to_slow.is_empty() && moves.to_fast.is_empty() {
            return None;
        }
        self.pending.push((now, moves));
        Some(self.pending.len() as u32 - 1)
    }

    /// Applies moves `idx` at `now` (picoseconds).
    pub(crate) fn apply(&mut self, now: u64, idx: u32) {
        let Some((swept, moves)) = self
            .pending
            .get_mut(idx as usize)
            .map(|(t, m)| (*t, std::mem::take(m)))
        else {
            return;
        };
        for (lane, flows) in [("slow", &moves.to_slow), ("fast", &moves.to_fast)] {
            for f in flows {
                let Some(&src) = self.host_of_key.get(&(f.src_guid, f.src_port)) else {
                    continue;
                };
                let sl = if lane == "slow" {
                    self.slow.insert((src, f.dst_lid), f.slow_sl);
                    f.slow_sl
                } else {
                    self.slow.remove(&(src, f.dst_lid));
                    f.fast_sl
                };
                self.moved.push((swept, now, lane, src, f.dst_lid, sl));
            }
        }
    }

    /// The report, names given by `name` (a host's `node:port`) and `port_name` (an end
    /// port's, by node GUID and port).
    pub(crate) fn finish(
        mut self,
        host_name: impl Fn(u32) -> String,
        port_name: impl Fn((u64, u8)) -> String,
    ) -> DftreeReport {
        let lid_name = |lid: u16| {
            self.host_of_lid
                .get(&lid)
                .map_or_else(|| format!("LID {lid}"), |&h| host_name(h))
        };
        self.report.hotspots = self
            .hot
            .iter()
            .map(|&(k, marked, cleared)| Hotspot {
                port: port_name(k),
                marked_ns: marked / 1000,
                cleared_ns: cleared.map(|c| c / 1000),
            })
            .collect();
        self.report.moves = self
            .moved
            .iter()
            .map(|&(swept, applied, lane, s, d, sl)| Move {
                swept_ns: swept / 1000,
                applied_ns: applied / 1000,
                lane,
                src: host_name(s),
                dst: lid_name(d),
                sl,
            })
            .collect();
        let mut slow: Vec<SlowFlow> = self
            .slow
            .iter()
            .map(|(&(s, d), &sl)| SlowFlow {
                src: host_name(s),
                dst: lid_name(d),
                sl,
            })
            .collect();
        slow.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        self.report.slow_flows_at_end = slow;
        self.report
    }
}

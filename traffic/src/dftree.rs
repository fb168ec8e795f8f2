//! dFtree's run-time controller (Paper IV, Algorithm 1): after each performance sweep, find
//! the end-node hot-spots and their contributors from port counters, and say which flows move
//! to the slow lane and back.
//!
//! The controller is pure: it reads port counters it is given ([`PortCounters`], cumulative,
//! as a performance manager reads them from each port's PMA) and returns the moves
//! ([`Moves`]); it sends nothing. `weft simulate` feeds it the simulator's own counters; a
//! MAD-driven loop feeds it PortCounters(Extended) read from a live fabric and carries the
//! moves out itself.
//!
//! Per port, between two sweeps `interval` seconds apart:
//!
//! * *congestion* = ΔXmitWait / interval, in ticks per second;
//! * *utilisation* = ΔXmitData · 4 / interval / the port's rate in bytes per second
//!   (XmitData counts 32-bit words).
//!
//! A switch port cabled to an end-node port whose congestion exceeds
//! [`Config::threshold_ticks_per_s`] marks that end-node port a *hot-spot*: the switch cannot
//! deliver to it. Then every end-node port whose congestion exceeds the threshold and whose
//! utilisation is below [`Config::max_utilisation`] (a congested sender that is not getting
//! its fair share) becomes a *contributor* of the hot-spot, and its flow toward the hot-spot's
//! LID moves to the pair's slow lane (an end node sends its move to every QP with that DLID).
//! Contributors found at later sweeps, while the hot-spot stays marked, move too. When the
//! hot-spot's switch port stays at or below the threshold for [`Config::release_sweeps`]
//! consecutive sweeps, the mark is cleared and every contributor's flow toward it moves back
//! to the fast lane (the paper clears at the first sweep below: `release_sweeps = 1`).
//!
//! **Lanes.** The state's [`dftree_lanes`](FabricState::dftree_lanes) are the (fast, slow)
//! SL pairs the compiler gave dFtree classes (one per class and routing layer): a pair of end
//! ports whose path-SL set holds both SLs of one of them is a dFtree flow, starting on the fast
//! SL; any other SL of the set (another class's) is left alone. A state without them (one
//! written before they were recorded, or with no `lanes = dftree` class) has no dFtree lanes.
//!
//! **Ports** are named by the node GUID and the port number (a switch port and an end-node
//! port alike), as `perfquery` names the node it reads. Every end-node port with a LID and an
//! up link to an up switch takes part, whatever its role.

use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::PathSl;
use weft_fabric::{FabricState, Lid, NodeId, NodeKind, PortRef, Sl};

/// What the controller can refuse.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DftreeError {
    /// The state records no dFtree lane pair: there is no slow lane to move a flow to.
    #[error(
        "the state has no dFtree lanes: it records no (fast, slow) SL pair \
         (declare a class with `lanes = dftree` and build it again)"
    )]
    NoLanes,
    /// A configuration value out of range.
    #[error("dFtree configuration: {0}")]
    Config(String),
}

/// The controller's settings; [`Config::default`] gives the paper's.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Config {
    /// Congestion above which a port counts as congested, in XmitWait ticks per second
    /// (default 100 000, the paper's; per port, so independent of the fabric's size).
    pub threshold_ticks_per_s: f64,
    /// Utilisation below which a congested end-node port is a contributor rather than a
    /// sender getting its fair share (default 0.5).
    pub max_utilisation: f64,
    /// Consecutive sweeps a hot-spot's switch port must stay at or below the threshold before
    /// its contributors' flows move back to the fast lane (default 2; at least 1, which is
    /// the paper's rule).
    pub release_sweeps: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            threshold_ticks_per_s: 100_000.0,
            max_utilisation: 0.5,
            release_sweeps: 2,
        }
    }
}

/// One port's cumulative counters, as read from its PMA (PortCounters or
/// PortCountersExtended).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PortCounters {
    /// The node's GUID.
    pub guid: u64,
    /// The port number.
    pub port: u8,
    /// PortXmitWait: ticks the port had data to send but sent none.
    pub xmit_wait: u64,
    /// PortXmitData: 32-bit words sent, on all VLs.
    pub xmit_data_words: u64,
}

/// A flow the controller moves: every QP of the source port toward the destination LID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Flow {
    /// The source's node GUID.
    pub src_guid: u64,
    /// The source port.
    pub src_port: u8,
    /// The source port's LID.
    pub src_lid: u16,
    /// The destination LID (the hot-spot's).
    pub dst_lid: u16,
    /// The pair's slow-lane SL.
    pub slow_sl: u8,
    /// The pair's fast-lane SL.
    pub fast_sl: u8,
}

/// What one sweep decided, each list sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Moves {
    /// End-node ports (node GUID, port) newly marked hot-spots.
    pub hotspots_marked: Vec<(u64, u8)>,
    /// End-node ports whose hot-spot mark was cleared.
    pub hotspots_cleared: Vec<(u64, u8)>,
    /// Flows to move to their slow lane.
    pub to_slow: Vec<Flow>,
    /// Flows to move back to their fast lane.
    pub to_fast: Vec<Flow>,
}

impl Moves {
    /// Whether the sweep decided nothing.
    pub fn is_empty(&self) -> bool {
        self.hotspots_marked.is_empty()
            && self.hotspots_cleared.is_empty()
            && self.to_slow.is_empty()
            && self.to_fast.is_empty()
    }
}

/// An end-node port the controller watches, and the switch port facing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EndPort {
    /// The end node's GUID.
    pub guid: u64,
    /// The end node's port.
    pub port: u8,
    /// The port's LID.
    pub lid: u16,
    /// The switch's node GUID.
    pub switch_guid: u64,
    /// The switch's port cabled to it.
    pub switch_port: u8,
}

/// An end-node port taking part.
#[derive(Clone, Debug)]
struct Hca {
    key: (u64, u8),
    port: PortRef,
    lid: Lid,
    /// The switch it is cabled to (for the path-SL lookup).
    via: Option<NodeId>,
    /// The switch port facing it.
    facing: (u64, u8),
    /// Its link's rate, in bytes per second.
    bytes_per_s: f64,
}

/// A marked hot-spot.
#[derive(Clone, Debug, Default)]
struct Hot {
    /// Consecutive sweeps at or below the threshold.
    below: u32,
    /// Contributors (indices into `hcas`).
    contributors: BTreeSet<usize>,
}

/// The previous sweep's readings.
#[derive(Clone, Debug)]
struct Reading {
    at_ns: u64,
    counters: BTreeMap<(u64, u8), (u64, u64)>,
}

/// dFtree's controller over one state (see the module's documentation).
#[derive(Clone, Debug)]
pub struct Controller {
    config: Config,
    path_sl: PathSl,
    /// The state's dFtree lane pairs, (fast, slow).
    lanes: Vec<(Sl, Sl)>,
    hcas: Vec<Hca>,
    /// Per hot-spot (index into `hcas`): its mark.
    hot: BTreeMap<usize, Hot>,
    prev: Option<Reading>,
    sweeps: u64,
}

impl Controller {
    /// A controller for `state`: finds the end-node ports, the switch ports facing them and
    /// their rates. Refuses a state without dFtree lanes and a configuration out of range.
    pub fn new(state: &FabricState, config: Config) -> Result<Controller, DftreeError> {
        if !(config.threshold_ticks_per_s.is_finite() && config.threshold_ticks_per_s >= 0.0) {
            return Err(DftreeError::Config(format!(
                "the threshold must be a number of ticks per second, at least 0, not {}",
                config.threshold_ticks_per_s
            )));
        }
        if !(config.max_utilisation > 0.0 && config.max_utilisation <= 1.0) {
            return Err(DftreeError::Config(format!(
                "the utilisation limit must be above 0 and at most 1, not {}",
                config.max_utilisation
            )));
        }
        if config.release_sweeps == 0 {
            return Err(DftreeError::Config(
                "release_sweeps must be at least 1".into(),
            ));
        }
        let ps = &state.path_sl;
        if !has_lanes(state) {
            return Err(DftreeError::NoLanes);
        }
        let f = &state.fabric;
        let mut hcas = Vec::new();
        for (i, n) in f.nodes().iter().enumerate() {
            if n.is_switch() || n.down {
                continue;
            }
            for p in &n.ports {
                let pr = PortRef {
                    node: NodeId(i as u32),
                    port: p.num,
                };
                let Some(lid) = state.lids.get(pr.node, pr.port) else {
                    continue;
                };
                let Some(peer) = f.live_peer(pr) else {
                    continue;
                };
                let Some(sw) = f.nodes().get(peer.node.index()) else {
                    continue;
                };
                if sw.spec.kind != NodeKind::Switch {
                    continue;
                }
                let Some(mbps) = p
                    .link
                    .and_then(|l| f.links().get(l.index()))
                    .and_then(|l| f.link_mbps(l))
                else {
                    continue;
                };
                hcas.push(Hca {
                    key: (n.guid().0, p.num.0),
                    port: pr,
                    lid,
                    via: Some(peer.node),
                    facing: (sw.guid().0, peer.port.0),
                    bytes_per_s: mbps as f64 * 1e6 / 8.0,
                });
            }
        }
        Ok(Controller {
            config,
            path_sl: ps.clone(),
            lanes: state.dftree_lanes.clone(),
            hcas,
            hot: BTreeMap::new(),
            prev: None,
            sweeps: 0,
        })
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Sweeps taken so far (the first, which only records, included).
    pub fn sweeps(&self) -> u64 {
        self.sweeps
    }

    /// The flow from end port `src` toward end port `dst` (indices into `hcas`), if the pair
    /// has a slow lane.
    fn flow(&self, src: usize, dst: usize) -> Option<Flow> {
        let (s, d) = (self.hcas.get(src)?, self.hcas.get(dst)?);
        if src == dst {
            return None;
        }
        let (fast, slow) = lanes_of(&self.lanes, self.path_sl.get(s.port, s.via, d.lid))?;
        Some(Flow {
            src_guid: s.key.0,
            src_port: s.key.1,
            src_lid: s.lid.0,
            dst_lid: d.lid.0,
            slow_sl: slow.0,
            fast_sl: fast.0,
        })
    }

    /// Takes one sweep's counters at `at_ns` (any clock in nanoseconds, increasing) and
    /// returns what to move. The rates are the deltas against the previous sweep: the first
    /// sweep only records. A sweep not later than the previous one is ignored. A port missing
    /// from either sweep is not judged; a counter lower than at the previous sweep was reset
    /// and counts from 0.
    pub fn sweep(&mut self, at_ns: u64, counters: &[PortCounters]) -> Moves {
        let now: BTreeMap<(u64, u8), (u64, u64)> = counters
            .iter()
            .map(|c| ((c.guid, c.port), (c.xmit_wait, c.xmit_data_words)))
            .collect();
        let mut moves = Moves::default();
        let prev = match self.prev.take() {
            Some(p) if at_ns <= p.at_ns => {
                self.prev = Some(p);
                return moves;
            }
            p => p,
        };
        self.sweeps += 1;
        self.prev = Some(Reading {
            at_ns,
            counters: now.clone(),
        });
        let Some(prev) = prev else {
            return moves;
        };
        let secs = (at_ns - prev.at_ns) as f64 / 1e9;
        // (congestion in ticks/s, bytes/s) per port in both sweeps.
        let rate = |key: (u64, u8)| -> Option<(f64, f64)> {
            let (w1, d1) = *now.get(&key)?;
            let (w0, d0) = *prev.counters.get(&key)?;
            let dw = if w1 >= w0 { w1 - w0 } else { w1 };
            let dd = if d1 >= d0 { d1 - d0 } else { d1 };
            Some((dw as f64 / secs, dd as f64 * 4.0 / secs))
        };
        let th = self.config.threshold_ticks_per_s;
        // Congested senders not getting their fair share, in port order.
        let congested: Vec<usize> = self
            .hcas
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                rate(h.key).is_some_and(|(c, b)| {
                    c > th && b / h.bytes_per_s.max(1.0) < self.config.max_utilisation
                })
            })
            .map(|(i, _)| i)
            .collect();
        let mut to_slow = Vec::new();
        let mut to_fast = Vec::new();
        for (i, h) in self.hcas.iter().enumerate() {
            let Some((c, _)) = rate(h.facing) else {
                continue;
            };
            if c > th {
                let hot = self.hot.entry(i).or_insert_with(|| {
                    moves.hotspots_marked.push(h.key);
                    Hot::default()
                });
                hot.below = 0;
                for &k in &congested {
                    if k != i && !hot.contributors.contains(&k) {
                        hot.contributors.insert(k);
                        to_slow.push((k, i));
                    }
                }
            } else if let Some(hot) = self.hot.get_mut(&i) {
                hot.below += 1;
                if hot.below >= self.config.release_sweeps {
                    moves.hotspots_cleared.push(h.key);
                    to_fast.extend(hot.contributors.iter().map(|&k| (k, i)));
                    self.hot.remove(&i);
                }
            }
        }
        moves.to_slow = to_slow
            .into_iter()
            .filter_map(|(s, d)| self.flow(s, d))
            .collect();
        moves.to_fast = to_fast
            .into_iter()
            .filter_map(|(s, d)| self.flow(s, d))
            .collect();
        moves.hotspots_marked.sort_unstable();
        moves.hotspots_cleared.sort_unstable();
        moves.to_slow.sort_unstable();
        moves.to_fast.sort_unstable();
        moves
    }

    /// The flows on their slow lane now, sorted.
    pub fn slow_flows(&self) -> Vec<Flow> {
        let mut v: Vec<Flow> = self
            .hot
            .iter()
            .flat_map(|(&d, h)| h.contributors.iter().filter_map(move |&s| self.flow(s, d)))
            .collect();
        v.sort_unstable();
        v
    }

    /// The end-node ports marked hot-spots now (node GUID, port), sorted.
    pub fn hotspots(&self) -> Vec<(u64, u8)> {
        let mut v: Vec<(u64, u8)> = self
            .hot
            .keys()
            .filter_map(|&i| self.hcas.get(i).map(|h| h.key))
            .collect();
        v.sort_unstable();
        v
    }

    /// Takes each end port's link rate from `rate_of(switch GUID, switch port)` (in Mb/s:
    /// the live width × speed of the switch port facing it, as a MAD discovery reads them)
    /// where it gives one, instead of the rate the state records: a link trained narrower or
    /// slower than designed would otherwise make a sender getting its fair share of it look
    /// under-used, and a contributor. Returns how many rates changed.
    pub fn use_live_rates(&mut self, rate_of: impl Fn(u64, u8) -> Option<f64>) -> usize {
        let mut changed = 0;
        for h in &mut self.hcas {
            if let Some(mbps) = rate_of(h.facing.0, h.facing.1).filter(|m| *m > 0.0) {
                let bytes = mbps * 1e6 / 8.0;
                if (bytes - h.bytes_per_s).abs() > f64::EPSILON {
                    h.bytes_per_s = bytes;
                    changed += 1;
                }
            }
        }
        changed
    }

    /// The end-node ports taking part and the switch port facing each, in fabric order: the
    /// ports whose counters a sweep reads.
    pub fn ports(&self) -> Vec<EndPort> {
        self.hcas
            .iter()
            .map(|h| EndPort {
                guid: h.key.0,
                port: h.key.1,
                lid: h.lid.0,
                switch_guid: h.facing.0,
                switch_port: h.facing.1,
            })
            .collect()
    }
}

/// Whether `state` has dFtree lanes (its [`dftree_lanes`](FabricState::dftree_lanes)).
pub fn has_lanes(state: &FabricState) -> bool {
    !state.dftree_lanes.is_empty()
}

/// The fast and slow lane of a path-SL set: the first of `lanes` (the state's dFtree lane
/// pairs) whose two SLs the set holds, if any.
pub fn lanes_of(lanes: &[(Sl, Sl)], sls: weft_fabric::SlSet) -> Option<(Sl, Sl)> {
    lanes
        .iter()
        .copied()
        .find(|&(fast, slow)| sls.contains(fast) && sls.contains(slow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_compiler::build::build;
    use weft_compiler::{check, NoFiles};

    /// A two-level tree of 4-port switches (8 hosts), with dFtree lanes when `lanes`.
    fn tree(lanes: bool) -> FabricState {
        if lanes {
            tree_with("    vls { budget = 2 }\n    qos { class bulk { lanes = dftree } }\n")
        } else {
            tree_with("")
        }
    }

    /// The same tree with `sections` in its fabric block.
    fn tree_with(sections: &str) -> FabricState {
        let text = format!(
            "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::fat_tree\nfabric small {{\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n{sections}}}\n"
        );
        let c = check("t.weft", &text, &NoFiles);
        assert!(!c.has_errors(), "{:?}", c.diagnostics);
        build(&c.elaborated.unwrap()).unwrap().state.into_inner()
    }

    /// The lanes are the state's dFtree pairs, not a pair's lowest two SLs: another class
    /// on SL 0 before the dFtree class is left alone, and two single-lane classes are no
    /// dFtree lanes at all.
    #[test]
    fn the_lanes_are_the_dftree_class_sls_not_the_lowest_two() {
        let st = tree_with(
            "    vls { budget = 3 }\n    qos {\n        class mgmt { weight = 16, match { service_id = 0x1000..0x1100 } }\n        class bulk { lanes = dftree }\n    }\n",
        );
        assert_eq!(st.dftree_lanes, [(Sl(1), Sl(2))]);
        let c = Controller::new(&st, Config::default()).unwrap();
        let ports = c.ports();
        let (src, dst) = (ports[1], ports[6]);
        let f = c
            .flow(
                c.hcas.iter().position(|h| h.key == me(src)).unwrap(),
                c.hcas.iter().position(|h| h.key == me(dst)).unwrap(),
            )
            .unwrap();
        assert_eq!((f.fast_sl, f.slow_sl), (1, 2));
        let two = tree_with(
            "    vls { budget = 2 }\n    qos {\n        class mgmt { weight = 16, match { service_id = 0x1000..0x1100 } }\n        class bulk { weight = 32 }\n    }\n",
        );
        assert!(two.dftree_lanes.is_empty());
        assert_eq!(
            Controller::new(&two, Config::default()).err(),
            Some(DftreeError::NoLanes)
        );
    }

    fn me(p: EndPort) -> (u64, u8) {
        (p.guid, p.port)
    }

    fn sw(p: EndPort) -> (u64, u8) {
        (p.switch_guid, p.switch_port)
    }

    /// 0.1 s between sweeps: a port congested at `c` ticks/s and sending `u` of its rate.
    struct Counters {
        ports: Vec<EndPort>,
        acc: BTreeMap<(u64, u8), (u64, u64)>,
        /// 4x EDR in 32-bit words per 0.1 s.
        words: f64,
    }

    impl Counters {
        fn new(c: &Controller) -> Counters {
            Counters {
                ports: c.ports(),
                acc: BTreeMap::new(),
                words: 100e9 / 8.0 / 4.0 * 0.1,
            }
        }
        /// Adds 0.1 s at (ticks/s, utilisation) per port; the rest idle.
        fn step(&mut self, set: &[((u64, u8), f64, f64)]) -> Vec<PortCounters> {
            let mut keys: Vec<(u64, u8)> = self.ports.iter().map(|&p| me(p)).collect();
            keys.extend(self.ports.iter().map(|&p| sw(p)));
            for k in keys {
                let e = self.acc.entry(k).or_default();
                if let Some(&(_, c, u)) = set.iter().find(|s| s.0 == k) {
                    e.0 += (c * 0.1) as u64;
                    e.1 += (u * self.words) as u64;
                }
            }
            self.acc
                .iter()
                .map(|(&(guid, port), &(w, d))| PortCounters {
                    guid,
                    port,
                    xmit_wait: w,
                    xmit_data_words: d,
                })
                .collect()
        }
    }

    /// A sender on a link trained at 1x (a quarter of the designed 4x) that gets all of it
    /// is under-used at the designed rate, a contributor; at the live rate it is not.
    #[test]
    fn the_live_link_rate_decides_the_utilisation() {
        let st = tree(true);
        let run = |live: bool| {
            let mut c = Controller::new(&st, Config::default()).unwrap();
            let mut k = Counters::new(&c);
            let hot = k.ports[0];
            let slow = k.ports[3];
            if live {
                let changed = c.use_live_rates(|g, p| (sw(slow) == (g, p)).then_some(25_000.0));
                assert_eq!(changed, 1);
            }
            c.sweep(0, &k.step(&[]));
            // A quarter of the designed rate: all of a 1x link.
            let m = c.sweep(
                100_000_000,
                &k.step(&[(sw(hot), 5e6, 1.0), (me(slow), 2e6, 0.25)]),
            );
            assert_eq!(m.hotspots_marked, [me(hot)]);
            m.to_slow.len()
        };
        assert_eq!(run(false), 1, "at the designed rate it is a contributor");
        assert_eq!(run(true), 0, "at its live 1x rate it gets its link");
    }

    #[test]
    fn a_state_without_lanes_or_a_bad_config_is_refused() {
        assert_eq!(
            Controller::new(&tree(false), Config::default()).err(),
            Some(DftreeError::NoLanes)
        );
        let bad = Config {
            release_sweeps: 0,
            ..Config::default()
        };
        assert!(matches!(
            Controller::new(&tree(true), bad),
            Err(DftreeError::Config(_))
        ));
    }

    #[test]
    fn congested_slow_senders_move_and_come_back_after_the_release_sweeps() {
        let st = tree(true);
        let mut c = Controller::new(&st, Config::default()).unwrap();
        let mut k = Counters::new(&c);
        assert_eq!(k.ports.len(), 8);
        let hot = k.ports[0];
        let (a, b, fair) = (k.ports[3], k.ports[5], k.ports[6]);
        // First sweep records only.
        assert!(c.sweep(0, &k.step(&[])).is_empty());
        let busy = [
            (sw(hot), 5e6, 1.0),
            (me(a), 2e6, 0.2),
            (me(b), 2e6, 0.3),
            // Congested but getting its share: not a contributor.
            (me(fair), 2e6, 0.6),
        ];
        let m = c.sweep(100_000_000, &k.step(&busy));
        assert_eq!(m.hotspots_marked, [me(hot)]);
        let lanes = |src: EndPort| Flow {
            src_guid: src.guid,
            src_port: src.port,
            src_lid: src.lid,
            dst_lid: hot.lid,
            slow_sl: 1,
            fast_sl: 0,
        };
        assert_eq!(m.to_slow, [lanes(a), lanes(b)]);
        assert!(m.to_fast.is_empty() && m.hotspots_cleared.is_empty());
        assert_eq!(c.slow_flows(), [lanes(a), lanes(b)]);
        // Still hot: nobody moves again, but a sender newly congested joins.
        assert!(c.sweep(200_000_000, &k.step(&busy)).is_empty());
        let late = k.ports[7];
        let mut more = busy.to_vec();
        more.push((me(late), 2e6, 0.1));
        let m = c.sweep(250_000_000, &k.step(&more));
        assert!(m.hotspots_marked.is_empty());
        assert_eq!(m.to_slow, [lanes(late)]);
        assert_eq!(c.slow_flows(), [lanes(a), lanes(b), lanes(late)]);
        // Below the threshold: held for one sweep, released at the second.
        assert!(c.sweep(300_000_000, &k.step(&[])).is_empty());
        assert_eq!(c.hotspots(), [me(hot)]);
        let m = c.sweep(400_000_000, &k.step(&[]));
        assert_eq!(m.hotspots_cleared, [me(hot)]);
        assert_eq!(m.to_fast, [lanes(a), lanes(b), lanes(late)]);
        assert!(c.slow_flows().is_empty() && c.hotspots().is_empty());
    }

    #[test]
    fn a_fair_share_is_not_a_hotspot_and_order_does_not_matter() {
        let st = tree(true);
        let mut c = Controller::new(&st, Config::default()).unwrap();
        let mut k = Counters::new(&c);
        c.sweep(0, &k.step(&[]));
        // Below the threshold everywhere: nothing marked.
        let quiet = [
            (sw(k.ports[0]), 90_000.0, 1.0),
            (me(k.ports[1]), 90_000.0, 0.1),
        ];
        assert!(c.sweep(100_000_000, &k.step(&quiet)).is_empty());
        // Two hot-spots, counters in any order: the same, sorted moves.
        let busy: Vec<_> = [0usize, 4]
            .iter()
            .map(|&i| (sw(k.ports[i]), 1e6, 1.0))
            .chain([1usize, 2, 7].iter().map(|&i| (me(k.ports[i]), 1e6, 0.1)))
            .collect();
        let counters = k.step(&busy);
        let mut d = c.clone();
        let mut rev = counters.clone();
        rev.reverse();
        let m = c.sweep(200_000_000, &counters);
        assert_eq!(m, d.sweep(200_000_000, &rev));
        assert_eq!(m.hotspots_marked.len(), 2);
        assert_eq!(m.to_slow.len(), 6);
        assert!(m.to_slow.windows(2).all(|w| w[0] < w[1]));
        // A sweep not later than the last is ignored.
        assert!(c.sweep(200_000_000, &counters).is_empty());
    }
}

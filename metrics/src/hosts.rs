//! Patterns over machines and rails ([`weft_fabric::machines`]): a DGX's eight HCAs are one
//! host, each on its own rail. Random bisections of the *machines* (one flow per rail each
//! way between partners: HCA `r` with HCA `r`, as rail-aligned collectives send; or HCA `r`
//! with the partner's next rail, the cross-rail traffic that must leave a rail's leaves) and,
//! per rail, random bisections of that rail's HCAs alone.

use crate::net::Net;
use crate::patterns::halves;
use crate::types::{auto_bisections, CrossedHca, CrossedHost, Hosts, Rail, RailCabling};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::machines::{self, Machines};
use weft_fabric::NodeId;

/// A host port's place in its machine: rail (`u16::MAX` for none) and port number, the key
/// rail-aligned flows match.
type Slot = (u16, u8);

impl Net<'_> {
    /// Machines with an end port in the patterns: one per `host` name, one per end node
    /// without one (each end node its own when the grouping does not hold: validated input
    /// never has that).
    pub(crate) fn machine_count(&self) -> usize {
        let grouped = Machines::of(&self.state.fabric).ok();
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        for p in &self.end_ports {
            let k = grouped
                .as_ref()
                .and_then(|m| m.index_of(p.node))
                .unwrap_or(usize::MAX - p.node.index());
            seen.insert(k);
        }
        seen.len()
    }

    /// Whether the fabric is rail-optimised and whose rail cables cross, for its machines of
    /// several end nodes (members in rail order).
    fn rail_cabling(&self, machines: &Machines) -> RailCabling {
        let f = &self.state.fabric;
        let several: Vec<&machines::Machine> = machines
            .machines
            .iter()
            .filter(|m| m.members.len() > 1)
            .collect();
        let groups: Vec<Vec<NodeId>> = several
            .iter()
            .map(|m| m.members.iter().map(|x| x.node).collect())
            .collect();
        let r = machines::rails::rails(f, &groups);
        let name = |n: NodeId| f.nodes().get(n.index()).map_or("", |x| x.name()).to_owned();
        let crossed = r
            .crossed
            .iter()
            .filter_map(|c| {
                let m = several.get(c.group)?;
                Some(CrossedHost {
                    host: m.name.clone(),
                    hcas: c
                        .misplaced
                        .iter()
                        .map(|x| CrossedHca {
                            hca: name(x.node),
                            leaf: name(x.leaf),
                            expected_rail: x.expected,
                            leaf_rail: x.found,
                        })
                        .collect(),
                })
            })
            .collect();
        RailCabling {
            rail_optimised: r.optimised,
            machines: r.machines,
            spread: r.spread,
            one_leaf: r.one_leaf,
            crossed,
        }
    }

    /// Machines and rails, when the fabric groups its end nodes (`None` when every end node
    /// is a host of its own without a rail, or the grouping does not hold: validated input
    /// never has that).
    pub(crate) fn hosts(&self, seed: u64, count: Option<usize>) -> Option<Hosts> {
        let machines = Machines::of(&self.state.fabric).ok()?;
        if !machines.any_grouped() {
            return None;
        }
        // Per machine (dense, in fabric order), its host ports sorted by slot.
        let mut dense: BTreeMap<usize, usize> = BTreeMap::new();
        let mut members: Vec<Vec<(Slot, u32)>> = Vec::new();
        let mut on_rail: BTreeMap<u8, Vec<u32>> = BTreeMap::new();
        for (e, p) in self.end_ports.iter().enumerate() {
            let Some(m) = machines.index_of(p.node) else {
                continue;
            };
            let rail = machines
                .machine_of(p.node)
                .and_then(|x| x.members.iter().find(|y| y.node == p.node))
                .and_then(|y| y.rail);
            let k = *dense.entry(m).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            if let Some(v) = members.get_mut(k) {
                v.push(((rail.map_or(u16::MAX, u16::from), p.port.0), e as u32));
            }
            if let Some(r) = rail {
                on_rail.entry(r).or_default().push(e as u32);
            }
        }
        for v in &mut members {
            v.sort_unstable();
        }
        let n = members.len();
        let count = count.unwrap_or_else(|| auto_bisections(self.ends.len()));
        let cabling = self.rail_cabling(&machines);
        let default_named = machines
            .machines
            .iter()
            .filter(|m| {
                m.members.len() == 1
                    && !m.declared
                    && m.members.iter().any(|x| {
                        machines::is_default_description(self.state.fabric.node(x.node).name())
                            && self.ends_of(x.node)
                    })
            })
            .count();
        if !cabling.rail_optimised {
            let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
            for v in &members {
                *sizes.entry(v.len()).or_default() += 1;
            }
            return Some(Hosts {
                hosts: n,
                ports_per_host: sizes,
                default_named,
                cabling,
                rail_aligned: None,
                cross_rail: None,
                rails: Vec::new(),
            });
        }
        // HCA `r` with the partner's HCA `r`, both ways.
        let aligned = self.drawn(seed, count, |s| {
            partners(&members, s, |x, y, flows| {
                for &(slot, e) in x {
                    if let Ok(j) = y.binary_search_by(|&(t, _)| t.cmp(&slot)) {
                        if let Some(&(_, f)) = y.get(j) {
                            flows.push((e, f));
                            flows.push((f, e));
                        }
                    }
                }
            })
        });
        // HCA `r` with the partner's next rail, each way.
        let cross = self.drawn(seed, count, |s| {
            partners(&members, s, |x, y, flows| {
                for (from, to) in [(x, y), (y, x)] {
                    for (i, &(_, e)) in from.iter().enumerate() {
                        if let Some(&(_, f)) = to.get((i + 1) % to.len().max(1)) {
                            flows.push((e, f));
                        }
                    }
                }
            })
        });
        let rails = on_rail
            .into_iter()
            .map(|(rail, ends)| {
                let bisections = self.drawn(seed, count, |s| {
                    let (a, b) = halves(ends.len(), s);
                    let at = |i: u32| ends.get(i as usize).copied().unwrap_or(0);
                    a.iter()
                        .zip(&b)
                        .flat_map(|(&x, &y)| [(at(x), at(y)), (at(y), at(x))])
                        .collect()
                });
                Rail {
                    rail,
                    hosts: ends.len(),
                    bisections,
                }
            })
            .collect();
        let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
        for v in &members {
            *sizes.entry(v.len()).or_default() += 1;
        }
        Some(Hosts {
            hosts: n,
            ports_per_host: sizes,
            default_named,
            cabling,
            rail_aligned: Some(aligned),
            cross_rail: Some(cross),
            rails,
        })
    }
}

impl Net<'_> {
    /// Whether end node `n` has a port in the patterns.
    fn ends_of(&self, n: NodeId) -> bool {
        self.end_ports.iter().any(|p| p.node == n)
    }
}

/// The flows of one random halving (`seed`) of the machines: partners paired in order, and
/// `pair` adding the flows between two partners' ports (each sorted by slot).
fn partners(
    members: &[Vec<(Slot, u32)>],
    seed: u64,
    pair: impl Fn(&[(Slot, u32)], &[(Slot, u32)], &mut Vec<(u32, u32)>),
) -> Vec<(u32, u32)> {
    let (a, b) = halves(members.len(), seed);
    let mut flows = Vec::new();
    for (&x, &y) in a.iter().zip(&b) {
        if let (Some(x), Some(y)) = (members.get(x as usize), members.get(y as usize)) {
            pair(x, y, &mut flows);
        }
    }
    flows
}

//! The wire view: what a subnet manager sees of a fabric by walking it with directed-route
//! SMPs — the live nodes (GUID, kind, port count), the live links between their ports, the
//! base LID of every port that has one, and the LMC. Nothing else (names, capabilities, down
//! links) is visible on the wire.
//!
//! `weft plan` records the wire view of the fabric a plan starts from; `weft apply`
//! discovers the fabric, builds the same view, and refuses a plan whose view differs, naming
//! each difference ([`WireView::diff`]).

use crate::model::{Fabric, LinkState, NodeKind};
use crate::state::FabricState;
use crate::{Guid, Lid, PortNum, PortRef};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One end of a link as the wire names it: node GUID and port (a switch's own: 0).
pub type WireEnd = (Guid, PortNum);

/// A node as NodeInfo reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireNode {
    /// Switch, HCA or router.
    pub kind: NodeKind,
    /// Physical ports.
    pub ports: u8,
}

/// What directed-route discovery sees of a fabric.
///
/// In a plan file it is written as text, one entry per string: nodes `0x<guid> <kind>
/// <ports>`, links `0x<guid>:<port> 0x<guid>:<port>`, LIDs `0x<guid>:<port> <lid>`, vSwitch
/// hosts (when there are) `0x<guid>:<port> <VFs>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "WireText", into = "WireText")]
pub struct WireView {
    /// The LMC of end ports.
    pub lmc: u8,
    /// Live nodes by GUID.
    pub nodes: BTreeMap<Guid, WireNode>,
    /// Live links, each with its lower end first.
    pub links: BTreeSet<(WireEnd, WireEnd)>,
    /// Base LIDs by port (a switch: port 0).
    pub lids: BTreeMap<WireEnd, Lid>,
    /// The vSwitch hypervisor ports of a state, with their VF counts: not seen on the wire,
    /// but where a fabric may show a vSwitch (see [`WireView::fold_vswitches`]).
    pub vf_hosts: BTreeMap<WireEnd, u16>,
}

/// A vSwitch [`WireView::fold_vswitches`] folds into its hypervisor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folded {
    /// The switch the fabric shows.
    pub switch: Guid,
    /// Its port to the fabric, and the far end of that link.
    pub uplink: (PortNum, WireEnd),
    /// Its port to the hypervisor, and the hypervisor's port (the PF).
    pub pf: (PortNum, WireEnd),
    /// The channel adapters of the hypervisor's VFs.
    pub vfs: BTreeSet<Guid>,
}

/// One way two wire views differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireDiff {
    /// A node the plan expects is not on the fabric.
    MissingNode(Guid),
    /// A node on the fabric the plan does not know.
    ExtraNode(Guid),
    /// The node is there, but another kind or port count.
    NodeDiffers {
        /// Its GUID.
        guid: Guid,
        /// Expected.
        expected: WireNode,
        /// Found.
        found: WireNode,
    },
    /// A link the plan expects is down or gone.
    MissingLink(WireEnd, WireEnd),
    /// A link the plan does not know.
    ExtraLink(WireEnd, WireEnd),
    /// A port's LID differs (`None`: no LID).
    Lid {
        /// The port.
        port: WireEnd,
        /// What the plan expects.
        expected: Option<Lid>,
        /// What the fabric has.
        found: Option<Lid>,
    },
    /// The LMC differs.
    Lmc {
        /// Expected.
        expected: u8,
        /// Found.
        found: u8,
    },
}

fn end(e: &WireEnd) -> String {
    format!("{} port {}", e.0, e.1)
}

fn lid(l: &Option<Lid>) -> String {
    l.map_or_else(|| "none".to_owned(), |l| l.0.to_string())
}

impl fmt::Display for WireDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireDiff::MissingNode(g) => write!(f, "node {g} is not on the fabric"),
            WireDiff::ExtraNode(g) => {
                write!(f, "node {:#018x} is on the fabric but not in the plan", g.0)
            }
            WireDiff::NodeDiffers {
                guid,
                expected,
                found,
            } => write!(
                f,
                "node {} is a {:?} with {} ports, not a {:?} with {}",
                guid, found.kind, found.ports, expected.kind, expected.ports
            ),
            WireDiff::MissingLink(a, b) => {
                write!(f, "link {} — {} is missing", end(a), end(b))
            }
            WireDiff::ExtraLink(a, b) => {
                write!(f, "link {} — {} is not in the plan", end(a), end(b))
            }
            WireDiff::Lid {
                port,
                expected,
                found,
            } => write!(
                f,
                "{} has LID {}, not {}",
                end(port),
                lid(found),
                lid(expected)
            ),
            WireDiff::Lmc { expected, found } => {
                write!(f, "the LMC is {found}, not {expected}")
            }
        }
    }
}

impl WireView {
    /// The wire view of `state`: nodes that are up and reachable over live links from its
    /// other nodes (a lone node counts only in a one-node fabric), live links, and the LIDs
    /// of switches and of end ports on live links.
    pub fn of(state: &FabricState) -> WireView {
        let f = &state.fabric;
        let mut v = WireView {
            lmc: state.lids.lmc,
            ..WireView::default()
        };
        for l in f.links() {
            if let (Some(a), Some(b)) = (live_end(f, l.a), live_end(f, l.b)) {
                if l.state == LinkState::Up {
                    v.links.insert(if a <= b { (a, b) } else { (b, a) });
                }
            }
        }
        let linked: BTreeSet<Guid> = v.links.iter().flat_map(|(a, b)| [a.0, b.0]).collect();
        let live_nodes = f.nodes().iter().filter(|n| !n.down).count();
        for n in f.nodes().iter().filter(|n| !n.down) {
            if linked.contains(&n.guid()) || live_nodes == 1 {
                v.nodes.insert(
                    n.guid(),
                    WireNode {
                        kind: n.kind(),
                        ports: n.spec.port_count,
                    },
                );
            }
        }
        let linked_ports: BTreeSet<WireEnd> = v.links.iter().flat_map(|(a, b)| [*a, *b]).collect();
        for x in &state.lids.vports {
            if let Some(e) = live_end(f, x.host).filter(|e| linked_ports.contains(e)) {
                *v.vf_hosts.entry(e).or_default() += 1;
            }
        }
        for (&id, ports) in &state.lids.base {
            let Some(n) = f.nodes().get(id.index()) else {
                continue;
            };
            if !v.nodes.contains_key(&n.guid()) {
                continue;
            }
            for (&p, &l) in ports {
                let e = (n.guid(), p);
                if n.is_switch() || linked_ports.contains(&e) {
                    v.lids.insert(e, l);
                }
            }
        }
        v
    }

    /// This view with every vSwitch folded into its hypervisor, as `expected` (a state's view,
    /// where a hypervisor is one channel adapter cabled to a leaf) sees it, with `expected`'s
    /// vSwitch hosts.
    ///
    /// A fabric may present each hypervisor's vSwitch as Paper A describes what the SM sees:
    /// a switch with exactly one link to another switch and, behind it, the hypervisor's own
    /// channel adapter (the PF) and one channel adapter per VF. Such a switch — absent from
    /// `expected`, every other neighbour a single-link channel adapter, exactly one of them in
    /// `expected` and there a vSwitch hypervisor port ([`WireView::vf_hosts`]) with at least
    /// as many VFs as the others — is folded: the uplink ends at the PF's port, and the switch
    /// and the VFs' adapters (with their links and LIDs) leave the view. Nothing else folds:
    /// a switch put in front of a host the state does not declare a vSwitch hypervisor stays
    /// a difference. A VF's LID is its own port's business: the plans that move VFs check it
    /// write by write.
    pub fn fold_vswitches(&self, expected: &WireView) -> WireView {
        let mut out = self.clone();
        // The view as `expected` sees the fabric, its vSwitch hosts included (so the folded
        // view folds the same fabric again).
        out.vf_hosts = expected.vf_hosts.clone();
        let pair = |a: WireEnd, b: WireEnd| if a <= b { (a, b) } else { (b, a) };
        // Every folded switch and VF adapter leaves with its links and LIDs (in one pass each,
        // not one per vSwitch); each uplink then ends at its PF.
        let mut gone = BTreeSet::new();
        let mut joined = Vec::new();
        for f in self.vswitches(expected) {
            gone.insert(f.switch);
            gone.extend(f.vfs);
            joined.push(pair(f.uplink.1, f.pf.1));
        }
        out.nodes.retain(|g, _| !gone.contains(g));
        out.lids.retain(|(g, _), _| !gone.contains(g));
        out.links
            .retain(|(a, b)| !gone.contains(&a.0) && !gone.contains(&b.0));
        out.links.extend(joined);
        out
    }

    /// The vSwitches [`WireView::fold_vswitches`] folds, by the GUID of their switch.
    pub fn vswitches(&self, expected: &WireView) -> Vec<Folded> {
        let mut neighbours: BTreeMap<Guid, Vec<(PortNum, WireEnd)>> = BTreeMap::new();
        for &(a, b) in &self.links {
            neighbours.entry(a.0).or_default().push((a.1, b));
            neighbours.entry(b.0).or_default().push((b.1, a));
        }
        let kind = |g: &Guid| self.nodes.get(g).map(|n| n.kind);
        let mut out = Vec::new();
        for (v, n) in &self.nodes {
            if n.kind != NodeKind::Switch || expected.nodes.contains_key(v) {
                continue;
            }
            let Some(around) = neighbours.get(v) else {
                continue;
            };
            let up: Vec<&(PortNum, WireEnd)> = around
                .iter()
                .filter(|(_, far)| kind(&far.0) == Some(NodeKind::Switch))
                .collect();
            let cas: Vec<&(PortNum, WireEnd)> = around
                .iter()
                .filter(|(_, far)| kind(&far.0) == Some(NodeKind::Hca))
                .collect();
            let pf: Vec<&(PortNum, WireEnd)> = cas
                .iter()
                .copied()
                .filter(|(_, far)| expected.nodes.contains_key(&far.0))
                .collect();
            let (&[&uplink], &[&pf]) = (up.as_slice(), pf.as_slice()) else {
                continue;
            };
            if up.len() + cas.len() != around.len() {
                continue;
            }
            let vfs: BTreeSet<Guid> = cas
                .iter()
                .map(|(_, far)| far.0)
                .filter(|g| *g != pf.1 .0)
                .collect();
            if expected
                .vf_hosts
                .get(&pf.1)
                .is_none_or(|&n| usize::from(n) < vfs.len())
            {
                continue;
            }
            // A VF adapter has its one link to the vSwitch.
            if vfs
                .iter()
                .any(|g| neighbours.get(g).is_some_and(|a| a.len() != 1))
            {
                continue;
            }
            out.push(Folded {
                switch: *v,
                uplink,
                pf,
                vfs,
            });
        }
        out
    }

    /// Every difference between what was expected (`self`) and what was `found`, in a stable
    /// order: nodes, links, then LIDs.
    pub fn diff(&self, found: &WireView) -> Vec<WireDiff> {
        let mut out = Vec::new();
        for (g, e) in &self.nodes {
            match found.nodes.get(g) {
                None => out.push(WireDiff::MissingNode(*g)),
                Some(n) if n != e => out.push(WireDiff::NodeDiffers {
                    guid: *g,
                    expected: *e,
                    found: *n,
                }),
                Some(_) => {}
            }
        }
        for g in found.nodes.keys().filter(|g| !self.nodes.contains_key(g)) {
            out.push(WireDiff::ExtraNode(*g));
        }
        for (a, b) in self.links.difference(&found.links) {
            out.push(WireDiff::MissingLink(*a, *b));
        }
        for (a, b) in found.links.difference(&self.links) {
            out.push(WireDiff::ExtraLink(*a, *b));
        }
        if self.lmc != found.lmc {
            out.push(WireDiff::Lmc {
                expected: self.lmc,
                found: found.lmc,
            });
        }
        let ports: BTreeSet<&WireEnd> = self.lids.keys().chain(found.lids.keys()).collect();
        for p in ports {
            let (e, g) = (self.lids.get(p).copied(), found.lids.get(p).copied());
            if e != g {
                out.push(WireDiff::Lid {
                    port: *p,
                    expected: e,
                    found: g,
                });
            }
        }
        out
    }
}

/// The plan-file form of a [`WireView`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireText {
    lmc: u8,
    nodes: Vec<String>,
    links: Vec<String>,
    lids: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    vf_hosts: Vec<String>,
}

impl From<WireView> for WireText {
    fn from(v: WireView) -> WireText {
        let e = |(g, p): &WireEnd| format!("{g}:{p}");
        WireText {
            lmc: v.lmc,
            nodes: v
                .nodes
                .iter()
                .map(|(g, n)| format!("{g} {} {}", n.kind.keyword(), n.ports))
                .collect(),
            links: v
                .links
                .iter()
                .map(|(a, b)| format!("{} {}", e(a), e(b)))
                .collect(),
            lids: v
                .lids
                .iter()
                .map(|(p, l)| format!("{} {}", e(p), l.0))
                .collect(),
            vf_hosts: v
                .vf_hosts
                .iter()
                .map(|(p, n)| format!("{} {n}", e(p)))
                .collect(),
        }
    }
}

/// `0x<guid>:<port>`.
pub fn parse_end(t: &str) -> Option<WireEnd> {
    let (g, p) = t.split_once(':')?;
    Some((g.parse().ok()?, PortNum(p.parse().ok()?)))
}

impl TryFrom<WireText> for WireView {
    type Error = String;

    fn try_from(t: WireText) -> Result<WireView, String> {
        let bad = |what: &str, s: &str| format!("wire view: `{s}` is not a {what}");
        let mut v = WireView {
            lmc: t.lmc,
            ..WireView::default()
        };
        for s in &t.nodes {
            let w: Vec<&str> = s.split(' ').collect();
            let node = match w.as_slice() {
                [g, k, p] => g.parse().ok().zip(
                    NodeKind::from_keyword(k)
                        .zip(p.parse().ok())
                        .map(|(kind, ports)| WireNode { kind, ports }),
                ),
                _ => None,
            };
            let (g, n) = node.ok_or_else(|| bad("node (`0x<guid> <kind> <ports>`)", s))?;
            if v.nodes.insert(g, n).is_some() {
                return Err(format!("wire view: node {g} is listed twice"));
            }
        }
        for s in &t.links {
            let (a, b) = s
                .split_once(' ')
                .and_then(|(a, b)| Some((parse_end(a)?, parse_end(b)?)))
                .ok_or_else(|| bad("link (`0x<guid>:<port> 0x<guid>:<port>`)", s))?;
            v.links.insert(if a <= b { (a, b) } else { (b, a) });
        }
        for s in &t.lids {
            let (p, l) = s
                .split_once(' ')
                .and_then(|(p, l)| Some((parse_end(p)?, Lid(l.parse().ok()?))))
                .ok_or_else(|| bad("LID (`0x<guid>:<port> <lid>`)", s))?;
            v.lids.insert(p, l);
        }
        for s in &t.vf_hosts {
            let (p, n) = s
                .split_once(' ')
                .and_then(|(p, n)| Some((parse_end(p)?, n.parse().ok()?)))
                .ok_or_else(|| bad("vSwitch host (`0x<guid>:<port> <VFs>`)", s))?;
            // A channel adapter's port of the view, with VFs, once.
            let host = v.nodes.get(&p.0);
            if n == 0
                || host.is_none_or(|h| h.kind != NodeKind::Hca || p.1 .0 == 0 || p.1 .0 > h.ports)
            {
                return Err(format!(
                    "wire view: vSwitch host `{s}` is not a port of a channel adapter of the view \
                     with VFs"
                ));
            }
            if v.vf_hosts.insert(p, n).is_some() {
                return Err(format!(
                    "wire view: vSwitch host {} port {} is listed twice",
                    p.0, p.1
                ));
            }
        }
        Ok(v)
    }
}

/// `end` as a wire end, when its node is up.
fn live_end(f: &Fabric, end: PortRef) -> Option<WireEnd> {
    let n = f.nodes().get(end.node.index())?;
    (!n.down).then_some((n.guid(), end.port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end_of(guid: u64, port: u8) -> WireEnd {
        (Guid(guid), PortNum(port))
    }
    use crate::{FabricBuilder, Lid, NodeSpec, PortNum};

    fn state() -> FabricState {
        let mut b = FabricBuilder::new("t");
        let s = b
            .add_node(NodeSpec::new("s", NodeKind::Switch, Guid(0x10), 4))
            .unwrap();
        let h = b
            .add_node(NodeSpec::new("h", NodeKind::Hca, Guid(0x30), 2))
            .unwrap();
        let lone = b
            .add_node(NodeSpec::new("x", NodeKind::Hca, Guid(0x40), 1))
            .unwrap();
        b.add_link(PortRef::new(h, 1), PortRef::new(s, 3)).unwrap();
        let mut st = FabricState::new(b.finish());
        st.lids
            .base
            .entry(s)
            .or_default()
            .insert(PortNum(0), Lid(1));
        st.lids
            .base
            .entry(h)
            .or_default()
            .insert(PortNum(1), Lid(2));
        // Port 2 has no cable, the lone node no link: the wire shows neither.
        st.lids
            .base
            .entry(h)
            .or_default()
            .insert(PortNum(2), Lid(3));
        st.lids
            .base
            .entry(lone)
            .or_default()
            .insert(PortNum(1), Lid(4));
        st
    }

    #[test]
    fn what_the_wire_shows_and_its_text_form() {
        let v = WireView::of(&state());
        assert_eq!(v.nodes.len(), 2);
        assert_eq!(v.links.len(), 1);
        assert_eq!(v.lids.len(), 2);
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(
            text,
            r#"{"lmc":0,"nodes":["0x0000000000000010 switch 4","0x0000000000000030 hca 2"],"links":["0x0000000000000010:3 0x0000000000000030:1"],"lids":["0x0000000000000010:0 1","0x0000000000000030:1 2"]}"#
        );
        assert_eq!(serde_json::from_str::<WireView>(&text).unwrap(), v);
    }

    #[test]
    fn differences_are_named() {
        let v = WireView::of(&state());
        let mut w = v.clone();
        w.links.clear();
        w.lids.insert(end_of(0x10, 0), Lid(9));
        w.nodes.insert(
            Guid(0x50),
            WireNode {
                kind: NodeKind::Switch,
                ports: 36,
            },
        );
        let d: Vec<String> = v.diff(&w).iter().map(ToString::to_string).collect();
        assert_eq!(
            d,
            [
                "node 0x0000000000000050 is on the fabric but not in the plan",
                "link 0x0000000000000010 port 3 — 0x0000000000000030 port 1 is missing",
                "0x0000000000000010 port 0 has LID 9, not 1",
            ]
        );
        assert!(v.diff(&v).is_empty());
    }

    /// `v` with hypervisor 0x30 behind a vSwitch 0x60 (uplink on its port 1, the PF on 2,
    /// VFs 0x61 and 0x62 on 3 and 4; the vSwitch and one VF with LIDs).
    fn vswitched(v: &WireView) -> WireView {
        let mut w = v.clone();
        let sw = WireNode {
            kind: NodeKind::Switch,
            ports: 4,
        };
        let ca = WireNode {
            kind: NodeKind::Hca,
            ports: 1,
        };
        w.links.clear();
        w.links.insert((end_of(0x10, 3), end_of(0x60, 1)));
        w.links.insert((end_of(0x30, 1), end_of(0x60, 2)));
        w.links.insert((end_of(0x60, 3), end_of(0x61, 1)));
        w.links.insert((end_of(0x60, 4), end_of(0x62, 1)));
        w.nodes.insert(Guid(0x60), sw);
        w.nodes.insert(Guid(0x61), ca);
        w.nodes.insert(Guid(0x62), ca);
        w.lids.insert(end_of(0x60, 0), Lid(40));
        w.lids.insert(end_of(0x61, 1), Lid(41));
        w
    }

    /// The view of `state()` with port 1 of 0x30 a vSwitch hypervisor of two VFs.
    fn with_vfs() -> WireView {
        let mut v = WireView::of(&state());
        v.vf_hosts.insert(end_of(0x30, 1), 2);
        v
    }

    #[test]
    fn a_vswitch_folds_into_its_hypervisor() {
        let v = with_vfs();
        let text = serde_json::to_string(&v).unwrap();
        assert!(
            text.ends_with(r#","vf_hosts":["0x0000000000000030:1 2"]}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<WireView>(&text).unwrap(), v);
        let w = vswitched(&v);
        assert_eq!(v.diff(&w).len(), 10, "{:?}", v.diff(&w));
        assert_eq!(w.fold_vswitches(&v), v);
        // Folding what has no vSwitch changes nothing (on the wire).
        assert!(v.fold_vswitches(&v).diff(&v).is_empty());
    }

    #[test]
    fn only_a_switch_with_one_uplink_and_adapters_behind_it_folds() {
        let v = with_vfs();
        // In front of a host the state does not make a vSwitch hypervisor (or one with fewer
        // VFs than adapters behind it): not folded.
        let w = vswitched(&v);
        assert!(w
            .fold_vswitches(&WireView::of(&state()))
            .diff(&w)
            .is_empty());
        let mut e = v.clone();
        e.vf_hosts.insert(end_of(0x30, 1), 1);
        assert!(w.fold_vswitches(&e).diff(&w).is_empty());
        // A second switch link: not a vSwitch.
        let mut w = vswitched(&v);
        w.nodes.insert(
            Guid(0x70),
            WireNode {
                kind: NodeKind::Switch,
                ports: 4,
            },
        );
        w.links.insert((end_of(0x60, 3), end_of(0x70, 1)));
        w.links.remove(&(end_of(0x60, 3), end_of(0x61, 1)));
        assert!(w.fold_vswitches(&v).diff(&w).is_empty());
        // Known to the plan: a real switch, not folded.
        let w = vswitched(&v);
        let mut e = v.clone();
        e.nodes.insert(Guid(0x60), w.nodes[&Guid(0x60)]);
        assert!(w.fold_vswitches(&e).diff(&w).is_empty());
        // No adapter the plan knows behind it (or two): not folded.
        let mut e = v.clone();
        e.nodes.remove(&Guid(0x30));
        assert!(w.fold_vswitches(&e).diff(&w).is_empty());
        let mut e = v.clone();
        e.nodes.insert(Guid(0x61), w.nodes[&Guid(0x61)]);
        assert!(w.fold_vswitches(&e).diff(&w).is_empty());
        // A VF adapter with a second link: not folded.
        let mut x = w.clone();
        x.links.insert((end_of(0x10, 4), end_of(0x62, 2)));
        assert!(x.fold_vswitches(&v).diff(&x).is_empty());
        // A second switch in front of the vSwitch: the vSwitch folds into the hypervisor,
        // the switch in front stays a difference.
        let mut x = w.clone();
        x.nodes.insert(Guid(0x70), w.nodes[&Guid(0x60)]);
        x.links.remove(&(end_of(0x10, 3), end_of(0x60, 1)));
        x.links.insert((end_of(0x10, 3), end_of(0x70, 1)));
        x.links.insert((end_of(0x60, 1), end_of(0x70, 2)));
        let folded = x.fold_vswitches(&v);
        assert!(!folded.nodes.contains_key(&Guid(0x60)));
        let d = v.diff(&folded);
        assert!(d.contains(&WireDiff::ExtraNode(Guid(0x70))), "{d:?}");
        assert!(
            d.contains(&WireDiff::MissingLink(end_of(0x10, 3), end_of(0x30, 1))),
            "{d:?}"
        );
    }

    #[test]
    fn a_broken_text_form_is_refused() {
        for bad in [
            r#"{"lmc":0,"nodes":["0x10 switch"],"links":[],"lids":[]}"#,
            r#"{"lmc":0,"nodes":["0x10 bridge 4"],"links":[],"lids":[]}"#,
            r#"{"lmc":0,"nodes":["0x10 switch 4","0x10 hca 1"],"links":[],"lids":[]}"#,
            r#"{"lmc":0,"nodes":[],"links":["0x10:3"],"lids":[]}"#,
            r#"{"lmc":0,"nodes":[],"links":["0x10:300 0x30:1"],"lids":[]}"#,
            r#"{"lmc":0,"nodes":[],"links":[],"lids":["0x10:0 70000"]}"#,
            r#"{"lmc":0,"nodes":[],"links":[],"lids":["0x:0 1"]}"#,
            r#"{"lmc":0,"nodes":[],"links":[],"lids":[],"extra":1}"#,
            // vSwitch hosts: not in the view, a switch, port 0 or past the last, no VFs,
            // listed twice, too many VFs for a u16.
            r#"{"lmc":0,"nodes":[],"links":[],"lids":[],"vf_hosts":["0x30:1 4"]}"#,
            r#"{"lmc":0,"nodes":["0x30 switch 4"],"links":[],"lids":[],"vf_hosts":["0x30:1 4"]}"#,
            r#"{"lmc":0,"nodes":["0x30 hca 1"],"links":[],"lids":[],"vf_hosts":["0x30:0 4"]}"#,
            r#"{"lmc":0,"nodes":["0x30 hca 1"],"links":[],"lids":[],"vf_hosts":["0x30:2 4"]}"#,
            r#"{"lmc":0,"nodes":["0x30 hca 1"],"links":[],"lids":[],"vf_hosts":["0x30:1 0"]}"#,
            r#"{"lmc":0,"nodes":["0x30 hca 1"],"links":[],"lids":[],"vf_hosts":["0x30:1 4","0x30:1 2"]}"#,
            r#"{"lmc":0,"nodes":["0x30 hca 1"],"links":[],"lids":[],"vf_hosts":["0x30:1 70000"]}"#,
        ] {
            assert!(serde_json::from_str::<WireView>(bad).is_err(), "{bad}");
        }
    }
}

//! Node GUIDs and port GUIDs drawn from a tiny set, so that every kind of collision is common:
//! the [`FabricBuilder`] against a brute-force reference of its rules, and the ibnetdiscover
//! reader against the same rules on ibsim-style net files (GUIDs counted as ibsim counts them).
//! Every input is a byte string, so the property test (`tests/guid_spaces.rs`) and the fuzz
//! target (`fuzz/fuzz_targets/guid_spaces.rs`, which includes this file) share it. Each check
//! panics on a disagreement; nothing may reach the reader's internal error.
//!
//! The rules (OpenSM's): node GUIDs unique and not 0; port GUIDs unique and not 0, where a
//! switch's ports carry its node GUID and an end node's ports their own (node GUID + port
//! unless given); a port GUID may equal another node's node GUID.

use std::collections::BTreeSet;
use weft_fabric::{Fabric, FabricBuilder, Guid, LinkError, NodeKind, NodeSpec, PortNum, PortRef};
use weft_formats::ibnetdiscover::{self, Code, ParseOptions};

/// The GUIDs drawn from: small ones that count into each other, 0, and two that wrap.
pub(crate) const GUIDS: [u64; 8] = [0, 1, 2, 3, 4, 5, u64::MAX - 1, u64::MAX];

/// Reads bytes one at a time; 0 once they run out.
pub(crate) struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub(crate) fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn below(&mut self, n: u8) -> u8 {
        self.byte() % n.max(1)
    }

    pub(crate) fn guid(&mut self) -> u64 {
        GUIDS[usize::from(self.below(GUIDS.len() as u8))]
    }

    pub(crate) fn kind(&mut self) -> NodeKind {
        match self.below(3) {
            0 => NodeKind::Switch,
            1 => NodeKind::Hca,
            _ => NodeKind::Router,
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// The port GUIDs a node carries, as (port, GUID): a switch's node GUID and port GUIDs at
/// port 0, an end node's port GUIDs at their ports.
fn carried(kind: NodeKind, guid: u64, ports: &[u64]) -> Vec<(u8, u64)> {
    if kind == NodeKind::Switch {
        let mut v = vec![(0, guid)];
        v.extend(ports.iter().map(|&g| (0, g)));
        v
    } else {
        ports
            .iter()
            .copied()
            .zip(1u8..)
            .map(|(g, p)| (p, g))
            .collect()
    }
}

/// What the builder must say about a node, from the rules and the nodes accepted so far
/// (`(name, kind, guid, port GUIDs)`), checked in the builder's order.
fn expected(
    accepted: &[(String, NodeKind, u64, Vec<u64>)],
    spec: &NodeSpec,
) -> Result<Vec<u64>, &'static str> {
    if accepted.iter().any(|a| a.0 == spec.name) {
        return Err("DuplicateName");
    }
    if accepted.iter().any(|a| a.2 == spec.guid.0) {
        return Err("DuplicateGuid");
    }
    if spec.guid.0 == 0 || spec.system_guid == Some(Guid(0)) {
        return Err("ZeroGuid");
    }
    let ports: Vec<u64> = match &spec.port_guids {
        Some(g) if g.len() != usize::from(spec.port_count) => return Err("PortGuidCount"),
        Some(g) if g.iter().any(|g| g.0 == 0) => return Err("ZeroGuid"),
        Some(g) => g.iter().map(|g| g.0).collect(),
        None if spec.kind == NodeKind::Switch => vec![spec.guid.0; usize::from(spec.port_count)],
        None => {
            let mut v = Vec::new();
            for p in 1..=spec.port_count {
                match spec.guid.0.checked_add(u64::from(p)) {
                    Some(g) => v.push(g),
                    None => return Err("GuidWrap"),
                }
            }
            v
        }
    };
    let own = carried(spec.kind, spec.guid.0, &ports);
    if spec.kind != NodeKind::Switch {
        let distinct: BTreeSet<u64> = ports.iter().copied().collect();
        if distinct.len() != ports.len() {
            return Err("PortGuidReused");
        }
    }
    let taken: BTreeSet<u64> = accepted
        .iter()
        .flat_map(|a| carried(a.1, a.2, &a.3))
        .map(|(_, g)| g)
        .collect();
    if own.iter().any(|(_, g)| taken.contains(g)) {
        return Err("DuplicatePortGuid");
    }
    Ok(ports)
}

fn variant(e: &LinkError) -> &'static str {
    match e {
        LinkError::DuplicateName { .. } => "DuplicateName",
        LinkError::DuplicateGuid { .. } => "DuplicateGuid",
        LinkError::PortGuidCount { .. } => "PortGuidCount",
        LinkError::PortOutOfRange { .. } => "PortOutOfRange",
        LinkError::PortAlreadyWired { .. } => "PortAlreadyWired",
        LinkError::SelfLoop { .. } => "SelfLoop",
        LinkError::UnknownNode(_) => "UnknownNode",
        LinkError::ZeroGuid { .. } => "ZeroGuid",
        LinkError::GuidWrap { .. } => "GuidWrap",
        LinkError::PortGuidReused { .. } => "PortGuidReused",
        LinkError::DuplicatePortGuid { .. } => "DuplicatePortGuid",
        _ => "other",
    }
}

/// Every node GUID finds its node, every port GUID its port (a switch's: port 0), a GUID no
/// node has finds no node and one no port carries no port, whatever the other space holds.
pub(crate) fn check_lookups(f: &Fabric) {
    let mut probe: BTreeSet<u64> = GUIDS.iter().copied().collect();
    for n in f.nodes() {
        probe.insert(n.guid().0);
        probe.extend(n.ports.iter().map(|p| p.guid.0));
    }
    for g in probe {
        let nodes: Vec<_> = f
            .node_ids()
            .filter(|&id| f.node(id).guid().0 == g)
            .collect();
        assert!(nodes.len() <= 1, "two nodes with GUID {g:#x}");
        assert_eq!(
            f.find_guid(Guid(g)),
            nodes.first().copied(),
            "node GUID {g:#x}"
        );
        let ports: BTreeSet<_> = f
            .node_ids()
            .flat_map(|id| {
                let n = f.node(id);
                let ports: Vec<u64> = n.ports.iter().map(|p| p.guid.0).collect();
                carried(n.kind(), n.guid().0, &ports)
                    .into_iter()
                    .filter(|&(_, pg)| pg == g)
                    .map(move |(p, _)| (id, PortNum(p)))
            })
            .collect();
        assert!(ports.len() <= 1, "two ports with GUID {g:#x}: {ports:?}");
        assert_eq!(
            f.find_port_guid(Guid(g)),
            ports.first().copied(),
            "port GUID {g:#x}"
        );
    }
}

/// Nodes and links from `data` through the builder; each answer agrees with the rules.
pub(crate) fn builder(data: &[u8]) {
    let mut b = Bytes(data);
    let mut fb = FabricBuilder::new("f");
    let mut accepted: Vec<(String, NodeKind, u64, Vec<u64>)> = Vec::new();
    let mut wired: BTreeSet<(usize, u8)> = BTreeSet::new();
    let mut steps = 0;
    while !b.done() && steps < 64 {
        steps += 1;
        if b.below(4) == 0 && !accepted.is_empty() {
            let n = accepted.len() as u8;
            let (x, px, y, py) = (b.below(n), b.below(4), b.below(n), b.below(4));
            let (xi, yi) = (usize::from(x), usize::from(y));
            let ports = |i: usize| accepted[i].3.len() as u8;
            let ok = (1..=ports(xi)).contains(&px)
                && (1..=ports(yi)).contains(&py)
                && (xi, px) != (yi, py)
                && !wired.contains(&(xi, px))
                && !wired.contains(&(yi, py));
            let r = fb.add_link(
                PortRef::new(weft_fabric::NodeId(u32::from(x)), px),
                PortRef::new(weft_fabric::NodeId(u32::from(y)), py),
            );
            assert_eq!(r.is_ok(), ok, "link {x}:{px} {y}:{py}: {r:?}");
            if ok {
                wired.insert((xi, px));
                wired.insert((yi, py));
            }
            continue;
        }
        let kind = b.kind();
        let port_count = 1 + b.below(3);
        let mut spec = NodeSpec::new(
            format!("n{}", b.below(12)),
            kind,
            Guid(b.guid()),
            port_count,
        );
        spec.system_guid = match b.below(4) {
            0 => Some(Guid(b.guid())),
            _ => None,
        };
        if b.below(2) == 0 {
            let len = match b.below(8) {
                0 => usize::from(b.below(4)),
                _ => usize::from(port_count),
            };
            spec.port_guids = Some((0..len).map(|_| Guid(b.guid())).collect());
        }
        let want = expected(&accepted, &spec);
        let got = fb.add_node(spec.clone());
        match (&want, &got) {
            (Ok(ports), Ok(id)) => {
                assert_eq!(id.index(), accepted.len());
                let n = fb.fabric().node(*id);
                let have: Vec<u64> = n.ports.iter().map(|p| p.guid.0).collect();
                assert_eq!(&have, ports, "port GUIDs of {}", spec.name);
                accepted.push((spec.name.clone(), kind, spec.guid.0, ports.clone()));
            }
            (Err(w), Err(e)) => {
                assert_eq!(*w, variant(e), "{spec:?}: {e}");
                // A duplicate port GUID names a port that carries it.
                if let LinkError::DuplicatePortGuid {
                    guid,
                    existing,
                    existing_port,
                    ..
                } = e
                {
                    assert_eq!(
                        fb.fabric().find_port_guid(*guid),
                        Some((*existing, PortNum(*existing_port)))
                    );
                }
            }
            _ => panic!("{spec:?}: expected {want:?}, the builder said {got:?}"),
        }
    }
    check_lookups(&fb.finish());
}

/// A node as the rules give it: kind, node GUID, port GUIDs.
pub(crate) type Guids = (NodeKind, u64, Vec<u64>);

/// A node of a generated net file.
#[derive(Debug)]
struct NetNode {
    kind: NodeKind,
    ports: u8,
    /// The `switchguid=`/`caguid=`/`rtguid=` line before it, if any.
    guid_line: Option<u64>,
    /// Port GUIDs given on port lines (`[p](guid)`), end nodes only.
    port_guids: Vec<Option<u64>>,
}

/// An ibsim-style net file from `data` (GUID lines and port GUIDs from [`GUIDS`], nodes
/// without a GUID line counted on as ibsim does, links written from both ends), and what the
/// rules say of it: the node and port GUIDs, or that some GUID rule is broken.
pub(crate) fn net_file(data: &[u8]) -> (String, Option<Vec<Guids>>) {
    let mut b = Bytes(data);
    let count = 1 + usize::from(b.below(6));
    let mut nodes = Vec::new();
    for _ in 0..count {
        let kind = b.kind();
        let ports = 1 + b.below(3);
        let guid_line = (b.below(3) != 0).then(|| b.guid());
        let port_guids = (0..ports)
            .map(|_| (kind != NodeKind::Switch && b.below(3) == 0).then(|| b.guid()))
            .collect();
        nodes.push(NetNode {
            kind,
            ports,
            guid_line,
            port_guids,
        });
    }
    // Links between free ports, each written from both ends.
    let mut peer: std::collections::BTreeMap<(usize, u8), (usize, u8)> = Default::default();
    for _ in 0..b.below(8) {
        let n = nodes.len() as u8;
        let (x, y) = (usize::from(b.below(n)), usize::from(b.below(n)));
        let (px, py) = (1 + b.below(nodes[x].ports), 1 + b.below(nodes[y].ports));
        if (x, px) == (y, py) || peer.contains_key(&(x, px)) || peer.contains_key(&(y, py)) {
            continue;
        }
        peer.insert((x, px), (y, py));
        peer.insert((y, py), (x, px));
    }
    let id = |i: usize| match nodes[i].kind {
        NodeKind::Switch => format!("S-{i}"),
        NodeKind::Hca => format!("H-{i}"),
        NodeKind::Router => format!("R-{i}"),
    };
    let mut text = String::new();
    for (i, n) in nodes.iter().enumerate() {
        let (key, header) = match n.kind {
            NodeKind::Switch => ("switchguid", "Switch"),
            NodeKind::Hca => ("caguid", "Ca"),
            NodeKind::Router => ("rtguid", "Rt"),
        };
        if let Some(g) = n.guid_line {
            text += &format!("{key}={g:#x}\n");
        }
        text += &format!("{header} {} \"{}\"\n", n.ports, id(i));
        for p in 1..=n.ports {
            let Some(&(r, rp)) = peer.get(&(i, p)) else {
                continue;
            };
            let own = match n.port_guids[usize::from(p - 1)] {
                Some(g) => format!("({g:x})"),
                None => String::new(),
            };
            text += &format!("[{p}]{own} \"{}\"[{rp}]\n", id(r));
        }
        text += "\n";
    }
    // The rules: ibsim's counters, then node and port GUIDs.
    let mut cur = [0x20_0000u64, 0x10_0000, 0];
    let mut out = Vec::new();
    let mut ok = true;
    let mut node_guids = BTreeSet::new();
    let mut port_space = BTreeSet::new();
    for (i, n) in nodes.iter().enumerate() {
        let k = match n.kind {
            NodeKind::Switch => 0,
            NodeKind::Hca => 1,
            NodeKind::Router => 2,
        };
        if let Some(g) = n.guid_line {
            cur[k] = g;
        }
        let guid = cur[k];
        let step = if k == 0 { 1 } else { u64::from(n.ports) + 1 };
        cur[k] = cur[k].wrapping_add(step);
        ok &= guid != 0 && node_guids.insert(guid);
        let mut ports = Vec::new();
        for p in 1..=n.ports {
            // A port GUID given for an unwired port has no line to give it.
            let given = n.port_guids[usize::from(p - 1)].filter(|_| peer.contains_key(&(i, p)));
            let g = match (n.kind, given) {
                (NodeKind::Switch, _) => Some(guid),
                (_, Some(g)) => Some(g),
                (_, None) => guid.checked_add(u64::from(p)),
            };
            match g {
                Some(g) => ports.push(g),
                None => ok = false,
            }
        }
        if ports.len() == usize::from(n.ports) {
            ok &= ports.iter().all(|&g| g != 0);
            let own: BTreeSet<u64> = carried(n.kind, guid, &ports)
                .into_iter()
                .map(|(_, g)| g)
                .collect();
            if n.kind != NodeKind::Switch && own.len() != ports.len() {
                ok = false;
            }
            for g in own {
                ok &= port_space.insert(g);
            }
        }
        out.push((n.kind, guid, ports));
    }
    (text, ok.then_some(out))
}

/// A generated net file read: never an internal error; read exactly when the rules hold,
/// with the GUIDs they give; what is read finds every GUID in its own space and writes out
/// to a file that reads back to the same GUIDs.
pub(crate) fn reader(data: &[u8]) {
    let (text, want) = net_file(data);
    let opts = ParseOptions::default();
    match ibnetdiscover::parse(&text, &opts) {
        Ok(d) => {
            let Some(want) = want else {
                panic!("read, though a GUID rule is broken:\n{text}")
            };
            let got: Vec<Guids> = d
                .fabric
                .nodes()
                .iter()
                .map(|n| {
                    (
                        n.kind(),
                        n.guid().0,
                        n.ports.iter().map(|p| p.guid.0).collect(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{text}");
            check_lookups(&d.fabric);
            let out = ibnetdiscover::write(&d.fabric, Some(&d.lids))
                .unwrap_or_else(|e| panic!("the writer refuses what was read: {e}\n{text}"));
            let again = ibnetdiscover::parse(&out, &opts)
                .unwrap_or_else(|e| panic!("the writer's output does not read back: {e:?}\n{out}"));
            let back: Vec<Guids> = again
                .fabric
                .nodes()
                .iter()
                .map(|n| {
                    (
                        n.kind(),
                        n.guid().0,
                        n.ports.iter().map(|p| p.guid.0).collect(),
                    )
                })
                .collect();
            // The writer writes the port GUIDs of wired ports only.
            for (a, b) in want.iter().zip(&back) {
                assert_eq!((a.0, a.1), (b.0, b.1), "{out}");
            }
        }
        Err(e) => {
            let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
            assert!(
                !codes.contains(&Code::Internal),
                "an internal error:\n{text}\n{e:?}"
            );
            assert!(
                want.is_none(),
                "refused, though every GUID rule holds ({codes:?}):\n{text}"
            );
        }
    }
}

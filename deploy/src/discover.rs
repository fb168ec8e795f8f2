//! Discovery: walk a fabric by directed route from the SM's port, as a subnet manager's
//! sweep does, and build its [`WireView`] with the route to every node and end port.
//!
//! Every switch is entered once; each of its ports with a physical link up is followed with
//! a NodeInfo Get to learn the node and the port on the far side — but for a port whose link
//! was already found from its far end (a link between two switches is followed once, not
//! from both). End nodes are not walked through (they do not forward), except the SM's own
//! node, which is left by its SM port.

use crate::observe::VfId;
use crate::smp::{Attr, DrPath, LinkState, NodeInfo, NodeType, PortInfo};
use crate::transport::{SmpError, Target, TransportExt};
use std::collections::{BTreeMap, VecDeque};
use weft_fabric::{Guid, Lid, NodeKind, PortNum, WireEnd, WireNode, WireView};

/// The most nodes discovery walks: one per unicast LID.
pub const MAX_NODES: usize = weft_fabric::MAX_UNICAST_LID as usize;

/// A node found by discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// NodeInfo as first read.
    pub info: NodeInfo,
    /// The route to it.
    pub path: DrPath,
    /// For end nodes: the route entering each port found (P_Key tables and PortInfo of a CA
    /// are read through the port they are about).
    pub ports: BTreeMap<u8, DrPath>,
    /// For end nodes: the GUID of each port found.
    pub port_guids: BTreeMap<u8, u64>,
}

/// A discovered fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    /// What the wire shows.
    pub view: WireView,
    /// Every node, by GUID.
    pub nodes: BTreeMap<Guid, Found>,
    /// SMPs it took.
    pub smps: usize,
    /// The active width of each live switch port (from its PortInfo), where it reports one.
    pub widths: BTreeMap<WireEnd, weft_fabric::Width>,
    /// The active lane speed of each live switch port (from its PortInfo), where it reports
    /// one.
    pub speeds: BTreeMap<WireEnd, weft_fabric::Speed>,
}

impl Discovery {
    /// The GUID of end node `guid`'s port `port` as NodeInfo reported it on entering that
    /// port (`None`: a switch, or a port discovery did not enter).
    pub fn port_guid(&self, guid: Guid, port: u8) -> Option<u64> {
        self.nodes.get(&guid)?.port_guids.get(&port).copied()
    }

    /// The route to `guid` (its node, or for an end node with `port`, the route entering
    /// that port).
    pub fn path(&self, guid: Guid, port: Option<u8>) -> Option<&DrPath> {
        let n = self.nodes.get(&guid)?;
        match (n.info.node_type, port) {
            (NodeType::Switch, _) | (_, None) => Some(&n.path),
            (_, Some(p)) => n.ports.get(&p),
        }
    }
}

/// Where a VF is written and read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VfAt {
    /// The node SMPs about the VF are about: the VF's own adapter, or its hypervisor.
    pub node: Guid,
    /// That node's port.
    pub port: u8,
    /// The route entering that port.
    pub path: DrPath,
    /// The PortInfo attribute modifier.
    pub info_modifier: u32,
    /// The modifier of P_Key block 0.
    pub keys_modifier: u32,
}

/// The fabric's end ports by port GUID, and which of them are VFs: the channel adapters that
/// folding the expected wire view ([`WireView::fold_vswitches`]) puts behind a hypervisor
/// port. See [`Discovery::vf_ports`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VfPorts {
    /// Every end port holding each port GUID.
    ports: BTreeMap<u64, Vec<WireEnd>>,
    /// Per VF adapter: the hypervisor port whose vSwitch it sits behind.
    vf_of: BTreeMap<Guid, WireEnd>,
    /// The hypervisor ports whose vSwitch the fabric shows (their VFs are its adapters).
    shown: std::collections::BTreeSet<WireEnd>,
}

/// Why a VF cannot be addressed (each names the VF: its hypervisor port, index and port GUID).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VfError {
    /// The VF's port GUID is a physical port's: one the fabric shows that is no VF adapter
    /// behind that hypervisor's vSwitch.
    #[error(
        "VF {vf} of {host:#018x} port {port}: its port GUID {guid:#018x} is port {at} of \
         {holder:#018x}, a physical port, not a VF behind that hypervisor port's vSwitch"
    )]
    Physical {
        /// The hypervisor.
        host: u64,
        /// Its port.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID.
        guid: u64,
        /// The node holding that port GUID.
        holder: u64,
        /// Its port.
        at: u8,
    },
    /// The node holding the VF's port GUID is a VF adapter behind another hypervisor port.
    #[error(
        "VF {vf} of {host:#018x} port {port}: the node holding its port GUID {guid:#018x} \
         ({holder:#018x}) is not behind that port's vSwitch but {owner:#018x} port \
         {owner_port}'s"
    )]
    OtherHost {
        /// The hypervisor.
        host: u64,
        /// Its port.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID.
        guid: u64,
        /// The adapter holding it.
        holder: u64,
        /// The hypervisor it is behind.
        owner: u64,
        /// That hypervisor's port.
        owner_port: u8,
    },
    /// More than one port of the fabric holds the VF's port GUID.
    #[error(
        "VF {vf} of {host:#018x} port {port}: its port GUID {guid:#018x} is held by {} ports \
         ({}); which one is the VF cannot be told",
        .holders.len(),
        .holders.iter().map(|(g, p)| format!("{g:#018x} port {p}")).collect::<Vec<_>>().join(", ")
    )]
    Ambiguous {
        /// The hypervisor.
        host: u64,
        /// Its port.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID.
        guid: u64,
        /// Every port holding it.
        holders: Vec<(u64, u8)>,
    },
    /// The fabric shows the hypervisor port's vSwitch, but no adapter behind it holds the
    /// VF's port GUID (the adapter did not answer discovery, or the vSwitch does not show it).
    #[error(
        "VF {vf} of {host:#018x} port {port}: no adapter behind the vSwitch the fabric shows in \
         front of that port holds its port GUID {guid:#018x} (it did not answer discovery, or \
         the vSwitch does not show it)"
    )]
    NotShown {
        /// The hypervisor.
        host: u64,
        /// Its port.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID.
        guid: u64,
    },
    /// No route to the node the VF is addressed through.
    #[error("VF {vf} of {host:#018x} port {port} (port GUID {guid:#018x}) is not reachable")]
    Unreachable {
        /// The hypervisor.
        host: u64,
        /// Its port.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID.
        guid: u64,
    },
    /// No node holds the VF's port GUID, and the transport does not address VFs through
    /// their hypervisor's port.
    #[error(
        "VF {vf} (port GUID {guid:#018x}) of {host:#018x} port {port}: no node on the fabric \
         holds its port GUID"
    )]
    NotFound {
        /// The hypervisor.
        host: u64,
        /// Its port.
        port: u8,
        /// The VF's index.
        vf: u8,
        /// The VF's port GUID.
        guid: u64,
    },
}

impl weft_fabric::code::Coded for VfError {
    /// The error's registered code ([`crate::CODES`]).
    fn code(&self) -> &'static str {
        match self {
            VfError::Physical { .. } => "weft::deploy::vf_physical",
            VfError::OtherHost { .. } => "weft::deploy::vf_other_host",
            VfError::Ambiguous { .. } => "weft::deploy::vf_ambiguous",
            VfError::NotShown { .. } => "weft::deploy::vf_not_shown",
            VfError::Unreachable { .. } => "weft::deploy::vf_unreachable",
            VfError::NotFound { .. } => "weft::deploy::vf_not_found",
        }
    }
}

impl Discovery {
    /// Where the VF `id` (VF `vf`, port GUID `guid`, of hypervisor port `host`, `port`) is
    /// addressed:
    /// where the VF is a node of the fabric (a vSwitch shown as a switch with one adapter per
    /// VF, folded into that very hypervisor port by `ports`), that node's port by directed
    /// route; else, when no port of the fabric holds the GUID, the fabric shows no vSwitch in
    /// front of that port and `through_host` (the transport addresses VFs through their
    /// hypervisor's port, as the `sim` fabric does), the hypervisor's port with the VF in the
    /// modifier. A GUID held by a physical port, by a VF behind another hypervisor, or by
    /// several ports is refused. `ports` is [`Discovery::vf_ports`].
    pub fn vf_at(&self, ports: &VfPorts, id: &VfId, through_host: bool) -> Result<VfAt, VfError> {
        let VfId {
            host,
            port: PortNum(port),
            vf,
            guid,
        } = *id;
        let (h, g) = (host.0, guid.0);
        let unreachable = || VfError::Unreachable {
            host: h,
            port,
            vf,
            guid: g,
        };
        match ports.ports.get(&g).map(Vec::as_slice) {
            Some(&[(node, PortNum(p))]) => match ports.vf_of.get(&node) {
                Some(&behind) if behind == (host, id.port) => Ok(VfAt {
                    node,
                    port: p,
                    path: self.path(node, Some(p)).ok_or_else(unreachable)?.clone(),
                    info_modifier: u32::from(p),
                    keys_modifier: crate::smp::pkey_modifier(0, None),
                }),
                Some(&(owner, owner_port)) => Err(VfError::OtherHost {
                    host: h,
                    port,
                    vf,
                    guid: g,
                    holder: node.0,
                    owner: owner.0,
                    owner_port: owner_port.0,
                }),
                None => Err(VfError::Physical {
                    host: h,
                    port,
                    vf,
                    guid: g,
                    holder: node.0,
                    at: p,
                }),
            },
            Some(many) => Err(VfError::Ambiguous {
                host: h,
                port,
                vf,
                guid: g,
                holders: many.iter().map(|(n, p)| (n.0, p.0)).collect(),
            }),
            None if ports.shown.contains(&(host, id.port)) => Err(VfError::NotShown {
                host: h,
                port,
                vf,
                guid: g,
            }),
            None if through_host => Ok(VfAt {
                node: host,
                port,
                path: self.path(host, Some(port)).ok_or_else(unreachable)?.clone(),
                info_modifier: crate::smp::vf_modifier(vf, u16::from(port)),
                keys_modifier: crate::smp::vf_modifier(vf, u16::from(port) << 8),
            }),
            None => Err(VfError::NotFound {
                host: h,
                port,
                vf,
                guid: g,
            }),
        }
    }

    /// The end ports of the fabric by port GUID, and which are the VFs of which hypervisor
    /// port: the adapters behind each vSwitch that folding this fabric's view into `expected`
    /// folds ([`WireView::vswitches`]).
    pub fn vf_ports(&self, expected: &WireView) -> VfPorts {
        let mut out = VfPorts::default();
        for (g, f) in &self.nodes {
            for (p, pg) in &f.port_guids {
                out.ports.entry(*pg).or_default().push((*g, PortNum(*p)));
            }
        }
        for v in self.view.vswitches(expected) {
            out.shown.insert(v.pf.1);
            for a in v.vfs {
                out.vf_of.insert(a, v.pf.1);
            }
        }
        out
    }
}

/// Why discovery failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiscoverError {
    /// An SMP failed.
    #[error("discovery: {0}")]
    Smp(#[from] SmpError),
    /// A node answered with a type weft does not know.
    #[error("discovery: node {guid:#018x} at {path} has node type {node_type}")]
    NodeType {
        /// Its GUID.
        guid: u64,
        /// The route to it.
        path: DrPath,
        /// What it said.
        node_type: u8,
    },
    /// More nodes answered than a subnet can hold.
    #[error(
        "discovery: more than {0} nodes answered (a subnet has no more unicast LIDs); the \
         fabric's answers cannot be trusted"
    )]
    TooMany(usize),
    /// A directed route past 63 hops would be needed.
    #[error("discovery: {0} is 63 hops from the SM; deeper routes cannot be walked")]
    TooDeep(DrPath),
}

impl weft_fabric::code::Coded for DiscoverError {
    /// The error's registered code ([`crate::CODES`]): an SMP's own, or discovery's.
    fn code(&self) -> &'static str {
        match self {
            DiscoverError::Smp(e) => e.code(),
            DiscoverError::NodeType { .. } => "weft::deploy::discover_node_type",
            DiscoverError::TooMany(_) => "weft::deploy::discover_too_many",
            DiscoverError::TooDeep(_) => "weft::deploy::discover_too_deep",
        }
    }
}

fn kind(info: &NodeInfo, path: &DrPath) -> Result<NodeKind, DiscoverError> {
    match info.node_type {
        NodeType::Switch => Ok(NodeKind::Switch),
        NodeType::Ca => Ok(NodeKind::Hca),
        NodeType::Router => Ok(NodeKind::Router),
        NodeType::Other(t) => Err(DiscoverError::NodeType {
            guid: info.node_guid,
            path: path.clone(),
            node_type: t,
        }),
    }
}

pub(crate) fn port_up(p: &PortInfo) -> bool {
    // Physical state LinkUp (5), or a logical state past Down.
    p.phys_state == 5
        || matches!(
            p.link_state,
            LinkState::Init | LinkState::Armed | LinkState::Active
        )
}

/// Records the node `far` answered as, reached by `next`: a new node joins `nodes` and the
/// wire view and is queued to walk; a known end node reached through a new port is queued
/// again through it (a switch is walked once).
fn reached(
    nodes: &mut BTreeMap<Guid, Found>,
    view: &mut WireView,
    queue: &mut VecDeque<(Guid, DrPath, u8)>,
    far: NodeInfo,
    next: DrPath,
) -> Result<(), DiscoverError> {
    let fg = Guid(far.node_guid);
    match nodes.get_mut(&fg) {
        Some(f) => {
            if f.info.node_type != NodeType::Switch && !f.ports.contains_key(&far.local_port) {
                f.ports.insert(far.local_port, next.clone());
                queue.push_back((fg, next, far.local_port));
            }
        }
        None => {
            // Every node holds a LID: a fabric answering with more nodes than there
            // are unicast LIDs is not one (and one answering with new nodes forever
            // would be walked forever).
            if nodes.len() >= MAX_NODES {
                return Err(DiscoverError::TooMany(MAX_NODES));
            }
            view.nodes.insert(
                fg,
                WireNode {
                    kind: kind(&far, &next)?,
                    ports: far.num_ports,
                },
            );
            let mut f = Found {
                info: far,
                path: next.clone(),
                ports: BTreeMap::new(),
                port_guids: BTreeMap::new(),
            };
            if far.node_type != NodeType::Switch {
                f.ports.insert(far.local_port, next.clone());
                f.port_guids.insert(far.local_port, far.port_guid);
            }
            nodes.insert(fg, f);
            queue.push_back((fg, next, far.local_port));
        }
    }
    Ok(())
}

/// Walks the fabric from the SM's port.
pub fn discover(t: &mut impl TransportExt) -> Result<Discovery, DiscoverError> {
    let mut smps = 0usize;
    let mut nodes: BTreeMap<Guid, Found> = BTreeMap::new();
    let mut view = WireView::default();
    let mut lmc: Option<u8> = None;
    let mut widths = BTreeMap::new();
    let mut speeds = BTreeMap::new();
    // Both ends of every link found.
    let mut ends = std::collections::BTreeSet::new();
    let local = DrPath::local();
    let info = t.node_info(&local)?;
    smps += 1;
    let mut queue = VecDeque::new();
    let mut first = Found {
        info,
        path: local.clone(),
        ports: BTreeMap::new(),
        port_guids: BTreeMap::new(),
    };
    if info.node_type != NodeType::Switch {
        first.ports.insert(info.local_port, local.clone());
        first.port_guids.insert(info.local_port, info.port_guid);
    }
    view.nodes.insert(
        Guid(info.node_guid),
        WireNode {
            kind: kind(&info, &local)?,
            ports: info.num_ports,
        },
    );
    nodes.insert(Guid(info.node_guid), first);
    queue.push_back((Guid(info.node_guid), local, info.local_port));
    while let Some((guid, path, entered)) = queue.pop_front() {
        let Some(me) = nodes.get(&guid).map(|f| f.info) else {
            continue;
        };
        let switch = me.node_type == NodeType::Switch;
        // The ports to leave by: every port of a switch whose link is up; of the SM's own end
        // node, its SM port. A switch's PortInfos go out as one batch, then the NodeInfos
        // behind its live ports as another (a transport may keep several in flight).
        let out: Vec<u8> = if switch {
            let targets: Vec<Target> = (0..=me.num_ports)
                .map(|port| Target {
                    path: path.clone(),
                    attr: Attr::PortInfo,
                    modifier: u32::from(port),
                })
                .collect();
            smps += targets.len();
            let mut up = Vec::new();
            for (port, r) in (0..=me.num_ports).zip(t.get_all(&targets)) {
                let pi = PortInfo::decode(&r?);
                if port == 0 {
                    if pi.lid != 0 {
                        view.lids.insert((guid, PortNum(0)), Lid(pi.lid));
                    }
                } else if port_up(&pi) {
                    up.push(port);
                    if let Some(w) = pi.width() {
                        widths.insert((guid, PortNum(port)), w);
                    }
                    if let Some(s) = pi.speed() {
                        speeds.insert((guid, PortNum(port)), s);
                    }
                }
            }
            up
        } else if path.0.is_empty() {
            vec![entered]
        } else {
            Vec::new()
        };
        if !switch {
            let (pi, _) = t.port_info(&path, entered)?;
            smps += 1;
            if pi.lid != 0 {
                view.lids.insert((guid, PortNum(entered)), Lid(pi.lid));
            }
            lmc = Some(lmc.map_or(pi.lmc, |l| l.max(pi.lmc)));
        }
        // A port whose link was found from its far end (that switch's NodeInfo behind it
        // named this node and port) needs no NodeInfo again: the link is known, and so is
        // the node behind it.
        let out: Vec<u8> = out
            .into_iter()
            .filter(|&port| !(switch && ends.contains(&(guid, PortNum(port)))))
            .collect();
        let mut nexts = Vec::with_capacity(out.len());
        for &port in &out {
            nexts.push(
                path.then(port)
                    .ok_or_else(|| DiscoverError::TooDeep(path.clone()))?,
            );
        }
        let targets: Vec<Target> = nexts
            .iter()
            .map(|next| Target {
                path: next.clone(),
                attr: Attr::NodeInfo,
                modifier: 0,
            })
            .collect();
        let answers = t.get_all(&targets);
        for ((port, next), r) in out.into_iter().zip(nexts).zip(answers) {
            let far = match r {
                Ok(p) => NodeInfo::decode(&p),
                // A port up with nothing answering behind it: no link as far as the SM can
                // tell.
                Err(SmpError::Timeout { .. } | SmpError::NoRoute { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            smps += 1;
            let (a, b) = (
                (guid, PortNum(port)),
                (Guid(far.node_guid), PortNum(far.local_port)),
            );
            ends.insert(a);
            ends.insert(b);
            view.links.insert(if a <= b { (a, b) } else { (b, a) });
            reached(&mut nodes, &mut view, &mut queue, far, next)?;
        }
    }
    view.lmc = lmc.unwrap_or(0);
    Ok(Discovery {
        view,
        nodes,
        smps,
        widths,
        speeds,
    })
}

//! Nodes, ports, links and the [`Fabric`] that holds them.
//!
//! A [`Fabric`] is valid by construction: [`FabricBuilder`] is the only way to make one, and
//! it returns a typed [`LinkError`] rather than break an invariant (listed on [`Fabric`]).
//! [`Fabric::find_guid`] looks up node GUIDs, [`Fabric::find_port_guid`] port GUIDs. Faults
//! never remove anything: a link or node that is down stays in the model with its ids (a
//! `down` flag), so names, GUIDs and LIDs are stable across faults. Each end node's [`Role`] —
//! `host`, or a service node: `aggregation`, `storage`, `management` — is in its
//! [`NodeSpec`]; a switch's role is always `host`.

use crate::ids::{Guid, Lid, LinkId, NodeId, PortNum};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The highest unicast LID (`0xBFFF`); multicast starts at `0xC000`.
pub const MAX_UNICAST_LID: u16 = 0xBFFF;

mod attrs;
pub use attrs::{Mtu, NodeKind, PortCaps, Role, Speed, Width};

/// Everything needed to add a node to a [`FabricBuilder`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Unique name (the node description in ibnetdiscover terms).
    pub name: String,
    /// Switch, HCA or router.
    pub kind: NodeKind,
    /// Node GUID.
    pub guid: Guid,
    /// System image GUID; the node GUID when absent.
    pub system_guid: Option<Guid>,
    /// Number of physical ports (a switch's management port 0 is not counted).
    pub port_count: u8,
    /// Explicit port GUIDs, one per physical port; absent means derived
    /// (a switch's ports all carry the node GUID, an HCA's port `p` carries `guid + p`).
    pub port_guids: Option<Vec<Guid>>,
    /// Port capabilities.
    pub caps: PortCaps,
    /// LinearFDBCap of a switch (entries its LFT can hold).
    pub linear_fdb_cap: u32,
    /// MulticastFDBCap of a switch (MLIDs its MFT holds, counted from 0xC000), when known;
    /// `None`: not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast_fdb_cap: Option<u16>,
    /// P_Key table entries per port (NodeInfo PartitionCap), when the model says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_cap: Option<u16>,
    /// IEEE OUI of the vendor.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u32,
    /// Tree level counted from the hosts (leaf switches are level 1), when a template knows it.
    pub level: Option<u8>,
    /// Hardware model the node was declared with.
    pub model: Option<String>,
    /// LID the user pinned for this node (its port 1 for an HCA, port 0 for a switch).
    pub lid: Option<Lid>,
    /// What an end node is for (always [`Role::Host`] on a switch).
    #[serde(default, skip_serializing_if = "Role::is_host")]
    pub role: Role,
    /// The machine an end node is in (`host = "dgx001"`): the HCAs of one host name are one
    /// host ([`crate::machines`]). `None`: the end node is a host of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The rail an end node is on (`rail = 3`): which of its machine's HCAs it is, as
    /// rail-optimised fabrics cable them. `None`: its position among its machine's HCAs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<u8>,
}

impl NodeSpec {
    /// A node with default capabilities; set fields as needed.
    pub fn new(name: impl Into<String>, kind: NodeKind, guid: Guid, port_count: u8) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            kind,
            guid,
            system_guid: None,
            port_count,
            port_guids: None,
            caps: PortCaps::default(),
            linear_fdb_cap: if kind == NodeKind::Switch { 49_152 } else { 0 },
            multicast_fdb_cap: None,
            partition_cap: None,
            vendor_id: 0,
            device_id: 0,
            level: None,
            model: None,
            lid: None,
            role: Role::Host,
            host: None,
            rail: None,
        }
    }
}

/// One physical port of a node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Port {
    /// Port number (1-based).
    pub num: PortNum,
    /// Port GUID.
    pub guid: Guid,
    /// The link plugged into this port, if any.
    pub link: Option<LinkId>,
}

/// A node of the fabric.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Everything the node was declared with.
    #[serde(flatten)]
    pub spec: NodeSpec,
    /// Physical ports 1..=port_count, in order.
    pub ports: Vec<Port>,
    /// Whether a fault took the whole node down.
    pub down: bool,
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Switch, HCA or router.
    pub fn kind(&self) -> NodeKind {
        self.spec.kind
    }

    /// Node GUID.
    pub fn guid(&self) -> Guid {
        self.spec.guid
    }

    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.spec.kind == NodeKind::Switch
    }

    /// What the node is for ([`Role::Host`] for a switch).
    pub fn role(&self) -> Role {
        self.spec.role
    }

    /// Whether the node is an end node whose role is [`Role::Host`]: what leaf detection, host
    /// counts, traffic patterns and tenants' `hosts` count.
    pub fn is_host(&self) -> bool {
        !self.is_switch() && self.spec.role.is_host()
    }

    /// Physical port `p` (1-based), if the node has it.
    pub fn port(&self, p: PortNum) -> Option<&Port> {
        usize::from(p.0)
            .checked_sub(1)
            .and_then(|i| self.ports.get(i))
    }
}

/// A (node, port) pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PortRef {
    /// The node.
    pub node: NodeId,
    /// The port on it.
    pub port: PortNum,
}

impl PortRef {
    /// Shorthand constructor.
    pub fn new(node: NodeId, port: u8) -> PortRef {
        PortRef {
            node,
            port: PortNum(port),
        }
    }
}

/// Whether a link carries traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    /// The link is up.
    #[default]
    Up,
    /// A fault took the link down (or one of its nodes is down).
    Down,
}

/// A cable between two ports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// One end.
    pub a: PortRef,
    /// The other end.
    pub b: PortRef,
    /// Up or down.
    pub state: LinkState,
    /// Negotiated lane speed, when known (discovered fabrics); else the slower port's.
    pub speed: Option<Speed>,
    /// Negotiated width, when known; else the narrower port's.
    pub width: Option<Width>,
}

impl Link {
    /// The end opposite `end`, if `end` is one of this link's ends.
    pub fn other(&self, end: PortRef) -> Option<PortRef> {
        if self.a == end {
            Some(self.b)
        } else if self.b == end {
            Some(self.a)
        } else {
            None
        }
    }
}

/// Why a node or link could not be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// A node name is used twice.
    #[error("a node named `{name}` already exists")]
    DuplicateName {
        /// The name.
        name: String,
        /// The node that has it.
        existing: NodeId,
    },
    /// A node GUID is used twice.
    #[error("GUID {guid} is already the GUID of `{existing_name}`")]
    DuplicateGuid {
        /// The GUID.
        guid: Guid,
        /// The node that has it.
        existing: NodeId,
        /// That node's name.
        existing_name: String,
    },
    /// An explicit port GUID list has the wrong length.
    #[error("`{name}` has {ports} ports but {guids} port GUIDs were given")]
    PortGuidCount {
        /// The node.
        name: String,
        /// Ports declared.
        ports: u8,
        /// GUIDs given.
        guids: usize,
    },
    /// A port number is not on the node.
    #[error("`{name}` has no port {port} (ports are 1..={ports})")]
    PortOutOfRange {
        /// The node.
        name: String,
        /// Port asked for.
        port: u8,
        /// Ports the node has.
        ports: u8,
    },
    /// A port is already wired.
    #[error("port {port} of `{name}` is already wired to `{other_name}` port {other_port}")]
    PortAlreadyWired {
        /// The node.
        name: String,
        /// Its port.
        port: u8,
        /// The link already there.
        existing: LinkId,
        /// The node at the other end of the existing link.
        other_name: String,
        /// The port at the other end.
        other_port: u8,
    },
    /// A link from a port to itself.
    #[error("a link cannot connect port {port} of `{name}` to itself")]
    SelfLoop {
        /// The node.
        name: String,
        /// The port.
        port: u8,
    },
    /// An id that does not exist.
    #[error("no node with id {0}")]
    UnknownNode(u32),
    /// A switch given a role other than `host` (roles say what an end node is for).
    #[error("`{name}` is a switch and cannot have the role `{role}`: roles are for end nodes")]
    SwitchRole {
        /// The switch.
        name: String,
        /// The role it was given.
        role: Role,
    },
    /// A switch given a `host` or a `rail` (they say which machine an end node is in).
    #[error("`{name}` is a switch and cannot be in a host or on a rail: those are for end nodes")]
    SwitchHost {
        /// The switch.
        name: String,
    },
    /// A node, system or port GUID of 0.
    #[error("`{name}` has {what} GUID 0, which is reserved")]
    ZeroGuid {
        /// The node.
        name: String,
        /// Which GUID (`node`, `system image`, `port 2`).
        what: String,
    },
    /// A derived port GUID (node GUID + port number) past 2^64.
    #[error("the port GUIDs of `{name}` (node GUID {guid} + port number) wrap around past 0xffffffffffffffff")]
    GuidWrap {
        /// The node.
        name: String,
        /// Its node GUID.
        guid: Guid,
    },
    /// One end node with the same GUID on two of its ports.
    #[error("`{name}` port {port} has GUID {guid}, which its port {first} already has")]
    PortGuidReused {
        /// The node.
        name: String,
        /// The port that repeats it.
        port: u8,
        /// The port that has it first.
        first: u8,
        /// The GUID.
        guid: Guid,
    },
    /// A port GUID another node's port already carries. Node GUIDs and port GUIDs are separate
    /// name spaces (as in OpenSM): an end node's node GUID names no port, so a port GUID may
    /// equal another node's node GUID; a switch's ports all carry its node GUID (port 0).
    #[error(
        "{} has port GUID {guid}, which {} already carries",
        port_text(name, *port),
        port_text(existing_name, *existing_port)
    )]
    DuplicatePortGuid {
        /// The node.
        name: String,
        /// Its port (0: a switch, whose ports carry its node GUID).
        port: u8,
        /// The GUID.
        guid: Guid,
        /// The node that has it.
        existing: NodeId,
        /// That node's name.
        existing_name: String,
        /// That node's port carrying it (0: a switch).
        existing_port: u8,
    },
}

/// `switch `S`` for port 0 (a switch's ports all carry its node GUID), else `` `H` port 1``.
fn port_text(name: &str, port: u8) -> String {
    if port == 0 {
        format!("switch `{name}`")
    } else {
        format!("`{name}` port {port}")
    }
}

/// The elaborated topology: nodes, ports and links.
///
/// Built only with [`FabricBuilder`], which enforces the invariants: names and node GUIDs
/// unique, no GUID 0, port GUIDs unique (a switch's ports carry its node GUID; an end node's
/// ports their own), every link end a real port, every port wired at most once. Node GUIDs and
/// port GUIDs are separate name spaces, as in OpenSM: a port GUID may equal another end
/// node's node GUID (ibsim counts a CA's port GUID on from its node GUID, so the next CA's
/// node GUID is often the previous one's port GUID). (It is written and read as JSON only through
/// `weft_formats::state_json`, which goes through the builder.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fabric {
    /// Fabric name (from `fabric NAME { … }`).
    pub name: String,
    /// LID mask control: every HCA port gets `2^lmc` LIDs.
    pub lmc: u8,
    nodes: Vec<Node>,
    links: Vec<Link>,
    by_name: BTreeMap<String, NodeId>,
    /// Every node GUID.
    by_guid: BTreeMap<Guid, NodeId>,
    /// Every port GUID and the port carrying it: a switch's node GUID (port 0; its physical
    /// ports carry it too), an end node's port GUIDs. An end node's node GUID is not here
    /// unless one of its ports carries it.
    by_port_guid: BTreeMap<Guid, (NodeId, PortNum)>,
}

/// Incremental, validating constructor of a [`Fabric`].
#[derive(Debug)]
pub struct FabricBuilder {
    fabric: Fabric,
}

impl FabricBuilder {
    /// An empty fabric named `name`.
    pub fn new(name: impl Into<String>) -> FabricBuilder {
        FabricBuilder {
            fabric: Fabric {
                name: name.into(),
                lmc: 0,
                nodes: Vec::new(),
                links: Vec::new(),
                by_name: BTreeMap::new(),
                by_guid: BTreeMap::new(),
                by_port_guid: BTreeMap::new(),
            },
        }
    }

    /// Sets the LMC.
    pub fn set_lmc(&mut self, lmc: u8) {
        self.fabric.lmc = lmc;
    }

    /// Read access to what has been built so far.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Adds a node; its name, node GUID and port GUIDs must be new and non-zero.
    pub fn add_node(&mut self, spec: NodeSpec) -> Result<NodeId, LinkError> {
        if let Some(&existing) = self.fabric.by_name.get(&spec.name) {
            return Err(LinkError::DuplicateName {
                name: spec.name,
                existing,
            });
        }
        if let Some(&existing) = self.fabric.by_guid.get(&spec.guid) {
            let existing_name = self.fabric.node(existing).name().to_owned();
            return Err(LinkError::DuplicateGuid {
                guid: spec.guid,
                existing,
                existing_name,
            });
        }
        if spec.kind == NodeKind::Switch && !spec.role.is_host() {
            return Err(LinkError::SwitchRole {
                name: spec.name,
                role: spec.role,
            });
        }
        if spec.kind == NodeKind::Switch && (spec.host.is_some() || spec.rail.is_some()) {
            return Err(LinkError::SwitchHost { name: spec.name });
        }
        let zero = |what: &str| LinkError::ZeroGuid {
            name: spec.name.clone(),
            what: what.to_owned(),
        };
        if spec.guid.0 == 0 {
            return Err(zero("node"));
        }
        if spec.system_guid == Some(Guid(0)) {
            return Err(zero("system image"));
        }
        let ports: Vec<Port> = match &spec.port_guids {
            Some(guids) => {
                if guids.len() != usize::from(spec.port_count) {
                    return Err(LinkError::PortGuidCount {
                        name: spec.name,
                        ports: spec.port_count,
                        guids: guids.len(),
                    });
                }
                if let Some(p) = guids.iter().position(|g| g.0 == 0) {
                    return Err(zero(&format!("port {}", p + 1)));
                }
                guids
                    .iter()
                    .zip(1u8..)
                    .map(|(&guid, num)| Port {
                        num: PortNum(num),
                        guid,
                        link: None,
                    })
                    .collect()
            }
            None => {
                let mut v = Vec::with_capacity(usize::from(spec.port_count));
                for num in 1..=spec.port_count {
                    let guid = match spec.kind {
                        NodeKind::Switch => spec.guid,
                        _ => Guid(spec.guid.0.checked_add(u64::from(num)).ok_or_else(|| {
                            LinkError::GuidWrap {
                                name: spec.name.clone(),
                                guid: spec.guid,
                            }
                        })?),
                    };
                    v.push(Port {
                        num: PortNum(num),
                        guid,
                        link: None,
                    });
                }
                v
            }
        };
        let id = NodeId(self.fabric.nodes.len() as u32);
        let own = port_guids(spec.kind, spec.guid, &ports);
        // An end node's ports each have a GUID of their own (a switch's ports share its GUID;
        // an HCA's node GUID may equal a port GUID, as on QLogic adapters).
        if spec.kind != NodeKind::Switch {
            for (k, &(port, guid)) in own.iter().enumerate() {
                if let Some(&(first, _)) = own
                    .get(..k)
                    .unwrap_or(&[])
                    .iter()
                    .find(|&&(_, g)| g == guid)
                {
                    return Err(LinkError::PortGuidReused {
                        name: spec.name,
                        port: port.0,
                        first: first.0,
                        guid,
                    });
                }
            }
        }
        for &(port, guid) in &own {
            if let Some(&(existing, existing_port)) = self.fabric.by_port_guid.get(&guid) {
                return Err(LinkError::DuplicatePortGuid {
                    name: spec.name,
                    port: port.0,
                    guid,
                    existing,
                    existing_name: self.fabric.node(existing).name().to_owned(),
                    existing_port: existing_port.0,
                });
            }
        }
        for (port, guid) in own {
            self.fabric.by_port_guid.insert(guid, (id, port));
        }
        self.fabric.by_name.insert(spec.name.clone(), id);
        self.fabric.by_guid.insert(spec.guid, id);
        self.fabric.nodes.push(Node {
            spec,
            ports,
            down: false,
        });
        Ok(id)
    }

    fn check_end(&self, end: PortRef) -> Result<(), LinkError> {
        let node = self
            .fabric
            .nodes
            .get(end.node.index())
            .ok_or(LinkError::UnknownNode(end.node.0))?;
        match node.port(end.port) {
            None => Err(LinkError::PortOutOfRange {
                name: node.spec.name.clone(),
                port: end.port.0,
                ports: node.spec.port_count,
            }),
            Some(Port {
                link: Some(existing),
                ..
            }) => {
                let other = self
                    .fabric
                    .links
                    .get(existing.index())
                    .and_then(|l| l.other(end))
                    .unwrap_or(end);
                Err(LinkError::PortAlreadyWired {
                    name: node.spec.name.clone(),
                    port: end.port.0,
                    existing: *existing,
                    other_name: self.fabric.node(other.node).name().to_owned(),
                    other_port: other.port.0,
                })
            }
            Some(_) => Ok(()),
        }
    }

    /// Adds an up link between two free ports.
    pub fn add_link(&mut self, a: PortRef, b: PortRef) -> Result<LinkId, LinkError> {
        self.check_end(a)?;
        if a == b {
            return Err(LinkError::SelfLoop {
                name: self.fabric.node(a.node).name().to_owned(),
                port: a.port.0,
            });
        }
        self.check_end(b)?;
        let id = LinkId(self.fabric.links.len() as u32);
        self.fabric.links.push(Link {
            a,
            b,
            state: LinkState::Up,
            speed: None,
            width: None,
        });
        for end in [a, b] {
            if let Some(port) = self
                .fabric
                .nodes
                .get_mut(end.node.index())
                .and_then(|n| n.ports.get_mut(usize::from(end.port.0).wrapping_sub(1)))
            {
                port.link = Some(id);
            }
        }
        Ok(id)
    }

    /// Records the negotiated speed and width of a link (from a discovered fabric).
    pub fn set_link_rate(&mut self, link: LinkId, speed: Option<Speed>, width: Option<Width>) {
        if let Some(l) = self.fabric.links.get_mut(link.index()) {
            l.speed = speed;
            l.width = width;
        }
    }

    /// Sets what end node `node` is for; a switch keeps [`Role::Host`] (returns whether the
    /// role was set).
    pub fn set_role(&mut self, node: NodeId, role: Role) -> bool {
        match self.fabric.nodes.get_mut(node.index()) {
            Some(n) if n.spec.kind != NodeKind::Switch => {
                n.spec.role = role;
                true
            }
            _ => false,
        }
    }

    /// Puts end node `node` in host `host` on `rail` (returns whether it was set: a switch is
    /// in no host).
    pub fn set_host(&mut self, node: NodeId, host: &str, rail: Option<u8>) -> bool {
        match self.fabric.nodes.get_mut(node.index()) {
            Some(n) if n.spec.kind != NodeKind::Switch => {
                n.spec.host = Some(host.to_owned());
                n.spec.rail = rail;
                true
            }
            _ => false,
        }
    }

    /// Sets switch `node`'s MulticastFDBCap (returns whether it was set: an end node has
    /// no MFT).
    pub fn set_multicast_fdb_cap(&mut self, node: NodeId, cap: Option<u16>) -> bool {
        match self.fabric.nodes.get_mut(node.index()) {
            Some(n) if n.spec.kind == NodeKind::Switch => {
                n.spec.multicast_fdb_cap = cap;
                true
            }
            _ => false,
        }
    }

    /// Marks a link down.
    pub fn set_link_down(&mut self, link: LinkId) {
        if let Some(l) = self.fabric.links.get_mut(link.index()) {
            l.state = LinkState::Down;
        }
    }

    /// Marks a node down, and every link plugged into it.
    pub fn set_node_down(&mut self, node: NodeId) {
        let Some(n) = self.fabric.nodes.get_mut(node.index()) else {
            return;
        };
        n.down = true;
        let links: Vec<LinkId> = n.ports.iter().filter_map(|p| p.link).collect();
        for l in links {
            self.set_link_down(l);
        }
    }

    /// The finished fabric.
    pub fn finish(self) -> Fabric {
        self.fabric
    }
}

impl Fabric {
    /// Every node, in declaration order; a [`NodeId`] indexes this slice.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Every link, in declaration order; a [`LinkId`] indexes this slice.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The node with this id.
    ///
    /// Ids come from this fabric (its builder, or a state `ValidState` checked against it),
    /// so they are in range; an id from elsewhere panics. [`Fabric::nodes`] with `get` is the
    /// checked way.
    #[expect(
        clippy::indexing_slicing,
        reason = "ids come from this fabric, so they are in range; `nodes()` with `get` is the checked way"
    )]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The link with this id (from this fabric, like [`Fabric::node`]'s).
    #[expect(
        clippy::indexing_slicing,
        reason = "ids come from this fabric, so they are in range; `nodes()` with `get` is the checked way"
    )]
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.index()]
    }

    /// Node ids in order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The node named `name`.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// The node with GUID `guid`.
    pub fn find_guid(&self, guid: Guid) -> Option<NodeId> {
        self.by_guid.get(&guid).copied()
    }

    /// The node and port carrying port GUID `guid`: a switch's ports carry its node GUID
    /// (port 0), an end node's ports their own GUIDs. Port GUIDs are a name space of their
    /// own: an end node's node GUID names no port (unless one of its ports carries it), and
    /// a port GUID equal to another node's node GUID is that port's ([`Fabric::find_guid`]
    /// looks up node GUIDs).
    pub fn find_port_guid(&self, guid: Guid) -> Option<(NodeId, PortNum)> {
        self.by_port_guid.get(&guid).copied()
    }

    /// Whether some port carries a GUID in `lo..=hi` (a switch's node GUID counts).
    pub fn port_guid_in(&self, lo: Guid, hi: Guid) -> bool {
        lo <= hi && self.by_port_guid.range(lo..=hi).next().is_some()
    }

    /// The port at the far end of `end`'s link, and the link, if `end` is wired.
    pub fn peer(&self, end: PortRef) -> Option<(PortRef, LinkId)> {
        let link = self.nodes.get(end.node.index())?.port(end.port)?.link?;
        Some((self.links.get(link.index())?.other(end)?, link))
    }

    /// The data rate of `link` in Mb/s: its negotiated width × lane speed where recorded,
    /// else the narrower and slower of its two ends' capabilities (`None`: an end names no
    /// node of this fabric).
    pub fn link_mbps(&self, link: &Link) -> Option<u64> {
        let (a, b) = (
            self.nodes.get(link.a.node.index())?,
            self.nodes.get(link.b.node.index())?,
        );
        let width = link
            .width
            .unwrap_or(a.spec.caps.width.min(b.spec.caps.width));
        let speed = link
            .speed
            .unwrap_or(a.spec.caps.speed.min(b.spec.caps.speed));
        Some(u64::from(width.lanes()) * u64::from(speed.lane_mbps()))
    }

    /// The port at the far end of `end`'s link when that link carries traffic: it is up and
    /// the nodes at both ends are up. `None` for a port that is missing, unwired or down.
    /// This is what "a live port" means everywhere: which ports need a LID, which LIDs and
    /// links a fingerprint covers, where a packet can go
    /// ([`forward::leave`](crate::forward::leave) says which of the three it is).
    pub fn live_peer(&self, end: PortRef) -> Option<PortRef> {
        let (far, link) = self.peer(end)?;
        let up = |n: NodeId| self.nodes.get(n.index()).is_some_and(|x| !x.down);
        (self.links.get(link.index())?.state == LinkState::Up && up(end.node) && up(far.node))
            .then_some(far)
    }

    /// Number of switches.
    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }

    /// Number of HCAs (routers included, as end nodes), service nodes included.
    pub fn hca_count(&self) -> usize {
        self.nodes.iter().filter(|n| !n.is_switch()).count()
    }

    /// Number of end nodes that are hosts ([`Node::is_host`]).
    pub fn host_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_host()).count()
    }

    /// Unicast LIDs this fabric needs: one per switch (port 0), `2^lmc` per end-node port
    /// that is wired.
    pub fn lid_count(&self) -> u64 {
        let per_port = 1u64 << self.lmc.min(7);
        self.nodes
            .iter()
            .map(|n| {
                if n.is_switch() {
                    1
                } else {
                    per_port * n.ports.iter().filter(|p| p.link.is_some()).count() as u64
                }
            })
            .sum()
    }

    /// Highest declared tree level, when a template recorded levels.
    pub fn levels(&self) -> Option<u8> {
        self.nodes.iter().filter_map(|n| n.spec.level).max()
    }

    /// Rebuilds the name and GUID indexes.
    fn reindex(&mut self) {
        self.by_name = self
            .nodes
            .iter()
            .zip(0u32..)
            .map(|(n, i)| (n.spec.name.clone(), NodeId(i)))
            .collect();
        self.by_guid = self
            .nodes
            .iter()
            .zip(0u32..)
            .map(|(n, i)| (n.spec.guid, NodeId(i)))
            .collect();
        self.by_port_guid = self
            .nodes
            .iter()
            .zip(0u32..)
            .flat_map(|(n, i)| {
                port_guids(n.kind(), n.guid(), &n.ports)
                    .into_iter()
                    .map(move |(p, g)| (g, (NodeId(i), p)))
            })
            .collect();
    }
}

/// The port GUIDs a node carries, each with the port it names: a switch's node GUID and any
/// GUID its ports were given as port 0; an end node's port GUIDs, each at its port.
fn port_guids(kind: NodeKind, guid: Guid, ports: &[Port]) -> Vec<(PortNum, Guid)> {
    if kind == NodeKind::Switch {
        let mut v = vec![(PortNum(0), guid)];
        for p in ports {
            if !v.iter().any(|&(_, g)| g == p.guid) {
                v.push((PortNum(0), p.guid));
            }
        }
        v
    } else {
        ports.iter().map(|p| (p.num, p.guid)).collect()
    }
}

impl From<Fabric> for FabricBuilder {
    /// Continues building on an existing fabric (e.g. one imported from ibnetdiscover).
    fn from(mut fabric: Fabric) -> FabricBuilder {
        fabric.reindex();
        FabricBuilder { fabric }
    }
}

//! `ibnetdiscover` dumps as real NVIDIA-era fabrics print them, generated: what
//! `ibnetdiscover` shows for Quantum switches with their SHARP Aggregation Nodes (every switch
//! reports one port more than its front panel, the AN a one-port CA on that port, all ANs
//! with the same NodeDescription `Mellanox Technologies Aggregation Node` and `devid=0xcf09`),
//! `MF0;name:MQM8700/U1` switch descriptions, `dgx-0001 mlx5_3` HCAs, LIDs on every port.
//!
//! * [`Dump`]: switches, CAs and cables, written as one dump ([`Dump::text`]); built from a
//!   [`Fabric`] ([`Dump::of`]) and edited (an AN on a switch's extra port, cables removed,
//!   switches added).
//! * [`superpod`]: a SuperPOD-class rail-optimised three-level tree of HDR QM8700s, with ANs on
//!   every switch, a host-less management sub-tree and missing uplinks ([`SuperPod`]).
//! * [`planes_dump`]: a three-level tree cabled as Selene's storage fabric is, each core
//!   reaching several spines of every pod, in planes, with host-less leaves, missing cables
//!   and a management island ([`Planes`]).

use crate::Rng;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use weft_fabric::{Fabric, LinkState};

/// The NodeDescription every SHARP Aggregation Node reports.
pub const AN_DESCRIPTION: &str = "Mellanox Technologies Aggregation Node";

/// A switch of a dump.
#[derive(Clone, Debug)]
pub struct Switch {
    /// Node GUID (its ports' too).
    pub guid: u64,
    /// NodeDescription.
    pub desc: String,
    /// Ports it reports (the AN's included).
    pub ports: u8,
    /// Device ID.
    pub devid: u32,
}

/// A channel adapter of a dump (one port).
#[derive(Clone, Debug)]
pub struct Ca {
    /// Node GUID.
    pub guid: u64,
    /// Port 1's GUID.
    pub port_guid: u64,
    /// NodeDescription.
    pub desc: String,
    /// Device ID.
    pub devid: u32,
}

/// One end of a cable: a switch (by index) and port, or a CA (by index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum End {
    /// Switch `.0`, port `.1`.
    Switch(usize, u8),
    /// CA `.0`, its port 1.
    Ca(usize),
}

/// A fabric as a dump shows it: switches, CAs and cables, LIDs counted switches first.
#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// Switches, in the order the dump lists them.
    pub switches: Vec<Switch>,
    /// CAs, listed after the switches.
    pub cas: Vec<Ca>,
    /// Cables.
    pub cables: Vec<(End, End)>,
}

impl Dump {
    /// The dump of `f`'s up cables: its switches and one-port end nodes, names as
    /// NodeDescriptions, device IDs as recorded (a QM8700's `0xd2f0` and a ConnectX-6's
    /// `0x101b` when not). Panics on end nodes with more than one port.
    #[expect(clippy::panic, reason = "a test fixture")]
    pub fn of(f: &Fabric) -> Dump {
        let mut d = Dump::default();
        let mut at: BTreeMap<u32, usize> = BTreeMap::new();
        for (id, n) in f.node_ids().zip(f.nodes()) {
            let devid = |or: u32| {
                if n.spec.device_id == 0 {
                    or
                } else {
                    n.spec.device_id
                }
            };
            if n.is_switch() {
                at.insert(id.0, d.switches.len());
                d.switches.push(Switch {
                    guid: n.guid().0,
                    desc: n.name().to_owned(),
                    ports: n.spec.port_count,
                    devid: devid(0xd2f0),
                });
            } else {
                assert!(n.spec.port_count == 1, "{} has several ports", n.name());
                at.insert(id.0, d.cas.len());
                d.cas.push(Ca {
                    guid: n.guid().0,
                    port_guid: n.ports.first().map_or(0, |p| p.guid.0),
                    desc: n.name().to_owned(),
                    devid: devid(0x101b),
                });
            }
        }
        let end = |r: weft_fabric::PortRef| {
            let i = at[&r.node.0];
            if f.node(r.node).is_switch() {
                End::Switch(i, r.port.0)
            } else {
                End::Ca(i)
            }
        };
        for l in f.links().iter().filter(|l| l.state == LinkState::Up) {
            match (end(l.a), end(l.b)) {
                (End::Ca(_), End::Ca(_)) => panic!("a CA cabled to a CA"),
                (a, b) => d.cables.push((a, b)),
            }
        }
        d
    }

    /// Gives switch `s` one more port and a SHARP Aggregation Node on it (GUID the switch's
    /// plus 8, as on Quantum switches); returns the AN's index.
    pub fn add_an(&mut self, s: usize) -> usize {
        let sw = &mut self.switches[s];
        sw.ports += 1;
        let (guid, port) = (sw.guid + 8, sw.ports);
        self.cas.push(Ca {
            guid,
            port_guid: guid,
            desc: AN_DESCRIPTION.to_owned(),
            devid: 0xcf09,
        });
        let an = self.cas.len() - 1;
        self.cables.push((End::Switch(s, port), End::Ca(an)));
        an
    }

    /// Removes CA `c` and its cable (later CAs move down one index).
    pub fn remove_ca(&mut self, c: usize) {
        self.cas.remove(c);
        self.cables
            .retain(|&(a, b)| a != End::Ca(c) && b != End::Ca(c));
        let shift = |e: End| match e {
            End::Ca(x) if x > c => End::Ca(x - 1),
            other => other,
        };
        for cable in &mut self.cables {
            *cable = (shift(cable.0), shift(cable.1));
        }
    }

    /// Whether every switch and CA is joined to every other through the cables.
    pub fn connected(&self) -> bool {
        let n = self.switches.len();
        let index = |e: End| match e {
            End::Switch(s, _) => s,
            End::Ca(c) => n + c,
        };
        let mut adj = vec![Vec::new(); n + self.cas.len()];
        for &(a, b) in &self.cables {
            adj[index(a)].push(index(b));
            adj[index(b)].push(index(a));
        }
        let mut seen = vec![false; adj.len()];
        let mut stack = vec![0];
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            stack.extend(adj[x].iter().copied());
        }
        seen.iter().all(|&s| s)
    }

    /// The CAs cabled to switch `s`.
    pub fn cas_on(&self, s: usize) -> usize {
        self.cables
            .iter()
            .filter(|&&(a, b)| {
                matches!((a, b), (End::Switch(x, _), End::Ca(_)) | (End::Ca(_), End::Switch(x, _)) if x == s)
            })
            .count()
    }

    /// The LID of each switch and CA: switches `1..`, then CAs.
    fn lid_switch(&self, s: usize) -> usize {
        s + 1
    }

    fn lid_ca(&self, c: usize) -> usize {
        self.switches.len() + c + 1
    }

    /// The dump as `ibnetdiscover` prints it: a header, every switch record, then every CA's;
    /// ports ascending; `4xHDR` on every cable.
    pub fn text(&self) -> String {
        let mut at_switch: Vec<BTreeMap<u8, End>> = vec![BTreeMap::new(); self.switches.len()];
        let mut at_ca: Vec<Option<(usize, u8)>> = vec![None; self.cas.len()];
        for &(a, b) in &self.cables {
            for (x, y) in [(a, b), (b, a)] {
                match (x, y) {
                    (End::Switch(s, p), other) => {
                        at_switch[s].insert(p, other);
                    }
                    (End::Ca(c), End::Switch(s, p)) => at_ca[c] = Some((s, p)),
                    (End::Ca(_), End::Ca(_)) => {}
                }
            }
        }
        let mut out = String::from(
            "#\n# Topology file: generated on Mon Mar  2 09:14:07 2026\n#\n# Initiated from node 0c42a10300000000 port 0c42a10300000000\n\n",
        );
        for (s, sw) in self.switches.iter().enumerate() {
            let _ = write!(
                out,
                "vendid=0x2c9\ndevid={:#x}\nsysimgguid={g:#x}\nswitchguid={g:#x}({g:x})\nSwitch\t{} \"S-{g:016x}\"\t\t# \"{}\" enhanced port 0 lid {} lmc 0\n",
                sw.devid,
                sw.ports,
                sw.desc,
                self.lid_switch(s),
                g = sw.guid,
            );
            for (p, other) in &at_switch[s] {
                let (id, guid, desc, lid) = match *other {
                    End::Switch(t, q) => {
                        let o = &self.switches[t];
                        (
                            format!("\"S-{:016x}\"[{q}]", o.guid),
                            String::new(),
                            &o.desc,
                            self.lid_switch(t),
                        )
                    }
                    End::Ca(c) => {
                        let o = &self.cas[c];
                        (
                            format!("\"H-{:016x}\"[1]", o.guid),
                            format!("({:x}) ", o.port_guid),
                            &o.desc,
                            self.lid_ca(c),
                        )
                    }
                };
                let _ = writeln!(out, "[{p}]\t{id}{guid}\t\t# \"{desc}\" lid {lid} 4xHDR");
            }
            out.push('\n');
        }
        for (c, ca) in self.cas.iter().enumerate() {
            let _ = write!(
                out,
                "vendid=0x2c9\ndevid={:#x}\nsysimgguid={g:#x}\ncaguid={g:#x}\nCa\t1 \"H-{g:016x}\"\t\t# \"{}\"\n",
                ca.devid,
                ca.desc,
                g = ca.guid,
            );
            if let Some((s, p)) = at_ca[c] {
                let sw = &self.switches[s];
                let _ = writeln!(
                    out,
                    "[1]({:x}) \t\"S-{:016x}\"[{p}]\t\t# lid {} lmc 0 \"{}\" lid {} 4xHDR",
                    ca.port_guid,
                    sw.guid,
                    self.lid_ca(c),
                    sw.desc,
                    self.lid_switch(s),
                );
            }
            out.push('\n');
        }
        out
    }
}

/// The shape of [`superpod`]'s tree. QM8700 switches: 40 front-panel ports and the AN on
/// port 41.
#[derive(Clone, Copy, Debug)]
pub struct SuperPod {
    /// Rails: HCA `i` of every DGX is on rail `i`'s leaf of its scalable unit.
    pub rails: usize,
    /// Scalable units (one leaf per rail each): `rails × units` leaves.
    pub units: usize,
    /// Units per spine group: the leaves of one rail and group share their spines.
    pub group: usize,
    /// Spines per rail and group; each leaf has two cables to each.
    pub spines_per_group: usize,
    /// Core switches.
    pub cores: usize,
    /// Core cables per spine.
    pub core_links: usize,
    /// DGX systems (8 HCAs each, one per rail), spread over the units.
    pub dgx: usize,
    /// Other HCAs (UFM and storage servers), one on port 20 of a leaf each (units hold at
    /// most 19 DGX).
    pub others: usize,
    /// Switches of the host-less management sub-tree cabled to the cores (two hang off the
    /// cores, the rest off those two).
    pub management: usize,
    /// Leaf-to-spine cables left out.
    pub missing_uplinks: usize,
    /// Seed of the missing uplinks.
    pub seed: u64,
}

impl SuperPod {
    /// The 666-switch HDR tree of issue 27: 200 leaves (8 rails × 25 units), 320 spines
    /// (8 rails × 4 groups of up to 7 units × 10), 140 cores (10 planes of 14), a management
    /// sub-tree of 6 switches, 13 missing uplinks, 457 DGX (3 656 HCAs), 19 other HCAs and
    /// 666 ANs: 4 341 CAs. Leaves have 20 uplinks (two to each spine of their group), spines 14
    /// (one to each core of their plane).
    pub const ISSUE_27: SuperPod = SuperPod {
        rails: 8,
        units: 25,
        group: 7,
        spines_per_group: 10,
        cores: 140,
        core_links: 14,
        dgx: 457,
        others: 19,
        management: 6,
        missing_uplinks: 13,
        seed: 27,
    };

    /// Leaf switches.
    pub fn leaves(&self) -> usize {
        self.rails * self.units
    }

    /// Spine switches.
    pub fn spines(&self) -> usize {
        self.rails * self.units.div_ceil(self.group) * self.spines_per_group
    }

    /// Every switch.
    pub fn switches(&self) -> usize {
        self.leaves() + self.spines() + self.cores + self.management
    }
}

/// A SuperPOD-class rail-optimised three-level tree as `ibnetdiscover` prints it (see
/// [`SuperPod`] for its parts): leaf `leaf-r{rail}-su{unit}` (ports 1– DGX, 20 another HCA,
/// from 21 two cables to each spine of its group, 41 its AN), spine `spine-r{r}-g{g}-{k}`
/// (ports 1.. to its group's leaves, then `core_links` cables to the cores of its plane `k`),
/// core `core-{c}` (in plane `c mod spines_per_group`), management `mgmt-{m}` (the first two on
/// a free port of two cores each, the others on both of those). Every switch is a 41-port
/// QM8700 with an AN on port 41; DGX `dgx-0001` has HCAs `dgx-0001 mlx5_0`…`mlx5_7`.
pub fn superpod(p: &SuperPod) -> String {
    superpod_dump(p).text()
}

/// [`superpod`] before it is written.
pub fn superpod_dump(p: &SuperPod) -> Dump {
    let mut d = Dump::default();
    let sw = |d: &mut Dump, desc: String| {
        let i = d.switches.len();
        d.switches.push(Switch {
            guid: 0xb859_9f03_0000_0000 + (i as u64) * 16,
            desc: format!("MF0;{desc}:MQM8700/U1"),
            ports: 40,
            devid: 0xd2f0,
        });
        i
    };
    let groups = p.units.div_ceil(p.group);
    let leaf: Vec<Vec<usize>> = (0..p.rails)
        .map(|r| {
            (0..p.units)
                .map(|u| sw(&mut d, format!("leaf-r{}-su{:02}", r + 1, u + 1)))
                .collect()
        })
        .collect();
    let spine: Vec<Vec<Vec<usize>>> = (0..p.rails)
        .map(|r| {
            (0..groups)
                .map(|g| {
                    (0..p.spines_per_group)
                        .map(|k| sw(&mut d, format!("spine-r{}-g{}-{}", r + 1, g + 1, k + 1)))
                        .collect()
                })
                .collect()
        })
        .collect();
    let core: Vec<usize> = (0..p.cores)
        .map(|c| sw(&mut d, format!("core-{:03}", c + 1)))
        .collect();
    let mgmt: Vec<usize> = (0..p.management)
        .map(|m| sw(&mut d, format!("mgmt-{}", m + 1)))
        .collect();
    // Leaf uplinks: two cables to each spine of the group, minus the missing ones.
    let mut uplinks: Vec<(End, End)> = Vec::new();
    for (r, leaves) in leaf.iter().enumerate() {
        for (u, &l) in leaves.iter().enumerate() {
            let (g, at) = (u / p.group, u % p.group);
            for (k, &s) in spine[r][g].iter().enumerate() {
                for c in 0..2 {
                    uplinks.push((
                        End::Switch(l, (21 + 2 * k + c) as u8),
                        End::Switch(s, (1 + 2 * at + c) as u8),
                    ));
                }
            }
        }
    }
    let mut rng = Rng(p.seed);
    for _ in 0..p.missing_uplinks {
        let k = rng.below(uplinks.len());
        uplinks.remove(k);
    }
    d.cables.extend(uplinks);
    // Spines to cores: the k-th spine of every rail and group is in plane k, whose cores are
    // every core `c` with `c mod spines_per_group = k`; a plane's `i`-th spine has cables to
    // its cores `(i · core_links + t) mod (plane size)`.
    let mut core_port = vec![0u8; p.cores];
    let down = 2 * p.group;
    for k in 0..p.spines_per_group {
        let plane: Vec<usize> = (0..p.cores)
            .filter(|c| c % p.spines_per_group == k)
            .collect();
        let members: Vec<usize> = spine.iter().flatten().map(|g| g[k]).collect();
        for (i, &s) in members.iter().enumerate() {
            for t in 0..p.core_links {
                let c = plane[(i * p.core_links + t) % plane.len()];
                core_port[c] += 1;
                d.cables.push((
                    End::Switch(s, (down + 1 + t) as u8),
                    End::Switch(core[c], core_port[c]),
                ));
            }
        }
    }
    // The management sub-tree: two switches on two cores each, the others on both.
    for (k, &m) in mgmt.iter().enumerate() {
        if k < 2 {
            for (j, &c) in [core[k * p.cores / 4], core[(2 * k + 1) * p.cores / 4]]
                .iter()
                .enumerate()
            {
                core_port[c - core[0]] += 1;
                let port = core_port[c - core[0]];
                d.cables
                    .push((End::Switch(m, (1 + j) as u8), End::Switch(c, port)));
            }
        } else {
            for (j, &top) in mgmt.iter().take(2).enumerate() {
                d.cables.push((
                    End::Switch(m, (1 + j) as u8),
                    End::Switch(top, (2 + k) as u8),
                ));
            }
        }
    }
    // A ConnectX-6 (port GUID = node GUID, as mlx5 adapters report) on a leaf's port.
    let hca = |d: &mut Dump, guid: u64, desc: String, leaf: usize, port: u8| {
        d.cas.push(Ca {
            guid,
            port_guid: guid,
            desc,
            devid: 0x101b,
        });
        let c = d.cas.len() - 1;
        d.cables.push((End::Switch(leaf, port), End::Ca(c)));
    };
    // DGX: units take them in turn, so every unit has some.
    let mut next_port = vec![1u8; p.units];
    for x in 0..p.dgx {
        let u = x % p.units;
        let port = next_port[u];
        next_port[u] += 1;
        for (r, rail) in leaf.iter().enumerate() {
            let guid = 0x0c42_a103_0000_0000 + ((x * p.rails + r) as u64) * 4;
            hca(
                &mut d,
                guid,
                format!("dgx-{:04} mlx5_{r}", x + 1),
                rail[u],
                port,
            );
        }
    }
    for o in 0..p.others {
        let guid = 0x0c42_a103_1000_0000 + (o as u64) * 4;
        let l = leaf[o % p.rails][o / p.rails % p.units];
        hca(&mut d, guid, format!("ufm-{:02} mlx5_0", o + 1), l, 20);
    }
    for s in 0..d.switches.len() {
        d.add_an(s);
    }
    d
}

/// A three-level tree cabled as Selene's storage fabric is (see [`planes_dump`]): each core
/// reaches *several* spines of every pod (unlike a k-ary n-tree or [`SuperPod`], where it
/// reaches one), the spines of a pod split into planes.
#[derive(Clone, Copy, Debug)]
pub struct Planes {
    /// Pods: leaves and spines cabled all to all.
    pub pods: usize,
    /// Leaves with hosts, per pod.
    pub leaves: usize,
    /// Hosts per leaf.
    pub hosts: usize,
    /// Host-less leaves, cabled as the others are, in the last pod.
    pub hostless: usize,
    /// Spines per pod; spine `k` is in plane `k mod planes`.
    pub spines: usize,
    /// Planes.
    pub planes: usize,
    /// Cores per plane, each cabled to every spine of its plane in every pod.
    pub cores: usize,
    /// Cables left out at random (leaf–spine or spine–core), each leaf and spine keeping two
    /// uplinks and the cabling in one piece.
    pub missing: usize,
    /// A management island: a switch on a free port of a random spine, another on it.
    pub management: bool,
    /// Seed of the missing cables and the island's spine.
    pub seed: u64,
}

/// The dump of a [`Planes`] tree of 40-port QM8700s: leaf `L{pod}-{i}` (hosts on ports 1…,
/// then one cable to each spine of its pod), spine `S{pod}-{k}` (its pod's leaves, then its
/// plane's cores), core `C{plane}-{c}` (every spine of its plane, pod by pod), `mgmt-1` and
/// `mgmt-2`; host HCAs `n{pod}{leaf}{host} mlx5_0`.
#[expect(
    clippy::panic,
    reason = "a test fixture stops on a tree that does not fit"
)]
pub fn planes_dump(p: &Planes) -> Dump {
    let mut d = Dump::default();
    let sw = |d: &mut Dump, desc: String| {
        let i = d.switches.len();
        d.switches.push(Switch {
            guid: 0x0c42_a103_0070_0000 + (i as u64) * 16,
            desc: format!("MF0;{desc}:MQM8700/U1"),
            ports: 40,
            devid: 0xd2f0,
        });
        i
    };
    let per_pod = p.leaves + p.hostless;
    let in_plane = p.spines.div_ceil(p.planes);
    if p.hosts + p.spines > 40 || per_pod + p.cores + 1 > 40 || p.pods * in_plane > 40 {
        panic!("{p:?} needs more than 40 ports on a switch");
    }
    let leaf: Vec<Vec<usize>> = (0..p.pods)
        .map(|q| {
            let n = if q + 1 == p.pods { per_pod } else { p.leaves };
            (0..n)
                .map(|i| sw(&mut d, format!("L{}-{:02}", q + 1, i + 1)))
                .collect()
        })
        .collect();
    let spine: Vec<Vec<usize>> = (0..p.pods)
        .map(|q| {
            (0..p.spines)
                .map(|k| sw(&mut d, format!("S{}-{:02}", q + 1, k + 1)))
                .collect()
        })
        .collect();
    let core: Vec<Vec<usize>> = (0..p.planes)
        .map(|pl| {
            (0..p.cores)
                .map(|c| sw(&mut d, format!("C{}-{:02}", pl + 1, c + 1)))
                .collect()
        })
        .collect();
    let mut cables: Vec<(End, End)> = Vec::new();
    for (q, leaves) in leaf.iter().enumerate() {
        for (i, &l) in leaves.iter().enumerate() {
            for (k, &s) in spine[q].iter().enumerate() {
                cables.push((
                    End::Switch(l, (p.hosts + k + 1) as u8),
                    End::Switch(s, (i + 1) as u8),
                ));
            }
        }
    }
    for (q, spines) in spine.iter().enumerate() {
        for (k, &s) in spines.iter().enumerate() {
            let plane = &core[k % p.planes];
            // The spine's rank in its plane within the pod.
            let rank = k / p.planes;
            for (c, &top) in plane.iter().enumerate() {
                cables.push((
                    End::Switch(s, (per_pod + c + 1) as u8),
                    End::Switch(top, (q * in_plane + rank + 1) as u8),
                ));
            }
        }
    }
    d.cables = cables;
    // Missing cables: a switch's uplink, keeping two and the cabling in one piece.
    let mut rng = Rng(p.seed);
    // The lower switch of a cable between two (listed first above).
    let lower = |c: &(End, End)| match *c {
        (End::Switch(a, _), End::Switch(_, _)) => Some(a),
        _ => None,
    };
    let mut left = p.missing;
    let mut tries = 0;
    while left > 0 && tries < 100 {
        tries += 1;
        let k = rng.below(d.cables.len());
        let Some(a) = lower(&d.cables[k]) else {
            continue;
        };
        let uplinks = d.cables.iter().filter(|c| lower(c) == Some(a)).count();
        if uplinks <= 2 {
            continue;
        }
        let cable = d.cables.remove(k);
        if d.connected() {
            left -= 1;
        } else {
            d.cables.insert(k, cable);
        }
    }
    if p.management {
        let s = spine[rng.below(p.pods)][rng.below(p.spines)];
        let (m1, m2) = (sw(&mut d, "mgmt-1".into()), sw(&mut d, "mgmt-2".into()));
        d.cables.push((End::Switch(s, 40), End::Switch(m1, 1)));
        d.cables.push((End::Switch(m1, 2), End::Switch(m2, 1)));
    }
    for (q, leaves) in leaf.iter().enumerate() {
        for (i, &l) in leaves.iter().take(p.leaves).enumerate() {
            for h in 0..p.hosts {
                let guid = 0x0c42_a103_2000_0000 + (d.cas.len() as u64) * 4;
                d.cas.push(Ca {
                    guid,
                    port_guid: guid,
                    desc: format!("n{}{:02}{:02} mlx5_0", q + 1, i + 1, h + 1),
                    devid: 0x101b,
                });
                d.cables
                    .push((End::Switch(l, (h + 1) as u8), End::Ca(d.cas.len() - 1)));
            }
        }
    }
    d
}

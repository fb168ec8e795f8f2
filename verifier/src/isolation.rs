//! `isolated`: the P_Key tables let exactly the declared pairs of end ports talk.
//!
//! Two end ports can talk when their P_Key tables hold keys of one partition (the low 15
//! bits equal, not partition 0) and at least one of the two keys is a full membership (bit
//! 15); a port without a table holds the default key `0xffff` (full member of the default
//! partition), as the IBA's power-on default. The declared partitions
//! ([`FabricState::partitions`](weft_fabric::FabricState)) say which pairs may: both members of
//! one declared partition, at least one of them full. `isolated` holds when the two relations
//! are equal over every pair of end ports with a LID:
//!
//! * a pair the tables let talk that no declared partition allows is a **leak** (the two ports
//!   and the keys that let them talk);
//! * a pair a declared partition allows that the tables keep apart is **cut** (the two ports
//!   and the partition).
//!
//! The VFs of vSwitch hypervisors are end ports of their own: each VF with a LID, with its
//! own P_Key table, a declared member of the partitions that name the VM on it
//! ([`Partition::vms`](weft_fabric::Partition)).
//!
//! Enforcement is modelled at the end ports (the receiving port drops a packet whose P_Key it
//! does not match); switch partition enforcement is not modelled, so nothing here relies on
//! it. Management traffic (SMPs on QP0) is not subject to P_Keys and is not part of the check.
//!
//! **The subnet manager.** Every end port must reach the SA, so the SM's port is a full member
//! of the default partition (`0xffff`) and every end port with a LID holds a key of the
//! default partition (`0x7fff` or `0xffff`); then each talks to the SM, and the SM to each.
//! Where the state says where the SM runs ([`FabricState::sm`](weft_fabric::FabricState)):
//!
//! * an SM port without the full default key is a breach (**sm-not-full**; with only the
//!   limited key, the end ports — limited members — cannot reach it);
//! * an end port without a default key is a breach (**sm-unreachable**);
//! * pairs with an SM port are not compared with the declared partitions: the SM talks to
//!   every end port, which is not a leak.
//!
//! Where the state does not say: the end ports' default keys are checked all the same (a port
//! without one reaches no SM, wherever it runs), every port's pairs are compared (a port with
//! the full default key is a leak like any other), and [`Isolation::outcome`] holds wherever
//! the SM runs *provided its port holds the full default key* — which the state cannot say of
//! a port it does not name, so the property's verdict ([`Isolation::verdict`]) is unknown
//! unless something is violated. (OpenSM makes its own port a full member with the
//! `partitions.conf` weft writes: `SELF=full`, last.)
//!
//! Ports are grouped by (table, declared memberships); only groups that share a partition in
//! either relation are compared, so the cost follows the number of distinct groups, not the
//! square of the ports.

use crate::report::{Endpoint, NodeRef, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{Membership, PKey, PortRef, ValidState};

/// How a pair of end ports breaks the declared partitions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum BreachKind {
    /// The tables let them talk, though no declared partition holds both (or only as limited
    /// members).
    Leak {
        /// `a`'s key.
        a_pkey: u16,
        /// `b`'s key (same partition, one of the two full).
        b_pkey: u16,
    },
    /// A declared partition lets them talk, the tables do not.
    Cut {
        /// The partition.
        partition: String,
        /// Its number.
        pkey: u16,
    },
    /// An end port holds no key of the default partition: it cannot reach the SM (`b`: the
    /// first declared SM port, or the port itself when the state names none).
    SmUnreachable,
    /// A port the SM runs on is not a full member of the default partition (`a` and `b`: the
    /// port).
    SmNotFull {
        /// The default-partition key it holds (`0x7fff`), if any.
        pkey: Option<u16>,
    },
    /// Traffic between two members of a partition with a class leaves the class: a path
    /// on another SL (`vl` and `at` none), or a hop that puts the class's SL on another VL
    /// (`at` names the switch or port and the ports in and out).
    OffClass {
        /// The partition.
        partition: String,
        /// Its class.
        class: String,
        /// The SL.
        sl: u8,
        /// The VL it is put on, for a hop.
        vl: Option<u8>,
        /// Where, for a hop.
        at: Option<String>,
    },
}

/// A pair of end ports and how it breaks the declared partitions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Breach {
    /// What is wrong.
    #[serde(flatten)]
    pub kind: BreachKind,
    /// One port.
    pub a: Endpoint,
    /// The other.
    pub b: Endpoint,
    /// Pairs of ports breaking it the same way (the same two groups of tables and declared
    /// memberships), this one included; for [`BreachKind::SmUnreachable`], the end ports
    /// like `a` (same table and memberships); for [`BreachKind::SmNotFull`], 1.
    pub pairs: u64,
}

impl Breach {
    /// One sentence, without a final period.
    pub fn describe(&self) -> String {
        let port = |e: &Endpoint| format!("`{}` port {}", e.node.name, e.port);
        let more = if self.pairs > 1 {
            format!(" ({} pairs like this)", self.pairs)
        } else {
            String::new()
        };
        match &self.kind {
            BreachKind::Leak { a_pkey, b_pkey } => format!(
                "{} and {} share no declared partition, but their P_Keys {} and {} let them talk{more}",
                port(&self.a),
                port(&self.b),
                PKey(*a_pkey),
                PKey(*b_pkey)
            ),
            BreachKind::Cut { partition, pkey } => format!(
                "{} and {} are both in partition `{partition}` ({:#06x}), but their P_Key tables keep them apart{more}",
                port(&self.a),
                port(&self.b),
                pkey
            ),
            BreachKind::SmUnreachable if self.a == self.b => format!(
                "{} holds no key of the default partition (0x7fff or 0xffff): it cannot reach the SM, wherever it runs{}",
                port(&self.a),
                more.replace("pairs", "ports")
            ),
            BreachKind::SmUnreachable => format!(
                "{} holds no key of the default partition (0x7fff or 0xffff): it cannot reach the SM on {}{}",
                port(&self.a),
                port(&self.b),
                more.replace("pairs", "ports")
            ),
            BreachKind::SmNotFull { pkey: Some(k) } => format!(
                "the SM runs on {}, which holds the default partition's key only as limited member ({}): the end ports, limited members too, cannot reach it",
                port(&self.a),
                PKey(*k)
            ),
            BreachKind::SmNotFull { pkey: None } => format!(
                "the SM runs on {}, which holds no key of the default partition: no end port can reach it",
                port(&self.a)
            ),
            BreachKind::OffClass {
                partition,
                class,
                sl,
                vl: None,
                ..
            } => format!(
                "{} and {} are in partition `{partition}` of class `{class}`, but the path between them may use SL {sl}, which is not the class's{more}",
                port(&self.a),
                port(&self.b)
            ),
            BreachKind::OffClass {
                partition,
                class,
                sl,
                vl: Some(vl),
                at,
            } => format!(
                "partition `{partition}`'s traffic is class `{class}`'s, but {} puts its SL {sl} on VL {vl}, which is not the class's",
                at.as_deref().unwrap_or("a hop")
            ),
        }
    }
}

/// The result of checking `isolated`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Isolation {
    /// Proven, violated, or unknown (no partitions declared).
    pub outcome: Outcome,
    /// Declared partitions.
    pub partitions: usize,
    /// End ports compared.
    pub ports: usize,
    /// Distinct (table, declared memberships) groups among them.
    pub groups: usize,
    /// Breaches listed (one per pair of groups), leaks first, at most `max_listed`.
    pub breaches: Vec<Breach>,
    /// Pairs of ports breaking the declared partitions, in all.
    pub pairs: u64,
    /// Pairs of members whose path leaves their class's SLs, and hops that put a class's SL
    /// on another VL, in all.
    pub off_class: u64,
    /// Declared partitions with a class (their traffic checked to stay on it).
    pub classes: usize,
    /// The ports the state says the SM runs on (empty: it does not say; then `outcome` holds
    /// wherever the SM runs provided its port is a full member of the default partition, and
    /// [`Isolation::verdict`] is unknown unless something is violated).
    #[serde(default)]
    pub sm: Vec<Endpoint>,
    /// End ports with a LID holding no key of the default partition (they reach no SM), and
    /// SM ports that are not full members of it, in all.
    #[serde(default)]
    pub sm_breaches: u64,
}

/// Why `isolated` is unknown on a state that does not say where the SM runs.
pub(crate) const SM_UNDECLARED: &str = "the P_Key tables match the declared partitions and every end port holds a key of the default partition, but the state does not say where the SM runs, so whether its port is a full member of the default partition (which every end port needs to reach the SA) is not known; declare it (`sm on NODE` in the source, `\"sm\"` in state.json, `--sm` for `weft verify`)";

impl Isolation {
    /// The `isolated` property: [`Isolation::outcome`], except unknown when it is proven on a
    /// state that does not say where the SM runs (the SM's own port is then not checked).
    pub fn verdict(&self) -> Outcome {
        match &self.outcome {
            Outcome::Proven if self.sm.is_empty() => Outcome::Unknown(SM_UNDECLARED.to_owned()),
            o => o.clone(),
        }
    }
}

/// Why `isolated` is not decided on a state without declared partitions.
pub(crate) const NOTHING_DECLARED: &str =
    "the state declares no partitions: there is nothing to check its P_Key tables against";

/// Each member end port's declared memberships: (partition index, membership).
type Members = BTreeMap<End, Vec<(usize, Membership)>>;

/// What groups end ports: their keys (sorted) and their declared memberships.
type GroupKey = (Vec<u16>, Vec<(usize, Membership)>);

/// An end port: a physical port, or a VF (its index) behind one.
pub type End = (PortRef, Option<u8>);

/// A group of end ports with the same table and the same declared memberships.
struct Group {
    /// The keys its ports hold, sorted.
    keys: Vec<u16>,
    /// Its declared memberships: (partition index, membership), sorted.
    declared: Vec<(usize, Membership)>,
    /// Its ports, sorted.
    ports: Vec<End>,
}

/// Checks `isolated` on `state`, listing at most `max_listed` breaches.
pub fn check(state: &ValidState, max_listed: usize) -> Isolation {
    let parts = &state.partitions;
    if parts.is_empty() {
        return Isolation {
            outcome: Outcome::Unknown(NOTHING_DECLARED.to_owned()),
            partitions: 0,
            ports: 0,
            groups: 0,
            breaches: Vec::new(),
            pairs: 0,
            off_class: 0,
            classes: 0,
            sm: Vec::new(),
            sm_breaches: 0,
        };
    }
    // The SM's ports: not compared pair by pair (the SM talks to every end port).
    let sm: BTreeSet<End> = state.sm.iter().map(|&r| (r, None)).collect();
    // Each member end port's memberships (a VM's on the VF it runs on).
    let declared = crate::partition_mix::Declared::of_state(state).members;
    let ports = end_ports(state, &declared);
    let (groups, no_default) = group_ports(state, &ports, &sm, &declared);
    let (mut breaches, pairs) = pair_breaches(state, &groups);
    let off_class = classes(state, &mut breaches);
    let sm_breaches = sm_breaches(state, &sm, &no_default, &mut breaches);
    breaches.sort();
    breaches.truncate(max_listed);
    Isolation {
        off_class,
        classes: parts.iter().filter(|p| p.class.is_some()).count(),
        outcome: if pairs == 0 && off_class == 0 && sm_breaches == 0 {
            Outcome::Proven
        } else {
            Outcome::Violated
        },
        partitions: parts.len(),
        ports: ports.len(),
        groups: groups.len(),
        breaches,
        pairs,
        sm: sm.iter().map(|&e| end_point(state, e)).collect(),
        sm_breaches,
    }
}

/// Every end port: the declared members, every end node's port with a LID, and every VF with
/// a LID (one without cannot talk).
fn end_ports(state: &ValidState, declared: &Members) -> BTreeSet<End> {
    let f = &state.fabric;
    let mut ports: BTreeSet<End> = declared.keys().copied().collect();
    for (&n, lids) in &state.lids.base {
        if f.nodes().get(n.index()).is_some_and(|x| !x.is_switch()) {
            ports.extend(lids.keys().map(|&p| (PortRef { node: n, port: p }, None)));
        }
    }
    ports.extend(
        state
            .lids
            .vports
            .iter()
            .filter(|v| v.lid.is_some())
            .map(|v| (v.host, Some(v.vf))),
    );
    ports
}

/// The end ports but the SM's, grouped by table and declared memberships; and per group key,
/// its ports with a LID and no default key.
fn group_ports(
    state: &ValidState,
    ports: &BTreeSet<End>,
    sm: &BTreeSet<End>,
    declared: &Members,
) -> (Vec<Group>, BTreeMap<GroupKey, Vec<End>>) {
    // The ports with a LID (they reach the SA): physical ones and VFs.
    let with_lid = |r: &End| match r.1 {
        None => state.lids.get(r.0.node, r.0.port).is_some(),
        Some(vf) => state
            .lids
            .vports
            .iter()
            .any(|v| (v.host, v.vf) == (r.0, vf) && v.lid.is_some()),
    };
    let mut by_key: BTreeMap<GroupKey, Vec<End>> = BTreeMap::new();
    let mut no_default: BTreeMap<GroupKey, Vec<End>> = BTreeMap::new();
    for &r in ports {
        if sm.contains(&r) {
            continue;
        }
        let mut keys = keys_of(state, r);
        keys.sort_unstable();
        let d = declared.get(&r).cloned().unwrap_or_default();
        if !keys.iter().any(|k| k & 0x7fff == 0x7fff) && with_lid(&r) {
            no_default
                .entry((keys.clone(), d.clone()))
                .or_default()
                .push(r);
        }
        by_key.entry((keys, d)).or_default().push(r);
    }
    let groups = by_key
        .into_iter()
        .map(|((keys, declared), ports)| Group {
            keys,
            declared,
            ports,
        })
        .collect();
    (groups, no_default)
}

/// Pairs of groups that could talk in either relation: one of them a full member of a
/// partition the other is in.
fn candidates(groups: &[Group]) -> BTreeSet<(usize, usize)> {
    let mut members: BTreeMap<(bool, u16), (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (g, grp) in groups.iter().enumerate() {
        for &k in &grp.keys {
            let (full, any) = members.entry((false, k & 0x7fff)).or_default();
            if k & 0x8000 != 0 {
                full.push(g);
            }
            any.push(g);
        }
        for &(i, m) in &grp.declared {
            let (full, any) = members.entry((true, i as u16)).or_default();
            if m == Membership::Full {
                full.push(g);
            }
            any.push(g);
        }
    }
    let mut candidates: BTreeSet<(usize, usize)> = BTreeSet::new();
    for ((declared, base), (full, any)) in &members {
        if !declared && *base == 0 {
            continue;
        }
        for &x in full {
            for &y in any {
                candidates.insert((x.min(y), x.max(y)));
            }
        }
    }
    candidates
}

/// The leaks and cuts between groups, one breach per pair of groups; returns them and the
/// pairs of ports that breach.
fn pair_breaches(state: &ValidState, groups: &[Group]) -> (Vec<Breach>, u64) {
    let parts = &state.partitions;
    let mut breaches: Vec<Breach> = Vec::new();
    let mut pairs = 0u64;
    for (x, y) in candidates(groups) {
        let (Some(gx), Some(gy)) = (groups.get(x), groups.get(y)) else {
            continue;
        };
        let n = if x == y {
            let k = gx.ports.len() as u64;
            k * k.saturating_sub(1) / 2
        } else {
            (gx.ports.len() * gy.ports.len()) as u64
        };
        if n == 0 {
            continue;
        }
        let talk = tables_talk(&gx.keys, &gy.keys);
        let allowed = declared_talk(&gx.declared, &gy.declared).and_then(|i| parts.get(i));
        let kind = match (talk, allowed) {
            (Some((a_pkey, b_pkey)), None) => BreachKind::Leak { a_pkey, b_pkey },
            (None, Some(p)) => BreachKind::Cut {
                partition: p.name.clone(),
                pkey: p.pkey,
            },
            _ => continue,
        };
        pairs += n;
        let (a, b) = match (x == y, gx.ports.as_slice(), gy.ports.first()) {
            (true, [a, b, ..], _) => (*a, *b),
            (false, [a, ..], Some(b)) => (*a, *b),
            _ => continue,
        };
        // The witness names the lower port first; a leak's keys follow their ports.
        let (a, b, kind) = match kind {
            BreachKind::Leak { a_pkey, b_pkey } if b < a => (
                b,
                a,
                BreachKind::Leak {
                    a_pkey: b_pkey,
                    b_pkey: a_pkey,
                },
            ),
            k => (a.min(b), a.max(b), k),
        };
        breaches.push(Breach {
            kind,
            a: end_point(state, a),
            b: end_point(state, b),
            pairs: n,
        });
    }
    (breaches, pairs)
}

/// The SM: its ports full members of the default partition, every end port a member. Adds a
/// breach per offending SM port and per group without the default key; returns how many
/// ports offend.
fn sm_breaches(
    state: &ValidState,
    sm: &BTreeSet<End>,
    no_default: &BTreeMap<GroupKey, Vec<End>>,
    breaches: &mut Vec<Breach>,
) -> u64 {
    let mut sm_breaches = 0u64;
    for &p in sm {
        let keys = keys_of(state, p);
        if !keys.contains(&PKey::DEFAULT.0) {
            sm_breaches += 1;
            let e = end_point(state, p);
            breaches.push(Breach {
                kind: BreachKind::SmNotFull {
                    pkey: keys.iter().copied().find(|k| k & 0x7fff == 0x7fff),
                },
                a: e.clone(),
                b: e,
                pairs: 1,
            });
        }
    }
    let first_sm = sm.iter().next().copied();
    for group in no_default.values() {
        let Some(&a) = group.first() else { continue };
        sm_breaches += group.len() as u64;
        breaches.push(Breach {
            kind: BreachKind::SmUnreachable,
            a: end_point(state, a),
            b: end_point(state, first_sm.unwrap_or(a)),
            pairs: group.len() as u64,
        });
    }
    sm_breaches
}

/// The keys `r`'s table holds (a port without a table: the IBA default `0xffff`).
fn keys_of(state: &ValidState, r: End) -> Vec<u16> {
    let table = match r.1 {
        None => state.ports.get(&r.0).and_then(|p| p.pkeys.as_ref()),
        Some(vf) => state
            .lids
            .vports
            .iter()
            .find(|v| (v.host, v.vf) == (r.0, vf))
            .and_then(|v| v.pkeys.as_ref()),
    };
    match table {
        Some(t) => t.iter().map(|k| k.0).collect(),
        None => vec![PKey::DEFAULT.0],
    }
}

/// Partitions with a class: every path between two members on the class's SLs, and every hop
/// (switch SL→VL rows, members' injection) putting those SLs on the class's VLs. Adds one
/// breach per offending source and member, or per offending switch or port; returns how many
/// pairs and places offend.
fn classes(state: &ValidState, breaches: &mut Vec<Breach>) -> u64 {
    let f = &state.fabric;
    let mut off = 0u64;
    for p in &state.partitions {
        let Some(c) = &p.class else { continue };
        let offence = |sl: u8, vl: Option<u8>, at: Option<String>| BreachKind::OffClass {
            partition: p.name.clone(),
            class: c.name.clone(),
            sl,
            vl,
            at,
        };
        let span = state.lids.span(false);
        let mut members: Vec<(PortRef, u16)> = p
            .members
            .keys()
            .filter_map(|&r| state.lids.get(r.node, r.port).map(|l| (r, l.0)))
            .collect();
        // By LID, so each source's own path-SL ranges are met in order.
        members.sort_by_key(|&(_, lid)| lid);
        let by_source = &state.path_sl.by_source;
        for &(a, _) in &members {
            let from = by_source.partition_point(|e| e.src < a);
            let to = by_source.partition_point(|e| e.src <= a);
            let own = by_source.get(from..to).unwrap_or(&[]);
            let mut at = 0usize;
            let mut sls_to = |lid: weft_fabric::Lid| -> u16 {
                while own.get(at).is_some_and(|e| e.lids.hi < lid) {
                    at += 1;
                }
                match own.get(at) {
                    Some(e) if e.lids.contains(lid) => e.sls.0,
                    _ => state.path_sls(a, lid).0,
                }
            };
            let mut first: Option<(PortRef, u8)> = None;
            let mut n = 0u64;
            for &(b, base) in &members {
                if a == b {
                    continue;
                }
                let bad = (0..span)
                    .map(|k| sls_to(weft_fabric::Lid(base + k)) & !c.sls.0)
                    .fold(0u16, |m, x| m | x);
                if bad != 0 {
                    n += 1;
                    first.get_or_insert((b, bad.trailing_zeros() as u8));
                }
            }
            if let Some((b, sl)) = first {
                off += n;
                breaches.push(Breach {
                    kind: offence(sl, None, None),
                    a: endpoint(state, a),
                    b: endpoint(state, b),
                    pairs: n,
                });
            }
        }
        let Some(&(witness, _)) = members.first() else {
            continue;
        };
        let sls: Vec<u8> = (0..16u8).filter(|sl| c.sls.0 & (1 << sl) != 0).collect();
        let off_vl = |vl: u8| vl > 15 || c.vls & (1 << vl) == 0;
        let mut places: Vec<(u8, u8, String)> = Vec::new();
        for (&x, t) in &state.switches {
            let name = f.node(x).name();
            for r in &t.sl2vl {
                for &sl in &sls {
                    let vl = r.vl.get(usize::from(sl)).copied().unwrap_or(15);
                    if off_vl(vl) {
                        places.push((
                            sl,
                            vl,
                            format!("`{name}` from port {} to port {}", r.in_port, r.out_port),
                        ));
                    }
                }
            }
            for &sl in &sls {
                let vl = match (&t.sl2vl_all, t.sl2vl.is_empty()) {
                    (Some(m), _) => m.get(usize::from(sl)).copied().unwrap_or(15),
                    (None, true) => 0,
                    (None, false) => continue,
                };
                if off_vl(vl) {
                    places.push((sl, vl, format!("`{name}` (every port pair without a row)")));
                }
            }
        }
        for &(r, _) in &members {
            for &sl in &sls {
                let vl = state.injection_vl(r, weft_fabric::Sl(sl)).0;
                if off_vl(vl) {
                    places.push((
                        sl,
                        vl,
                        format!("`{}` port {} (injection)", f.node(r.node).name(), r.port.0),
                    ));
                }
            }
        }
        off += places.len() as u64;
        if let Some((sl, vl, at)) = places.into_iter().next() {
            breaches.push(Breach {
                kind: offence(sl, Some(vl), Some(at)),
                a: endpoint(state, witness),
                b: endpoint(state, witness),
                pairs: 0,
            });
        }
    }
    off
}

/// The keys (one from each table) that let two tables talk: same partition, not partition
/// 0, at least one full; `None` when no pair does.
pub(crate) fn tables_talk(a: &[u16], b: &[u16]) -> Option<(u16, u16)> {
    a.iter()
        .flat_map(|&x| b.iter().map(move |&y| (x, y)))
        .find(|&(x, y)| x & 0x7fff == y & 0x7fff && x & 0x7fff != 0 && (x | y) & 0x8000 != 0)
}

/// The first declared partition that holds both, one of them as a full member.
pub(crate) fn declared_talk(a: &[(usize, Membership)], b: &[(usize, Membership)]) -> Option<usize> {
    a.iter()
        .flat_map(|&x| b.iter().map(move |&y| (x, y)))
        .find(|&((i, m), (j, n))| i == j && (m == Membership::Full || n == Membership::Full))
        .map(|((i, _), _)| i)
}

/// A VF is named `cn140 VF 0 (db1)` with its own GUID, on its hypervisor's port.
pub(crate) fn end_point(state: &ValidState, (r, vf): End) -> Endpoint {
    let mut e = endpoint(state, r);
    if let Some(v) = vf.and_then(|k| state.lids.vports.iter().find(|v| (v.host, v.vf) == (r, k))) {
        e.node.name = match &v.vm {
            Some(vm) => format!("{} VF {} ({vm})", e.node.name, v.vf),
            None => format!("{} VF {}", e.node.name, v.vf),
        };
        e.node.guid = v.guid;
    }
    e
}

fn endpoint(state: &ValidState, r: PortRef) -> Endpoint {
    let n = state.fabric.node(r.node);
    Endpoint {
        node: NodeRef {
            id: r.node,
            name: n.name().to_owned(),
            guid: n.guid(),
        },
        port: r.port.0,
    }
}

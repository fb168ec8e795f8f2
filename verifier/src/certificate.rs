//! Certificates: what a proof leaves behind, and a linear-time checker that trusts nothing
//! but the state it is given.
//!
//! A certificate holds
//!
//! * a **rank per channel** (node GUID, port, VL) that strictly increases along every
//!   dependency of the channel dependency graph (so the graph is acyclic), and
//! * per destination LID, a **distance label** per switch that strictly decreases along every
//!   LFT next hop and is defined wherever a required route enters (so every route arrives).
//!
//! [`check`] recomputes, per destination, each switch's next hop from the tables, checks the
//! labels, then pushes every route state (switch, input port, VL, SL) through the switches in
//! decreasing label order — a topological order the labels themselves prove — checking each
//! hop's VL and each dependency's ranks. Every step is constant work per route state, so the
//! check is linear in the size of the routing. The JSON is deterministic.

use crate::explicit::NO_LABEL;
use crate::net::{Attach, Dest, Net, PortLink, Source, Step, NO_INDEX};
use crate::Scope;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weft_fabric::{Lid, SlSet, ValidState};

/// The format name in `certificate.json`.
pub const FORMAT: &str = "weft-certificate";

/// A proof of deadlock freedom and connectivity of one state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Certificate {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version (1).
    pub version: u32,
    /// The fabric's name.
    pub fabric: String,
    /// The pairs it covers.
    pub scope: Scope,
    /// Every channel of the dependency graph: `[node GUID, port, VL, rank]`, sorted.
    pub channels: Vec<(String, u8, u8, u32)>,
    /// Switch node GUIDs, in the order of every label array.
    pub switches: Vec<String>,
    /// Distance labels per destination LID (65535: no label).
    pub destinations: Vec<Labels>,
}

/// The distance labels toward one destination.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    /// Destination LID.
    pub lid: u16,
    /// One label per switch of [`Certificate::switches`].
    pub labels: Vec<u16>,
}

/// Why a certificate is rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[non_exhaustive]
pub enum CertificateError {
    /// Not a certificate, or another version.
    #[error("not a weft certificate (version 1): {0}")]
    Format(String),
    /// It names a node the state does not have.
    #[error("the certificate names node `{0}`, which the fabric does not have")]
    UnknownNode(String),
    /// It covers other destinations than the state requires.
    #[error("the certificate covers {found} destinations, the state requires {required}")]
    Destinations {
        /// Destinations in the certificate.
        found: usize,
        /// Destinations the state requires.
        required: usize,
    },
    /// A label or next hop does not lead to the destination.
    #[error("toward LID {lid}, `{node}` {problem}")]
    Label {
        /// Destination LID.
        lid: u16,
        /// The switch or source.
        node: String,
        /// What is wrong.
        problem: String,
    },
    /// A dependency whose ranks do not increase, or a channel without a rank.
    #[error("dependency `{from}` → `{to}` {problem}")]
    Rank {
        /// Held channel.
        from: String,
        /// Wanted channel.
        to: String,
        /// What is wrong.
        problem: String,
    },
}

/// What an accepted certificate proved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// Destination LIDs.
    pub destinations: u64,
    /// Routes (source, destination, SL) shown to arrive.
    pub routes: u64,
    /// Route states checked (dependencies included).
    pub states: u64,
}

impl Certificate {
    /// Deterministic JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads what [`Certificate::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<Certificate, CertificateError> {
        let c: Certificate =
            serde_json::from_str(text).map_err(|e| CertificateError::Format(e.to_string()))?;
        if c.format != FORMAT || c.version != 1 {
            return Err(CertificateError::Format(format!(
                "format `{}` version {}",
                c.format, c.version
            )));
        }
        Ok(c)
    }
}

fn guid_hex(g: weft_fabric::Guid) -> String {
    format!("{:#018x}", g.0)
}

pub(crate) fn build(
    net: &Net<'_>,
    scope: Scope,
    edges: &[(u32, u32)],
    ranks: &[u32],
    labels: Vec<(Lid, Vec<u16>)>,
) -> Certificate {
    let mut used: Vec<u32> = edges.iter().flat_map(|&(a, b)| [a, b]).collect();
    used.sort_unstable();
    used.dedup();
    let nodes = net.st.fabric.nodes();
    let mut channels: Vec<(String, u8, u8, u32)> = used
        .iter()
        .filter_map(|&c| {
            let (n, p, vl) = net.channel_parts(c)?;
            let g = nodes.get(n as usize)?.guid();
            Some((guid_hex(g), p, vl, ranks.get(c as usize).copied()?))
        })
        .collect();
    channels.sort();
    Certificate {
        format: FORMAT.to_owned(),
        version: 1,
        fabric: net.st.fabric.name.clone(),
        scope,
        channels,
        switches: net
            .switches
            .iter()
            .filter_map(|&x| nodes.get(x as usize).map(|n| guid_hex(n.guid())))
            .collect(),
        destinations: labels
            .into_iter()
            .map(|(lid, labels)| Labels { lid: lid.0, labels })
            .collect(),
    }
}

fn parse_guid(s: &str) -> Option<weft_fabric::Guid> {
    let h = s.strip_prefix("0x")?;
    u64::from_str_radix(h, 16).ok().map(weft_fabric::Guid)
}

/// Re-checks `cert` against `state`, trusting nothing else.
pub fn check(state: &ValidState, cert: &Certificate) -> Result<CheckSummary, CertificateError> {
    if cert.format != FORMAT || cert.version != 1 {
        return Err(CertificateError::Format(format!(
            "format `{}` version {}",
            cert.format, cert.version
        )));
    }
    let net = Net::new(state);
    let f = &state.fabric;
    // Ranks by channel id; u32::MAX where the certificate gives none.
    let mut rank = vec![u32::MAX; net.ports as usize * usize::from(net.vls)];
    for (g, p, vl, r) in &cert.channels {
        let node = parse_guid(g)
            .and_then(|g| f.find_guid(g))
            .ok_or_else(|| CertificateError::UnknownNode(g.clone()))?;
        if let Some(c) = net.channel(node.0, *p, *vl) {
            if *vl < net.vls {
                if let Some(slot) = rank.get_mut(c as usize) {
                    *slot = *r;
                }
            }
        }
    }
    // Label position of each switch index.
    let mut pos = vec![NO_INDEX; net.switches.len()];
    for (j, g) in cert.switches.iter().enumerate() {
        let node = parse_guid(g)
            .and_then(|g| f.find_guid(g))
            .ok_or_else(|| CertificateError::UnknownNode(g.clone()))?;
        let k = net.switch_of(node.0);
        if let Some(slot) = pos.get_mut(k as usize) {
            *slot = j as u32;
        }
    }
    let (sources, dests) = net.endpoints(cert.scope);
    let by_lid: BTreeMap<u16, &Labels> = cert.destinations.iter().map(|l| (l.lid, l)).collect();
    if by_lid.len() != dests.len() || dests.iter().any(|d| !by_lid.contains_key(&d.lid.0)) {
        return Err(CertificateError::Destinations {
            found: by_lid.len(),
            required: dests.len(),
        });
    }
    let attach = net.attach(&sources);
    let results: Vec<Result<(u64, u64), CertificateError>> = dests
        .par_iter()
        .map_init(
            || vec![Vec::new(); net.switches.len()],
            |memo, d| {
                let labels = by_lid
                    .get(&d.lid.0)
                    .map(|l| l.labels.as_slice())
                    .unwrap_or(&[]);
                check_dest(&net, &sources, &attach, memo, *d, labels, &pos, &rank)
            },
        )
        .collect();
    let mut summary = CheckSummary {
        destinations: dests.len() as u64,
        routes: 0,
        states: 0,
    };
    for r in results {
        let (routes, states) = r?;
        summary.routes += routes;
        summary.states += states;
    }
    Ok(summary)
}

/// Per switch and output port: (SLs, the states the attached end nodes' traffic leaves in).
type Memo = Vec<Vec<Option<(u16, Vec<(u8, u16)>)>>>;

/// The SLs of a mask, lowest first.
fn bits(mut m: u16) -> impl Iterator<Item = weft_fabric::Sl> {
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let b = m.trailing_zeros() as u8;
        m &= m - 1;
        Some(weft_fabric::Sl(b))
    })
}

#[allow(clippy::too_many_arguments)]
fn check_dest(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    memo: &mut Memo,
    d: Dest,
    labels: &[u16],
    pos: &[u32],
    rank: &[u32],
) -> Result<(u64, u64), CertificateError> {
    let name = |n: u32| net.node_ref(n).name;
    let label_err = |n: u32, problem: String| CertificateError::Label {
        lid: d.lid.0,
        node: name(n),
        problem,
    };
    let s_count = net.switches.len();
    let label = |k: u32| -> u16 {
        pos.get(k as usize)
            .and_then(|&j| labels.get(j as usize))
            .copied()
            .unwrap_or(NO_LABEL)
    };
    // Next hops, and labels strictly decreasing along them.
    let mut step = Vec::with_capacity(s_count);
    let mut max_label = 0u16;
    for (k, &x) in net.switches.iter().enumerate() {
        let st = net.switch_step(x, d);
        let l = label(k as u32);
        if l != NO_LABEL && net.alive(x) {
            max_label = max_label.max(l);
            match st {
                Step::Arrive | Step::Out { last: true, .. } => {}
                Step::Out { to, .. } => {
                    let kt = net.switch_of(to);
                    let lt = label(kt);
                    if lt == NO_LABEL || lt >= l {
                        return Err(label_err(
                            x,
                            format!("has label {l} but its next hop has label {lt}"),
                        ));
                    }
                }
                Step::Fail(r) => {
                    return Err(label_err(x, format!("has label {l} but {}", r.describe())))
                }
            }
        }
        step.push(st);
    }
    // Route states per switch index.
    let mut states: Vec<Vec<(u8, u8, u16)>> = vec![Vec::new(); s_count];
    let mut routes = 0u64;
    let mut count = 0u64;
    let add = |states: &mut Vec<Vec<(u8, u8, u16)>>, k: u32, i: u8, v: u8, s: u16| {
        if let Some(list) = states.get_mut(k as usize) {
            match list.iter_mut().find(|e| e.0 == i && e.1 == v) {
                Some(e) => e.2 |= s,
                None => list.push((i, v, s)),
            }
        }
    };
    // With destination-only path SLs, end nodes cabled to a switch are checked per switch
    // (what they do there depends only on the switch's output port); the rest one by one.
    let uniform_sls = net.st.path_sl.for_destination(d.lid);
    let mut hca = vec![false; s_count];
    let individual: Vec<Source> = if attach.uniform {
        attach
            .loose
            .iter()
            .filter_map(|&j| sources.get(j as usize).copied())
            .collect()
    } else {
        sources.to_vec()
    };
    if attach.uniform {
        let owner_k = crate::explicit::owner_switch(net, d);
        let per = u64::from(uniform_sls.0.count_ones());
        for (k, list) in attach.by_switch.iter().enumerate() {
            let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
            if senders == 0 || per == 0 {
                continue;
            }
            routes += senders as u64 * per;
            count += senders as u64 * per;
            let x = net.switches.get(k).copied().unwrap_or(0);
            if uniform_sls.0 & !attach.valid_and.get(k).copied().unwrap_or(0) != 0 {
                return Err(label_err(
                    x,
                    "has an end node injecting an SL on a VL that is not operational".to_owned(),
                ));
            }
            if label(k as u32) == NO_LABEL {
                return Err(label_err(x, "is entered but has no label".to_owned()));
            }
            if let Some(h) = hca.get_mut(k) {
                *h = true;
            }
        }
    }
    for &s in &individual {
        if (s.node, s.port) == d.owner {
            continue;
        }
        let sls: SlSet = net.st.path_sl.get(net.port_ref(s.node, s.port), d.lid);
        routes += u64::from(sls.0.count_ones());
        if net.is_switch(s.node) {
            let k = net.switch_of(s.node);
            if label(k) == NO_LABEL {
                return Err(label_err(s.node, "sends here but has no label".to_owned()));
            }
            add(&mut states, k, 0, 0, sls.0);
            continue;
        }
        match net.out_step(s.node, s.port, d) {
            Step::Out {
                to, to_port, last, ..
            } => {
                for sl in sls.iter() {
                    let v = net
                        .injection_vl(s.node, s.port, sl.0)
                        .map_err(|r| label_err(s.node, r.describe()))?;
                    count += 1;
                    if !last {
                        let k = net.switch_of(to);
                        if label(k) == NO_LABEL {
                            return Err(label_err(to, "is entered but has no label".to_owned()));
                        }
                        add(&mut states, k, to_port, v, SlSet::one(sl).0);
                    }
                }
            }
            Step::Fail(r) => return Err(label_err(s.node, r.describe())),
            Step::Arrive => return Err(label_err(s.node, "cannot send".to_owned())),
        }
    }
    // Switches by label, highest first (counting sort: linear).
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); usize::from(max_label) + 1];
    for k in 0..s_count as u32 {
        let l = label(k);
        if l != NO_LABEL && l > 0 {
            if let Some(b) = buckets.get_mut(usize::from(l)) {
                b.push(k);
            }
        }
    }
    for bucket in buckets.iter().rev() {
        for &k in bucket {
            let list = std::mem::take(states.get_mut(k as usize).unwrap_or(&mut Vec::new()));
            let from_hcas = hca.get(k as usize).copied().unwrap_or(false);
            if list.is_empty() && !from_hcas {
                continue;
            }
            let x = net.switches.get(k as usize).copied().unwrap_or(0);
            let Some(&Step::Out {
                out,
                to,
                to_port,
                last,
            }) = step.get(k as usize)
            else {
                continue;
            };
            for (i, vin, sls) in list {
                for sl in bits(sls) {
                    count += 1;
                    let vout = net
                        .switch_vl(x, i, out, sl.0)
                        .map_err(|r| label_err(x, r.describe()))?;
                    if i != 0 {
                        let held = match net.port_link(x, i) {
                            Some(PortLink::Up { node, port }) => net.channel(node, port, vin),
                            _ => None,
                        };
                        let want = net.channel(x, out, vout);
                        let (rh, rw) = (
                            held.and_then(|c| rank.get(c as usize).copied())
                                .unwrap_or(u32::MAX),
                            want.and_then(|c| rank.get(c as usize).copied())
                                .unwrap_or(u32::MAX),
                        );
                        if rh == u32::MAX || rw == u32::MAX || rh >= rw {
                            let cname = |c: Option<u32>| {
                                c.and_then(|c| crate::explicit::channel(net, c))
                                    .map(|c| format!("{}:{} vl {}", c.node.name, c.port, c.vl))
                                    .unwrap_or_default()
                            };
                            return Err(CertificateError::Rank {
                                from: cname(held),
                                to: cname(want),
                                problem: if rh == u32::MAX || rw == u32::MAX {
                                    "uses a channel without a rank".to_owned()
                                } else {
                                    format!("has ranks {rh} ≥ {rw}")
                                },
                            });
                        }
                    }
                    if !last {
                        let kt = net.switch_of(to);
                        add(&mut states, kt, to_port, vout, SlSet::one(sl).0);
                    }
                }
            }
            if from_hcas {
                hca_leaving(
                    net,
                    sources,
                    attach,
                    memo,
                    rank,
                    k,
                    x,
                    out,
                    uniform_sls.0,
                    d,
                )?;
                if !last {
                    let kt = net.switch_of(to);
                    let leaving = memo
                        .get(k as usize)
                        .and_then(|m| m.get(usize::from(out)))
                        .and_then(|e| e.as_ref())
                        .map(|e| e.1.as_slice())
                        .unwrap_or(&[]);
                    for &(v, sl) in leaving {
                        add(&mut states, kt, to_port, v, sl);
                    }
                }
            }
        }
    }
    Ok((routes, count))
}

/// What the end nodes cabled to switch index `k` do there when it sends the destination out
/// on `out`: every dependency's ranks checked once per (switch, port, SLs), memoised.
#[allow(clippy::too_many_arguments)]
fn hca_leaving(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    memo: &mut Memo,
    rank: &[u32],
    k: u32,
    x: u32,
    out: u8,
    sls: u16,
    d: Dest,
) -> Result<(), CertificateError> {
    if let Some(Some((s, _))) = memo.get(k as usize).and_then(|m| m.get(usize::from(out))) {
        if *s == sls {
            return Ok(());
        }
    }
    let mut leaving: Vec<(u8, u16)> = Vec::new();
    for &(i, j) in attach
        .by_switch
        .get(k as usize)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        if i == out {
            continue;
        }
        let Some(src) = sources.get(j as usize) else {
            continue;
        };
        for sl in bits(sls) {
            let vin = net.st.injection_vl(net.port_ref(src.node, src.port), sl).0;
            let vout = net
                .switch_vl(x, i, out, sl.0)
                .map_err(|r| CertificateError::Label {
                    lid: d.lid.0,
                    node: net.node_ref(x).name,
                    problem: r.describe(),
                })?;
            if i == 0 {
                // The switch's own traffic: no channel before this one.
                match leaving.iter_mut().find(|(v, _)| *v == vout) {
                    Some(e) => e.1 |= SlSet::one(sl).0,
                    None => leaving.push((vout, SlSet::one(sl).0)),
                }
                continue;
            }
            let held = net.channel(src.node, src.port, vin);
            let want = net.channel(x, out, vout);
            let get = |c: Option<u32>| {
                c.and_then(|c| rank.get(c as usize).copied())
                    .unwrap_or(u32::MAX)
            };
            let (rh, rw) = (get(held), get(want));
            if rh == u32::MAX || rw == u32::MAX || rh >= rw {
                return Err(CertificateError::Rank {
                    from: format!("{}:{} vl {vin}", net.node_ref(src.node).name, src.port),
                    to: format!("{}:{out} vl {vout}", net.node_ref(x).name),
                    problem: if rh == u32::MAX || rw == u32::MAX {
                        "uses a channel without a rank".to_owned()
                    } else {
                        format!("has ranks {rh} ≥ {rw}")
                    },
                });
            }
            match leaving.iter_mut().find(|(v, _)| *v == vout) {
                Some(e) => e.1 |= SlSet::one(sl).0,
                None => leaving.push((vout, SlSet::one(sl).0)),
            }
        }
    }
    if let Some(m) = memo.get_mut(k as usize) {
        if m.len() <= usize::from(out) {
            m.resize(usize::from(out) + 1, None);
        }
        if let Some(e) = m.get_mut(usize::from(out)) {
            *e = Some((sls, leaving));
        }
    }
    Ok(())
}

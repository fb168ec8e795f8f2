//! The certificate checker. It shares with the explicit engine only the view of the state
//! ([`Net`]: which port a switch forwards a destination to, which VL a hop takes, whether that
//! VL is operational and scheduled); its logic is its own and trusts nothing in the certificate that it
//! does not check.
//!
//! Rules, per required destination `d` (the scope's LIDs, exactly):
//!
//! 1. **Labels.** A switch with a label must be alive and: own `d` and deliver it to port 0
//!    (label 0 — the only place a label may be 0); or send it straight into the port owning
//!    `d` (label ≥ 1); or send it to a switch whose label is strictly lower. Anything else —
//!    an unset entry, a missing, unwired or down port, a misdelivery — refuses the certificate.
//! 2. **Routes.** Every required route (source port, `d`, each SL of its path-SL set) enters
//!    the switches at a labelled switch: a switch source is labelled itself; an end node's
//!    first hop is checked (cable up, injection VL operational and scheduled) and must reach a labelled
//!    switch or the destination's own port.
//! 3. **Hops.** Route states are pushed through the switches in decreasing label order; every
//!    hop's VL is computed from SL2VL and checked operational and scheduled — the last hop into the
//!    destination's port included — and every dependency (held channel → wanted channel) must
//!    have ranks that strictly increase.

use super::{Certificate, CertificateError, NO_LABEL};
use crate::net::{Attach, Dest, Net, PortLink, Source, Step, NO_INDEX};
use crate::{Property, Scope};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weft_fabric::{Fingerprint, Guid, NodeId, SlSet, ValidState};

/// What the certificate must prove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The pairs that must be covered.
    pub scope: Scope,
    /// The properties that must be proven.
    pub properties: Vec<Property>,
}

impl Default for Request {
    fn default() -> Request {
        Request {
            scope: Scope::All,
            properties: Property::ROUTES.to_vec(),
        }
    }
}

/// What an accepted certificate proved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// The pairs covered (the certificate's scope, which covers the one asked for).
    pub scope: Scope,
    /// The properties proven.
    pub properties: Vec<Property>,
    /// Destination LIDs.
    pub destinations: u64,
    /// Of which end-node LIDs.
    pub hca_destinations: u64,
    /// Of which switch LIDs.
    pub switch_destinations: u64,
    /// Routes (source, destination, SL) shown to arrive.
    pub routes: u64,
    /// Route states checked (dependencies included), multicast copies' included.
    pub states: u64,
    /// The traffic the certificate covers.
    pub traffic: crate::Traffic,
}

/// Re-checks `cert` against `state` for `req`, trusting nothing else.
pub fn check(
    state: &ValidState,
    cert: &Certificate,
    req: &Request,
) -> Result<CheckSummary, CertificateError> {
    check_claims(state, cert, req)?;
    let net = Net::new(state);
    let rank = read_ranks(&net, state, cert)?;
    let pos = read_positions(&net, state, cert)?;
    let (sources, dests) = net.endpoints(cert.scope);
    let by_lid = read_labels(cert, &dests)?;
    let mc_states = check_multicast(state, &net, cert, &rank)?;
    let attach = net.attach(&sources);
    let results: Vec<Result<(u64, u64), CertificateError>> = dests
        .par_iter()
        .map_init(
            || Scratch::new(&net),
            |scr, d| {
                let labels = by_lid.get(&d.lid.0).copied().unwrap_or(&[]);
                let ctx = DestCheck {
                    net: &net,
                    sources: &sources,
                    attach: &attach,
                    d: *d,
                    labels,
                    pos: &pos,
                    rank: &rank,
                };
                ctx.check(scr)
            },
        )
        .collect();
    let switch_destinations = dests.iter().filter(|d| net.is_switch(d.owner.0)).count() as u64;
    let mut summary = CheckSummary {
        scope: cert.scope,
        properties: cert.properties.clone(),
        destinations: dests.len() as u64,
        hca_destinations: dests.len() as u64 - switch_destinations,
        switch_destinations,
        routes: 0,
        states: mc_states,
        traffic: crate::Traffic::of(state),
    };
    for r in results {
        let (routes, states) = r?;
        summary.routes += routes;
        summary.states += states;
    }
    Ok(summary)
}

/// What the certificate is for: its format and version, the state it was made for, the scope
/// and the properties it claims, and the two properties recomputed rather than read.
fn check_claims(
    state: &ValidState,
    cert: &Certificate,
    req: &Request,
) -> Result<(), CertificateError> {
    if cert.format != super::FORMAT {
        return Err(CertificateError::Format(format!(
            "`format` is `{}`",
            cert.format
        )));
    }
    if cert.version != super::VERSION {
        return Err(CertificateError::Version(cert.version));
    }
    // What it is for.
    cert.fingerprint
        .compare(&Fingerprint::of(state))
        .map_err(|m| CertificateError::Fingerprint(m.to_string()))?;
    let covers = cert.scope == req.scope || cert.scope == Scope::All;
    if !covers {
        return Err(CertificateError::Scope {
            certificate: cert.scope,
            requested: req.scope,
        });
    }
    // Both sections are always checked; a certificate must claim both.
    for p in Property::ROUTES {
        if !cert.properties.contains(&p) {
            return Err(CertificateError::Property(p));
        }
    }
    for &p in &req.properties {
        if !cert.properties.contains(&p) {
            return Err(CertificateError::Property(p));
        }
    }
    let mut seen_props = cert.properties.clone();
    seen_props.sort();
    seen_props.dedup();
    if seen_props.len() != cert.properties.len() {
        return Err(CertificateError::Duplicate("a property".to_owned()));
    }
    check_recomputed(state, cert)
}

/// `isolated` and `apm_disjoint` have no section: they are recomputed from the state (as
/// cheap as reading a proof of them would be).
fn check_recomputed(state: &ValidState, cert: &Certificate) -> Result<(), CertificateError> {
    // `isolated`: from the P_Key tables.
    if cert.properties.contains(&Property::Isolated) {
        let iso = crate::isolation::check(state, 1);
        let verdict = iso.verdict();
        if verdict != crate::Outcome::Proven {
            let why = match (&verdict, iso.breaches.first()) {
                (_, Some(b)) => b.describe(),
                (crate::Outcome::Unknown(r), None) => r.clone(),
                _ => "the P_Key tables do not match the declared partitions".to_owned(),
            };
            return Err(CertificateError::Isolation(why));
        }
    }
    // `apm_disjoint`: two walks per pair of a source switch and a destination port.
    if cert.properties.contains(&Property::ApmDisjoint) {
        let apm = crate::apm::check(state, 1);
        if apm.outcome != crate::Outcome::Proven {
            let why = match (&apm.outcome, apm.shared.first()) {
                (_, Some(s)) => s.describe(),
                (crate::Outcome::Unknown(r), None) => r.clone(),
                _ => "some pair's paths share a cable".to_owned(),
            };
            return Err(CertificateError::Apm(why));
        }
    }
    Ok(())
}

/// The node a certificate names by its GUID.
fn node_of(state: &ValidState, g: &str) -> Result<NodeId, CertificateError> {
    g.parse::<Guid>()
        .ok()
        .and_then(|g| state.fabric.find_guid(g))
        .ok_or_else(|| {
            CertificateError::Node(format!("node `{g}`, which the fabric does not have"))
        })
}

/// The deadlock-freedom section's ranks by channel id; `u32::MAX` where the certificate gives
/// none.
fn read_ranks(
    net: &Net<'_>,
    state: &ValidState,
    cert: &Certificate,
) -> Result<Vec<u32>, CertificateError> {
    let mut rank = vec![u32::MAX; net.ports as usize * usize::from(net.vls)];
    for (g, p, vl, r) in &cert.deadlock_free.channels {
        let node = node_of(state, g)?;
        if *r == u32::MAX {
            return Err(CertificateError::Rank {
                from: format!("{g}:{p} vl {vl}"),
                to: String::new(),
                problem: "has rank 4294967295, which means none".to_owned(),
            });
        }
        let Some(c) = net.channel(node.0, *p, *vl).filter(|_| *vl < net.vls) else {
            // A channel no valid hop can use: no route needs its rank.
            continue;
        };
        if let Some(slot) = rank.get_mut(c as usize) {
            if *slot != u32::MAX {
                return Err(CertificateError::Duplicate(format!(
                    "the rank of channel `{g}` port {p} VL {vl}"
                )));
            }
            *slot = *r;
        }
    }
    Ok(rank)
}

/// The connectivity section's label position of each switch index; `NO_INDEX` where the
/// certificate names none.
fn read_positions(
    net: &Net<'_>,
    state: &ValidState,
    cert: &Certificate,
) -> Result<Vec<u32>, CertificateError> {
    let mut pos = vec![NO_INDEX; net.switches.len()];
    for (j, g) in cert.connected.switches.iter().enumerate() {
        let node = node_of(state, g)?;
        let k = net.switch_of(node.0);
        let Some(slot) = pos.get_mut(k as usize) else {
            return Err(CertificateError::Node(format!(
                "`{}` ({g}) as a switch, but it is not one",
                state.fabric.node(node).name()
            )));
        };
        if *slot != NO_INDEX {
            return Err(CertificateError::Duplicate(format!("switch `{g}`")));
        }
        *slot = j as u32;
    }
    Ok(pos)
}

/// The connectivity section's labels by destination LID, which must be exactly `dests`.
fn read_labels<'c>(
    cert: &'c Certificate,
    dests: &[Dest],
) -> Result<BTreeMap<u16, &'c [u16]>, CertificateError> {
    let mut by_lid: BTreeMap<u16, &[u16]> = BTreeMap::new();
    for l in &cert.connected.destinations {
        if l.labels.len() != cert.connected.switches.len() {
            return Err(CertificateError::Label {
                lid: l.lid,
                node: String::new(),
                problem: format!(
                    "has {} labels for {} switches",
                    l.labels.len(),
                    cert.connected.switches.len()
                ),
            });
        }
        if by_lid.insert(l.lid, l.labels.as_slice()).is_some() {
            return Err(CertificateError::Duplicate(format!(
                "destination LID {}",
                l.lid
            )));
        }
    }
    if by_lid.len() != dests.len() || dests.iter().any(|d| !by_lid.contains_key(&d.lid.0)) {
        let required: std::collections::BTreeSet<u16> = dests.iter().map(|d| d.lid.0).collect();
        let example = required
            .iter()
            .find(|l| !by_lid.contains_key(l))
            .map(|l| format!("LID {l} is missing"))
            .or_else(|| {
                by_lid
                    .keys()
                    .find(|l| !required.contains(l))
                    .map(|l| format!("LID {l} is not a required destination"))
            });
        return Err(CertificateError::Destinations {
            found: by_lid.len(),
            required: dests.len(),
            example,
        });
    }
    Ok(by_lid)
}

/// Per-thread buffers of the per-destination pass, reused from one destination to the next
/// (the checker allocates per thread, not per destination).
struct Scratch {
    /// Each switch's next hop toward the destination.
    step: Vec<Step>,
    states: States,
    /// Switches with end nodes that send to the destination from there.
    hca: Vec<bool>,
    /// Per switch index: the SLs its end nodes send toward the current destination.
    group_sls: Vec<u16>,
    /// Switch indices by label.
    buckets: Vec<Vec<u32>>,
    /// End-node sources checked one by one.
    individual: Vec<Source>,
    /// Per directed port (switch, output port): the SLs, and the (VL, SLs) the traffic of the
    /// switch's end nodes leaves on. It depends only on the switch, the port and the SLs, so
    /// it holds across destinations.
    memo: Vec<Option<Leaving>>,
}

/// The SLs of a switch's end nodes, and the (VL, SLs) their traffic leaves an output port on.
type Leaving = (u16, Vec<(u8, u16)>);

/// Route states per switch index: (input port, input VL, SLs), one entry per (port, VL).
struct States {
    lists: Vec<Vec<(u8, u8, u16)>>,
    /// Position of (switch, input port, VL) in its list; `u32::MAX` when absent.
    slot: Vec<u32>,
    slot_keys: Vec<u32>,
    touched: Vec<u32>,
}

impl Scratch {
    fn new(net: &Net<'_>) -> Scratch {
        let s = net.switches.len();
        Scratch {
            step: Vec::with_capacity(s),
            states: States {
                lists: vec![Vec::new(); s],
                slot: vec![u32::MAX; (net.ports as usize + s) * usize::from(net.vls)],
                slot_keys: Vec::new(),
                touched: Vec::new(),
            },
            hca: vec![false; s],
            group_sls: vec![0; s],
            buckets: Vec::new(),
            individual: Vec::new(),
            memo: vec![None; net.ports as usize],
        }
    }
}

impl States {
    /// Forgets every state (of the previous destination, finished or refused).
    fn reset(&mut self) {
        for &k in &self.touched {
            if let Some(l) = self.lists.get_mut(k as usize) {
                l.clear();
            }
        }
        for &key in &self.slot_keys {
            if let Some(v) = self.slot.get_mut(key as usize) {
                *v = u32::MAX;
            }
        }
        self.touched.clear();
        self.slot_keys.clear();
    }

    /// Adds SLs `sls` entering switch index `k` on port `i` (0: the switch's own traffic) on
    /// VL `v`.
    fn add(&mut self, net: &Net<'_>, k: u32, i: u8, v: u8, sls: u16) {
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        let base = if i == 0 {
            Some(net.ports + k)
        } else {
            net.dirport(x, i)
        };
        self.add_at(k, i, base.map(|b| b * u32::from(net.vls)), v, sls);
    }

    /// [`States::add`] with the slot base of (switch `k`, port `i`) given: the directed port
    /// times the VL count (`None`: no slot, the list is searched).
    fn add_at(&mut self, k: u32, i: u8, base: Option<u32>, v: u8, sls: u16) {
        let Some(list) = self.lists.get_mut(k as usize) else {
            return;
        };
        if list.is_empty() {
            self.touched.push(k);
        }
        let key = base.map(|b| b + u32::from(v));
        match key.and_then(|key| self.slot.get_mut(key as usize).map(|s| (key, s))) {
            Some((key, slot)) => {
                match list
                    .get_mut(*slot as usize)
                    .filter(|e| e.0 == i && e.1 == v)
                {
                    Some(e) => e.2 |= sls,
                    None => {
                        *slot = list.len() as u32;
                        self.slot_keys.push(key);
                        list.push((i, v, sls));
                    }
                }
            }
            None => match list.iter_mut().find(|e| e.0 == i && e.1 == v) {
                Some(e) => e.2 |= sls,
                None => list.push((i, v, sls)),
            },
        }
    }
}

/// The SLs of a mask, lowest first.
fn bits(mut m: u16) -> impl Iterator<Item = u8> {
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let b = m.trailing_zeros() as u8;
        m &= m - 1;
        Some(b)
    })
}

fn channel_name(net: &Net<'_>, c: Option<u32>) -> String {
    c.and_then(|c| crate::explicit::channel(net, c))
        .map(|c| format!("{}:{} vl {}", c.node.name, c.port, c.vl))
        .unwrap_or_else(|| "(no channel)".to_owned())
}

/// The multicast section: the certificate covers exactly the state's groups, every
/// dependency of their copies climbs in rank, and every tree delivers each sender's packets
/// to every other receiver once. Returns the route states checked.
fn check_multicast(
    state: &ValidState,
    net: &Net<'_>,
    cert: &Certificate,
    rank: &[u32],
) -> Result<u64, CertificateError> {
    let flows = crate::multicast::flows(state);
    let mlids: Vec<u16> = flows.iter().map(|f| f.mlid.get()).collect();
    let Some(cov) = &cert.multicast else {
        if flows.is_empty() {
            return Ok(0);
        }
        return Err(CertificateError::Multicast(format!(
            "the state has {} multicast group(s) and the certificate covers unicast only",
            flows.len()
        )));
    };
    if cov.groups != mlids {
        let show = |v: &[u16]| {
            v.iter()
                .map(|m| format!("{m:#06x}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(CertificateError::Multicast(format!(
            "it covers the groups [{}], the state has [{}]",
            show(&cov.groups),
            show(&mlids)
        )));
    }
    let mfts = crate::multicast::mft_index(state);
    let mut states = 0u64;
    for f in &flows {
        let mut bad: Option<CertificateError> = None;
        let mut ranked = |x: u32, i, vin, o, vout| {
            if bad.is_some() {
                return;
            }
            let held = match net.port_link(x, i) {
                Some(PortLink::Up { node, port }) => net.channel(node, port, vin),
                _ => None,
            };
            if let Err(e) = ranks_increase(net, rank, held, net.channel(x, o, vout)) {
                bad = Some(e);
            }
        };
        let (st, _) = crate::multicast::states(net, &mfts, f, &mut ranked);
        // The injectors' copies too: their dependencies are in the proof.
        crate::multicast::injected(net, &mfts, f, &st, &mut ranked);
        if let Some(e) = bad {
            return Err(e);
        }
        states += st.len() as u64;
    }
    // Delivery is re-decided when the certificate claims it; the ranks above cover the
    // copies' dependencies either way (deadlock freedom is of unicast and multicast).
    if !cert.properties.contains(&Property::MulticastConnected) {
        return Ok(states);
    }
    let deps = crate::channels::DepSet::new(net);
    let found = crate::multicast::check(net, state, &deps, 1);
    if let Some(first) = found.failures.first() {
        return Err(CertificateError::Multicast(format!(
            "group {:#06x}: {} ({} pair(s))",
            first.mlid,
            first.problem.describe(),
            first.pairs
        )));
    }
    if found.pairs != cov.pairs {
        return Err(CertificateError::Multicast(format!(
            "it claims {} (sender, receiver) pairs, the state's groups have {}",
            cov.pairs, found.pairs
        )));
    }
    Ok(states)
}

/// Checks that the ranks of `held` → `want` strictly increase.
fn ranks_increase(
    net: &Net<'_>,
    rank: &[u32],
    held: Option<u32>,
    want: Option<u32>,
) -> Result<(), CertificateError> {
    let get = |c: Option<u32>| {
        c.and_then(|c| rank.get(c as usize).copied())
            .unwrap_or(u32::MAX)
    };
    let (rh, rw) = (get(held), get(want));
    if rh == u32::MAX || rw == u32::MAX || rh >= rw {
        return Err(CertificateError::Rank {
            from: channel_name(net, held),
            to: channel_name(net, want),
            problem: if rh == u32::MAX || rw == u32::MAX {
                "uses a channel without a rank".to_owned()
            } else {
                format!("has ranks {rh} ≥ {rw}")
            },
        });
    }
    Ok(())
}

/// One destination's check: what it needs besides the per-thread buffers.
struct DestCheck<'a, 'n> {
    net: &'a Net<'n>,
    sources: &'a [Source],
    attach: &'a Attach,
    d: Dest,
    /// The certificate's labels for `d`, by label position.
    labels: &'a [u16],
    /// Label position of each switch index.
    pos: &'a [u32],
    /// Ranks by channel id.
    rank: &'a [u32],
}

impl DestCheck<'_, '_> {
    /// A refusal of `d`'s labels at node `n`.
    fn label_err(&self, n: u32, problem: String) -> CertificateError {
        CertificateError::Label {
            lid: self.d.lid.0,
            node: self.net.node_ref(n).name,
            problem,
        }
    }

    /// Switch index `k`'s label for `d`, `NO_LABEL` when it has none.
    fn label(&self, k: u32) -> u16 {
        self.pos
            .get(k as usize)
            .and_then(|&j| self.labels.get(j as usize))
            .copied()
            .unwrap_or(NO_LABEL)
    }

    /// Checks the three rules for `d`; returns (routes, route states) checked.
    fn check(&self, scr: &mut Scratch) -> Result<(u64, u64), CertificateError> {
        scr.states.reset();
        scr.hca.iter_mut().for_each(|h| *h = false);
        let max_label = self.check_labels(scr)?;
        let (routes, entered) = self.enter(scr)?;
        let pushed = self.push_hops(scr, max_label)?;
        Ok((routes, entered + pushed))
    }

    /// Rule 1, labels: 0 only where the switch owns and delivers `d`; otherwise the next hop
    /// is the destination's port, or a switch with a strictly lower label. Fills `scr.step`;
    /// returns the highest label.
    fn check_labels(&self, scr: &mut Scratch) -> Result<u16, CertificateError> {
        let net = self.net;
        scr.step.clear();
        let mut max_label = 0u16;
        for (k, &x) in net.switches.iter().enumerate() {
            let st = net.switch_step(x, self.d);
            let l = self.label(k as u32);
            if l != NO_LABEL {
                if !net.alive(x) {
                    return Err(self.label_err(x, format!("has label {l} but is down")));
                }
                max_label = max_label.max(l);
                self.check_label(x, l, &st)?;
            }
            scr.step.push(st);
        }
        Ok(max_label)
    }

    /// Rule 1 at switch `x`, alive with label `l` and next step `st`.
    fn check_label(&self, x: u32, l: u16, st: &Step) -> Result<(), CertificateError> {
        match *st {
            Step::Arrive if l == 0 => {}
            Step::Arrive => {
                return Err(self.label_err(
                    x,
                    format!("owns the destination, so its label must be 0, not {l}"),
                ))
            }
            _ if l == 0 => {
                return Err(
                    self.label_err(x, "has label 0 but does not own the destination".to_owned())
                )
            }
            Step::Out { last: true, .. } => {}
            Step::Out { to, .. } => {
                let lt = self.label(self.net.switch_of(to));
                if lt == NO_LABEL || lt >= l {
                    return Err(self.label_err(
                        x,
                        format!(
                            "has label {l} but its next hop `{}` has {}",
                            self.net.node_ref(to).name,
                            if lt == NO_LABEL {
                                "none".to_owned()
                            } else {
                                format!("label {lt}")
                            }
                        ),
                    ));
                }
            }
            Step::Fail(ref r) => {
                return Err(self.label_err(x, format!("has label {l} but {}", r.describe())))
            }
        }
        Ok(())
    }

    /// Rule 2, routes: where every required route enters the switches. Returns (routes,
    /// route states checked).
    fn enter(&self, scr: &mut Scratch) -> Result<(u64, u64), CertificateError> {
        let (mut routes, mut count) = (0u64, 0u64);
        // With destination-only path SLs, end nodes cabled to a switch are checked per switch
        // (what they do there depends only on the switch's output port); the rest one by one.
        scr.individual.clear();
        if self.attach.grouped {
            scr.individual.extend(
                self.attach
                    .loose
                    .iter()
                    .filter_map(|&j| self.sources.get(j as usize).copied()),
            );
            self.enter_grouped(scr, &mut routes, &mut count)?;
        } else {
            scr.individual.extend_from_slice(self.sources);
        }
        let individual = std::mem::take(&mut scr.individual);
        let entered = self.enter_individual(scr, &individual, &mut routes, &mut count);
        scr.individual = individual;
        entered?;
        Ok((routes, count))
    }

    /// Rule 2 for end nodes grouped by the switch they are cabled to, and for switch sources.
    fn enter_grouped(
        &self,
        scr: &mut Scratch,
        routes: &mut u64,
        count: &mut u64,
    ) -> Result<(), CertificateError> {
        let (net, attach, d) = (self.net, self.attach, self.d);
        let uniform_sls = net.st.path_sl.for_destination(d.lid);
        for (k, list) in attach.by_switch.iter().enumerate() {
            // Per source switch when the SLs depend on it.
            let sls = if attach.uniform {
                uniform_sls.0
            } else {
                net.group_sls(k as u32, d.lid)
            };
            if let Some(g) = scr.group_sls.get_mut(k) {
                *g = sls;
            }
            let per = u64::from(sls.count_ones());
            // The end nodes cabled here, without the destination's own port.
            let senders = list
                .iter()
                .filter(|&&(i, j)| {
                    i != 0
                        && self
                            .sources
                            .get(j as usize)
                            .is_some_and(|s| (s.node, s.port) != d.owner)
                })
                .count();
            if senders == 0 || per == 0 {
                continue;
            }
            *routes += senders as u64 * per;
            *count += senders as u64 * per;
            let x = net.switches.get(k).copied().unwrap_or(0);
            if sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0 {
                return Err(self.label_err(
                    x,
                    "has an end node injecting an SL on a VL that is not operational or not scheduled".to_owned(),
                ));
            }
            if self.label(k as u32) == NO_LABEL {
                return Err(self.label_err(x, "is entered but has no label".to_owned()));
            }
            if let Some(h) = scr.hca.get_mut(k) {
                *h = true;
            }
        }
        // Switch sources (port 0) one by one.
        for &j in &attach.switch_sources {
            if let Some(&s) = self.sources.get(j as usize) {
                if (s.node, s.port) == d.owner {
                    continue;
                }
                let sls = net.path_sls(s.node, s.port, d.lid);
                *routes += u64::from(sls.0.count_ones());
                let k = net.switch_of(s.node);
                if self.label(k) == NO_LABEL {
                    return Err(self.label_err(s.node, "sends here but has no label".to_owned()));
                }
                scr.states.add(net, k, 0, 0, sls.0);
            }
        }
        Ok(())
    }

    /// Rule 2 for the sources checked one by one: a switch source is labelled itself; an end
    /// node's first hop is checked.
    fn enter_individual(
        &self,
        scr: &mut Scratch,
        individual: &[Source],
        routes: &mut u64,
        count: &mut u64,
    ) -> Result<(), CertificateError> {
        let (net, d) = (self.net, self.d);
        for &s in individual {
            if (s.node, s.port) == d.owner {
                continue;
            }
            let sls: SlSet = net.path_sls(s.node, s.port, d.lid);
            *routes += u64::from(sls.0.count_ones());
            if net.is_switch(s.node) {
                let k = net.switch_of(s.node);
                if self.label(k) == NO_LABEL {
                    return Err(self.label_err(s.node, "sends here but has no label".to_owned()));
                }
                scr.states.add(net, k, 0, 0, sls.0);
                continue;
            }
            match net.out_step(s.node, s.port, d) {
                Step::Out {
                    to, to_port, last, ..
                } => {
                    for sl in bits(sls.0) {
                        let v = net
                            .injection_vl(s.node, s.port, sl)
                            .map_err(|r| self.label_err(s.node, r.describe()))?;
                        *count += 1;
                        if !last {
                            let k = net.switch_of(to);
                            if self.label(k) == NO_LABEL {
                                return Err(
                                    self.label_err(to, "is entered but has no label".to_owned())
                                );
                            }
                            scr.states.add(net, k, to_port, v, 1 << sl);
                        }
                    }
                }
                Step::Fail(r) => return Err(self.label_err(s.node, r.describe())),
                Step::Arrive => return Err(self.label_err(s.node, "cannot send".to_owned())),
            }
        }
        Ok(())
    }

    /// Rule 3, hops: switches by label, highest first (counting sort: linear). Label 0 is the
    /// owner: a state reaching it is delivered to port 0, with no further hop. Returns the
    /// route states checked.
    fn push_hops(&self, scr: &mut Scratch, max_label: u16) -> Result<u64, CertificateError> {
        let buckets = &mut scr.buckets;
        buckets.iter_mut().for_each(Vec::clear);
        if buckets.len() <= usize::from(max_label) {
            buckets.resize(usize::from(max_label) + 1, Vec::new());
        }
        for k in 0..self.net.switches.len() as u32 {
            let l = self.label(k);
            if l != NO_LABEL && l > 0 {
                if let Some(b) = buckets.get_mut(usize::from(l)) {
                    b.push(k);
                }
            }
        }
        let mut count = 0u64;
        for l in (1..=usize::from(max_label)).rev() {
            let n = scr.buckets.get(l).map_or(0, Vec::len);
            for b in 0..n {
                let Some(k) = scr.buckets.get(l).and_then(|v| v.get(b)).copied() else {
                    continue;
                };
                count += self.push_switch(scr, k)?;
            }
        }
        Ok(count)
    }

    /// Rule 3 at switch index `k`: every state entering it takes its next hop (VL computed
    /// and checked, ranks increasing), and so does the traffic of its end nodes. Returns the
    /// route states checked.
    fn push_switch(&self, scr: &mut Scratch, k: u32) -> Result<u64, CertificateError> {
        let (net, rank) = (self.net, self.rank);
        let list = std::mem::take(
            scr.states
                .lists
                .get_mut(k as usize)
                .unwrap_or(&mut Vec::new()),
        );
        let from_hcas = scr.hca.get(k as usize).copied().unwrap_or(false);
        if list.is_empty() && !from_hcas {
            return Ok(0);
        }
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        // Rule 1 made every labelled switch with label > 0 an `Out`.
        let Some(&Step::Out {
            out,
            to,
            to_port,
            last,
        }) = scr.step.get(k as usize)
        else {
            return Err(self.label_err(x, "has a label but no next hop".to_owned()));
        };
        // Rule 1: the next switch's label is lower, so nothing enters `k` after this.
        let kt = net.switch_of(to);
        let vls = u32::from(net.vls);
        // Per switch, not per state: the output port, and where states enter the next
        // switch.
        let out_port = net.dirport(x, out);
        let next = if last {
            None
        } else {
            net.dirport(to, to_port).map(|b| b * vls)
        };
        let mut count = 0u64;
        for &(i, vin, sls) in &list {
            // The channel the state holds: the input link's sending side.
            let held = match (i, net.port_link(x, i)) {
                (0, _) => None,
                (_, Some(PortLink::Up { node, port })) => net.dirport(node, port),
                (_, _) => {
                    return Err(
                        self.label_err(x, format!("is entered on port {i}, which is not up"))
                    )
                }
            };
            for sl in bits(sls) {
                count += 1;
                let vout = net
                    .switch_vl(x, i, out, sl)
                    .map_err(|r| self.label_err(x, r.describe()))?;
                if i != 0 {
                    ranks_increase(
                        net,
                        rank,
                        held.map(|h| h * vls + u32::from(vin)),
                        out_port.map(|o| o * vls + u32::from(vout)),
                    )?;
                }
                if !last {
                    scr.states.add_at(kt, to_port, next, vout, 1 << sl);
                }
            }
        }
        // Keep the list's memory for the next destination.
        let mut list = list;
        list.clear();
        if let Some(slot) = scr.states.lists.get_mut(k as usize) {
            *slot = list;
        }
        if from_hcas {
            let leaving = hca_leaving(
                net,
                self.sources,
                self.attach,
                &mut scr.memo,
                rank,
                x,
                out,
                scr.group_sls.get(k as usize).copied().unwrap_or(0),
                self.d,
            )?;
            if !last {
                for &(v, sl) in leaving {
                    scr.states.add_at(kt, to_port, next, v, sl);
                }
            }
        }
        Ok(count)
    }
}

/// What the end nodes cabled to switch `x` do there when it sends the destination out on
/// `out`: every hop's VL and every dependency's ranks checked once per (switch, port, SLs),
/// memoised; returns the (VL, SLs) their traffic leaves on.
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
fn hca_leaving<'m>(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    memo: &'m mut [Option<Leaving>],
    rank: &[u32],
    x: u32,
    out: u8,
    sls: u16,
    d: Dest,
) -> Result<&'m [(u8, u16)], CertificateError> {
    let Some(entry) = net.dirport(x, out).and_then(|i| memo.get_mut(i as usize)) else {
        return Err(CertificateError::Label {
            lid: d.lid.0,
            node: net.node_ref(x).name,
            problem: format!("forwards to port {out}, which does not exist"),
        });
    };
    if entry.as_ref().is_some_and(|(s, _)| *s == sls) {
        return Ok(entry.as_ref().map_or(&[], |(_, l)| l.as_slice()));
    }
    let k = net.switch_of(x);
    let mut leaving: Vec<(u8, u16)> = Vec::new();
    for &(i, j) in attach
        .by_switch
        .get(k as usize)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        // The switch's own traffic is checked as a switch source. An end node on the output
        // port is the destination itself (rule 1: a labelled switch next to the destination's
        // port sends it there). Nothing here depends on which destination this is, so the
        // memo holds across destinations.
        if i == 0 || i == out {
            continue;
        }
        let Some(src) = sources.get(j as usize) else {
            continue;
        };
        for sl in bits(sls) {
            let vin = attach
                .inj
                .get(j as usize)
                .and_then(|t| t.get(usize::from(sl)))
                .copied()
                .unwrap_or(0);
            let vout = net
                .switch_vl(x, i, out, sl)
                .map_err(|r| CertificateError::Label {
                    lid: d.lid.0,
                    node: net.node_ref(x).name,
                    problem: r.describe(),
                })?;
            ranks_increase(
                net,
                rank,
                net.channel(src.node, src.port, vin),
                net.channel(x, out, vout),
            )?;
            match leaving.iter_mut().find(|(v, _)| *v == vout) {
                Some(e) => e.1 |= 1 << sl,
                None => leaving.push((vout, 1 << sl)),
            }
        }
    }
    *entry = Some((sls, leaving));
    Ok(entry.as_ref().map_or(&[], |(_, l)| l.as_slice()))
}

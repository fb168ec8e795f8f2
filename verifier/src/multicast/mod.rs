//! Multicast traffic in the proof: the flows the state's groups and MFTs make, their channel
//! dependencies (added to the unicast ones, so `deadlock_free` covers the union), and the
//! `multicast_connected` property.
//!
//! Semantics (also in `docs/verify.md`): a multicast packet of group `g` (MLID `m`, SL `s`)
//! sent by member port `h.p` enters its switch `x` on port `i` on the VL `h` injects `s` on;
//! switch `x` copies it to every port `o ≠ i` of `MFT_x[m]`, on VL `SL2VL_x[i][o][s]`, each
//! copy creating the dependency `(i, VL in) → (o, VL out)` like a unicast hop; port 0 of the
//! mask delivers to the switch itself. A copy leaving on a port whose link is not up is
//! dropped (no dependency); a copy on a VL the port cannot send is dropped too, and counts as
//! a failed hop.
//!
//! * **Flows.** Every group of the state, its members sending (any join state) and its full
//!   and non-members receiving ([`JoinState::receives`]). An MLID some MFT programs that no
//!   group of the state names is a flow too, with its members *inferred* from the tables (an
//!   end port, or a switch's port 0, whose switch's mask for that MLID has its port) and SL 0
//!   (OpenSM's IPoIB default); the report counts such groups apart.
//! * **`multicast_connected`**: every sender's packet reaches every other receiver exactly
//!   once, and no copy comes back to a switch it already passed (a loop in the tree).
//!
//! The dependencies of a flow are the union over its senders, found by one search over route
//! states (switch, input port, input VL): linear in the tree, whatever the number of senders.
//! Delivery is decided per group by structure when the group's live mask links are symmetric
//! (port `o` of `x` in the mask exactly when the far port of `o` is in the far switch's mask)
//! and form a forest: each sender's copies then walk a tree once, reaching exactly the
//! in-mask receivers of its component. Any other group (an asymmetric mask, a cycle, a VL a
//! copy cannot take) is walked sender by sender, which finds its loops, duplicates and
//! missing copies.
//!
//! [`JoinState::receives`]: weft_fabric::JoinState::receives

mod report;

use crate::channels::DepSet;
use crate::net::{Net, PortLink};
use crate::report::{FailureReason, Hop, Route};
pub use report::{McFailure, McProblem, McReport, McStop, Traffic};
use std::collections::BTreeMap;
use weft_fabric::{Lid, Mft, Mlid, PortMask, PortNum, ValidState};

/// One multicast flow: a group's MLID and SL, who sends and who receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Flow {
    pub mlid: Mlid,
    pub sl: u8,
    /// Member ports that send, as (node, port), sorted; port 0 for a switch.
    pub senders: Vec<(u32, u8)>,
    /// Member ports the tree must deliver to, sorted.
    pub receivers: Vec<(u32, u8)>,
    /// End ports that are not senders but whose switch forwards the MLID, sorted: any end
    /// port may send to a multicast LID (membership is the SA's bookkeeping, not a switch's
    /// check), and its switch copies the packet into the tree. Their copies' dependencies are
    /// in the proof of deadlock freedom; delivery is asked of the senders' copies only.
    pub injectors: Vec<(u32, u8)>,
    /// Members inferred from the MFTs (no group of the state names this MLID).
    pub inferred: bool,
}

/// The flows of `state`, in MLID order.
pub(crate) fn flows(state: &weft_fabric::FabricState) -> Vec<Flow> {
    let mc = &state.multicast;
    let mut out: BTreeMap<Mlid, Flow> = BTreeMap::new();
    for g in &mc.groups {
        let mut senders = Vec::new();
        let mut receivers = Vec::new();
        for (r, js) in &g.members {
            let m = (r.node.0, r.port.0);
            senders.push(m);
            if js.receives() {
                receivers.push(m);
            }
        }
        senders.sort_unstable();
        receivers.sort_unstable();
        out.insert(
            g.mlid,
            Flow {
                mlid: g.mlid,
                sl: g.sl.0,
                senders,
                receivers,
                injectors: Vec::new(),
                inferred: false,
            },
        );
    }
    // MLIDs the tables program with no group record: members from the masks.
    let mut inferred: BTreeMap<Mlid, Vec<(u32, u8)>> = BTreeMap::new();
    for (&x, mft) in &mc.mfts {
        for (mlid, mask) in mft.entries() {
            if out.contains_key(&mlid) || mask.is_empty() {
                continue;
            }
            let members = inferred.entry(mlid).or_default();
            for p in mask.iter() {
                if p.0 == 0 {
                    members.push((x.0, 0));
                    continue;
                }
                let at = weft_fabric::PortRef::new(x, p.0);
                if let Some((far, _)) = state.fabric.peer(at) {
                    let node = state.fabric.nodes().get(far.node.index());
                    if node.is_some_and(|n| !n.is_switch()) {
                        members.push((far.node.0, far.port.0));
                    }
                }
            }
        }
    }
    for (mlid, mut members) in inferred {
        members.sort_unstable();
        members.dedup();
        out.insert(
            mlid,
            Flow {
                mlid,
                sl: 0,
                senders: members.clone(),
                receivers: members,
                injectors: Vec::new(),
                inferred: true,
            },
        );
    }
    // Every other end port on a switch that forwards the MLID can inject into the tree.
    for (&x, mft) in &mc.mfts {
        let ports = &state.fabric.node(x).ports;
        for (mlid, mask) in mft.entries() {
            let Some(f) = out.get_mut(&mlid) else {
                continue;
            };
            if mask.is_empty() {
                continue;
            }
            for p in ports {
                let Some((far, _)) = state.fabric.peer(weft_fabric::PortRef::new(x, p.num.0))
                else {
                    continue;
                };
                let end = (far.node.0, far.port.0);
                let is_end = state
                    .fabric
                    .nodes()
                    .get(far.node.index())
                    .is_some_and(|n| !n.is_switch());
                if is_end && f.senders.binary_search(&end).is_err() {
                    f.injectors.push(end);
                }
            }
        }
    }
    for f in out.values_mut() {
        f.injectors.sort_unstable();
        f.injectors.dedup();
    }
    out.into_values().collect()
}

/// Each node's MFT (by node index).
pub(crate) fn mft_index(state: &ValidState) -> Vec<Option<&Mft>> {
    let mut v = vec![None; state.fabric.nodes().len()];
    for (&x, mft) in &state.multicast.mfts {
        if let Some(s) = v.get_mut(x.0 as usize) {
            *s = Some(mft);
        }
    }
    v
}

/// A copy's state: at switch `x`, having entered on port `i` (0: the switch's own) on VL `v`.
type St = (u32, u8, u8);

/// Where a sender's packet first enters the fabric's switches.
enum Entry {
    At(St),
    /// A switch that is not alive, or an end port whose link is not up to a switch: nothing
    /// is sent (and nothing required: the pair is not live).
    Offline,
    /// The sender cannot inject the SL.
    Refused(FailureReason),
}

fn entry(net: &Net<'_>, s: (u32, u8), sl: u8) -> Entry {
    let (h, p) = s;
    if !net.alive(h) {
        return Entry::Offline;
    }
    if net.is_switch(h) {
        return Entry::At((h, 0, 0));
    }
    match net.port_link(h, p) {
        Some(PortLink::Up { node, port }) if net.is_switch(node) => {
            match net.injection_vl(h, p, sl) {
                Ok(v) => Entry::At((node, port, v)),
                Err(r) => Entry::Refused(r),
            }
        }
        _ => Entry::Offline,
    }
}

/// One copy leaving switch `x` on mask port `o`.
enum Copy {
    /// Delivered to the switch itself (port 0) or to the end port `(node, port)`.
    Deliver(u32, u8),
    /// On to switch `to`, entering on `port` on VL `v`, after the dependency
    /// `(i, vin) → (o, v)` at `x`.
    Forward { to: u32, port: u8, v: u8 },
    /// Not sent: the link is not up (no dependency, nothing lost that could arrive).
    Dark,
    /// Dropped: the port cannot send the VL.
    Drop(FailureReason),
}

fn copy(net: &Net<'_>, (x, i, _): St, o: u8, sl: u8) -> Copy {
    if o == 0 {
        return Copy::Deliver(x, 0);
    }
    let Some(PortLink::Up { node, port }) = net.port_link(x, o) else {
        return Copy::Dark;
    };
    match net.switch_vl(x, i, o, sl) {
        Err(r) => Copy::Drop(r),
        Ok(v) if net.is_switch(node) => Copy::Forward { to: node, port, v },
        Ok(_) => Copy::Deliver(node, port),
    }
}

fn mask_at(mfts: &[Option<&Mft>], x: u32, mlid: Mlid) -> PortMask {
    mfts.get(x as usize)
        .copied()
        .flatten()
        .map_or(PortMask::EMPTY, |m| m.get(mlid))
}

/// The union of a flow's route states, from every sender; calls `dep` on every dependency.
/// Returns the states (sorted) and whether a copy was dropped on a VL it cannot take.
pub(crate) fn states(
    net: &Net<'_>,
    mfts: &[Option<&Mft>],
    f: &Flow,
    dep: impl FnMut(u32, u8, u8, u8, u8),
) -> (Vec<St>, bool) {
    states_from(net, mfts, f, &f.senders, dep)
}

/// Calls `dep` on every dependency of the copies the flow's injectors' packets make (see
/// [`Flow::injectors`]) that the senders' copies, whose route states are `known` (what
/// [`states`] returned), do not already make: from a known state on, a copy goes where the
/// senders' copies went.
pub(crate) fn injected(
    net: &Net<'_>,
    mfts: &[Option<&Mft>],
    f: &Flow,
    known: &[St],
    dep: impl FnMut(u32, u8, u8, u8, u8),
) {
    if !f.injectors.is_empty() {
        let seen: std::collections::HashSet<St> = known.iter().copied().collect();
        states_seen(net, mfts, f, &f.injectors, seen, dep);
    }
}

/// [`states`] from the ports `from`.
fn states_from(
    net: &Net<'_>,
    mfts: &[Option<&Mft>],
    f: &Flow,
    from: &[(u32, u8)],
    dep: impl FnMut(u32, u8, u8, u8, u8),
) -> (Vec<St>, bool) {
    states_seen(net, mfts, f, from, std::collections::HashSet::new(), dep)
}

/// [`states_from`] past the states of `seen` (taken as explored already): the states seen in
/// all, sorted, and whether a copy was dropped.
fn states_seen(
    net: &Net<'_>,
    mfts: &[Option<&Mft>],
    f: &Flow,
    from: &[(u32, u8)],
    mut seen: std::collections::HashSet<St>,
    mut dep: impl FnMut(u32, u8, u8, u8, u8),
) -> (Vec<St>, bool) {
    let mut stack: Vec<St> = Vec::new();
    for &s in from {
        if let Entry::At(st) = entry(net, s, f.sl) {
            if seen.insert(st) {
                stack.push(st);
            }
        }
    }
    let mut dropped = false;
    while let Some(st) = stack.pop() {
        let (x, i, vin) = st;
        for o in mask_at(mfts, x, f.mlid).iter() {
            let o = o.0;
            if o == i && i != 0 {
                continue;
            }
            match copy(net, st, o, f.sl) {
                Copy::Forward { to, port, v } => {
                    if i != 0 {
                        dep(x, i, vin, o, v);
                    }
                    let next = (to, port, v);
                    if seen.insert(next) {
                        stack.push(next);
                    }
                }
                Copy::Drop(_) => dropped = true,
                Copy::Deliver(..) | Copy::Dark => {}
            }
        }
    }
    let mut v: Vec<St> = seen.into_iter().collect();
    v.sort_unstable();
    (v, dropped)
}

/// Failures found so far, by (MLID, problem): counts and the first example.
#[derive(Default)]
struct Acc {
    by: BTreeMap<(u16, McProblem), McFailure>,
    failed: u64,
    looped_or_duplicated: u64,
}

impl Acc {
    fn add(&mut self, net: &Net<'_>, f: &Flow, problem: McProblem, n: u64, ex: Example) {
        if n == 0 {
            return;
        }
        self.failed += n;
        if problem != McProblem::Undelivered {
            self.looped_or_duplicated += n;
        }
        let key = (f.mlid.get(), problem);
        if let Some(p) = self.by.get_mut(&key) {
            p.pairs += n;
            return;
        }
        self.by.insert(
            key,
            McFailure {
                mlid: f.mlid.get(),
                problem,
                pairs: n,
                sender: net.endpoint(ex.sender.0, ex.sender.1),
                receiver: ex.receiver.map(|(n2, p)| net.endpoint(n2, p)),
                loop_at: ex.loop_at.map(|(x, a, b)| (net.node_ref(x), a, b)),
                stop: ex.stop,
            },
        );
    }
}

struct Example {
    sender: (u32, u8),
    receiver: Option<(u32, u8)>,
    loop_at: Option<(u32, u8, u8)>,
    stop: Option<McStop>,
}

/// Records the dependencies of every flow of `state` in `deps` (what [`check`] records,
/// without deciding delivery): the multicast part of the channel dependency graph, which LFT
/// writes do not change.
pub(crate) fn dependencies(net: &Net<'_>, state: &ValidState, deps: &DepSet) {
    let mfts = mft_index(state);
    for f in &flows(state) {
        let mut add = |x: u32, i, vin, o, vout| {
            if let Some(&k) = net.switch_index.get(x as usize) {
                deps.insert(k, i, vin, o, vout);
            }
        };
        let (known, _) = states(net, &mfts, f, &mut add);
        injected(net, &mfts, f, &known, &mut add);
    }
}

/// Checks every flow of `state`: records its dependencies in `deps` and returns what
/// `multicast_connected` found.
pub(crate) fn check(
    net: &Net<'_>,
    state: &ValidState,
    deps: &DepSet,
    max_listed: usize,
) -> McReport {
    let flows = flows(state);
    let mfts = mft_index(state);
    let mut acc = Acc::default();
    let mut pairs = 0u64;
    let mut states_total = 0u64;
    for f in &flows {
        let mut add = |x: u32, i, vin, o, vout| {
            if let Some(&k) = net.switch_index.get(x as usize) {
                deps.insert(k, i, vin, o, vout);
            }
        };
        let (states, dropped) = states(net, &mfts, f, &mut add);
        injected(net, &mfts, f, &states, &mut add);
        states_total += states.len() as u64;
        pairs += required_pairs(net, f);
        let switches: Vec<u32> = {
            let mut s: Vec<u32> = states.iter().map(|s| s.0).collect();
            s.dedup();
            s
        };
        match (!dropped)
            .then(|| forest(net, &mfts, f.mlid, &switches))
            .flatten()
        {
            Some(comp) => by_structure(net, &mfts, f, &comp, &mut acc),
            None => sender_by_sender(net, &mfts, f, &mut acc),
        }
    }
    let failures: Vec<McFailure> = acc.by.into_values().take(max_listed).collect();
    McReport {
        traffic: Traffic {
            multicast_groups: flows.len() as u64,
            inferred_groups: flows.iter().filter(|f| f.inferred).count() as u64,
        },
        pairs,
        states: states_total,
        failed: acc.failed,
        looped_or_duplicated: acc.looped_or_duplicated,
        failures,
    }
}

/// The outcome of `multicast_connected` on what [`check`] found (`None`: the state has no
/// multicast).
pub(crate) fn outcome(mc: Option<&McReport>) -> crate::Outcome {
    match mc {
        None => outcome_of(0, false),
        Some(m) => outcome_of(m.traffic.multicast_groups, m.failed > 0),
    }
}

/// `multicast_connected` from the number of groups, the (sender, receiver) pairs required
/// and whether any failed: the one rule both engines apply. Groups with no pair to deliver
/// (a group of one member, or whose senders are all down) are proven when every live
/// sender's copies were walked and none looped: there is nothing they could fail to
/// deliver, and the renderings say so ("nothing to deliver") rather than count pairs.
pub(crate) fn outcome_of(groups: u64, failed: bool) -> crate::Outcome {
    if groups == 0 {
        crate::Outcome::Unknown(
            "no multicast groups or tables were given: nothing to deliver".to_owned(),
        )
    } else if failed {
        crate::Outcome::Violated
    } else {
        crate::Outcome::Proven
    }
}

/// (Sender, receiver) pairs of a flow whose sender is live.
fn required_pairs(net: &Net<'_>, f: &Flow) -> u64 {
    f.senders
        .iter()
        .filter(|&&s| !matches!(entry(net, s, f.sl), Entry::Offline))
        .map(|&s| wanted(f, s))
        .sum()
}

/// When the live mask links among `switches` are symmetric and form a forest: a component
/// id per switch (by node index; `u32::MAX` for switches not in it).
fn forest(net: &Net<'_>, mfts: &[Option<&Mft>], mlid: Mlid, switches: &[u32]) -> Option<Vec<u32>> {
    let n = net.is_switch.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(parent: &mut [u32], mut a: u32) -> u32 {
        while let Some(&p) = parent.get(a as usize) {
            if p == a {
                break;
            }
            let gp = parent.get(p as usize).copied().unwrap_or(p);
            if let Some(s) = parent.get_mut(a as usize) {
                *s = gp;
            }
            a = gp;
        }
        a
    }
    for &x in switches {
        for o in mask_at(mfts, x, mlid).iter() {
            let Some(PortLink::Up { node: y, port: r }) = net.port_link(x, o.0) else {
                continue;
            };
            if !net.is_switch(y) {
                continue;
            }
            if !mask_at(mfts, y, mlid).contains(PortNum(r)) {
                return None;
            }
            // Each undirected link once: from its lower end (a link to itself is a loop).
            if (x, o.0) > (y, r) {
                continue;
            }
            let (a, b) = (find(&mut parent, x), find(&mut parent, y));
            if a == b {
                return None;
            }
            if let Some(s) = parent.get_mut(a as usize) {
                *s = b;
            }
        }
    }
    let mut comp = vec![u32::MAX; n];
    for &x in switches {
        let r = find(&mut parent, x);
        if let Some(c) = comp.get_mut(x as usize) {
            *c = r;
        }
    }
    Some(comp)
}

/// Where a member is: its switch and the switch port its copies leave on (0: the switch).
fn place(net: &Net<'_>, m: (u32, u8)) -> Option<(u32, u8)> {
    if net.is_switch(m.0) {
        return Some((m.0, 0));
    }
    match net.port_link(m.0, m.1) {
        Some(PortLink::Up { node, port }) if net.is_switch(node) => Some((node, port)),
        _ => None,
    }
}

/// The receivers a sender's packet must reach: every one but itself.
fn wanted(f: &Flow, s: (u32, u8)) -> u64 {
    f.receivers.len() as u64 - u64::from(f.receivers.binary_search(&s).is_ok())
}

/// Where sender `s`'s packet enters the switches; `None` when it sends nothing (offline) or
/// cannot inject the group's SL (every receiver it must reach recorded as undelivered).
fn start(net: &Net<'_>, f: &Flow, s: (u32, u8), acc: &mut Acc) -> Option<St> {
    match entry(net, s, f.sl) {
        Entry::Offline => None,
        Entry::Refused(reason) => {
            acc.add(
                net,
                f,
                McProblem::Undelivered,
                wanted(f, s),
                Example {
                    sender: s,
                    receiver: f.receivers.iter().copied().find(|&r| r != s),
                    loop_at: None,
                    stop: Some(McStop::NotInjected { reason }),
                },
            );
            None
        }
        Entry::At(st) => Some(st),
    }
}

/// Delivery of a flow whose tree is a forest: receiver `r` gets exactly one copy from sender
/// `s` when `r`'s port is in its switch's mask and the switch is in the component of `s`'s.
fn by_structure(net: &Net<'_>, mfts: &[Option<&Mft>], f: &Flow, comp: &[u32], acc: &mut Acc) {
    let comp_of = |x: u32| comp.get(x as usize).copied().unwrap_or(u32::MAX);
    // Receivers that can get a copy: in their switch's mask, by component.
    let mut reachable: BTreeMap<u32, u64> = BTreeMap::new();
    // Per receiver: its node and port, its place (switch, port) and whether it is in the mask.
    type Placed = (u32, u8, Option<(u32, u8)>, bool);
    let mut placed: Vec<Placed> = Vec::new();
    for &r in &f.receivers {
        let at = place(net, r);
        let ok = at.is_some_and(|(y, q)| mask_at(mfts, y, f.mlid).contains(PortNum(q)));
        if let (true, Some((y, _))) = (ok, at) {
            *reachable.entry(comp_of(y)).or_default() += 1;
        }
        placed.push((r.0, r.1, at, ok));
    }
    for &s in &f.senders {
        let Some((x, _, _)) = start(net, f, s, acc) else {
            continue;
        };
        let c = comp_of(x);
        // `placed` is in receiver order: the sender's own entry, if it receives.
        let self_counted = f
            .receivers
            .binary_search(&s)
            .ok()
            .and_then(|k| placed.get(k))
            .is_some_and(|&(_, _, at, ok)| ok && at.is_some_and(|(y, _)| comp_of(y) == c));
        let got = reachable.get(&c).copied().unwrap_or(0) - u64::from(self_counted);
        let want = wanted(f, s);
        if got < want {
            // The first receiver this sender misses, and why.
            let miss = placed.iter().find(|&&(n, p, at, ok)| {
                (n, p) != s && !(ok && at.is_some_and(|(y, _)| comp_of(y) == c))
            });
            let (receiver, stop) = match miss {
                Some(&(n, p, Some((y, q)), false)) => (
                    Some((n, p)),
                    Some(McStop::NotInMask {
                        switch: net.node_ref(y),
                        port: q,
                    }),
                ),
                Some(&(n, p, Some((y, _)), true)) => (
                    Some((n, p)),
                    Some(McStop::NotJoined {
                        switch: net.node_ref(y),
                    }),
                ),
                Some(&(n, p, None, _)) => (Some((n, p)), None),
                None => (None, None),
            };
            acc.add(
                net,
                f,
                McProblem::Undelivered,
                want - got,
                Example {
                    sender: s,
                    receiver,
                    loop_at: None,
                    stop,
                },
            );
        }
    }
}

/// Delivery of a flow walked sender by sender: each sender's copies, switch by switch,
/// counting what reaches each receiver; a copy that comes back to a switch is a loop (it
/// delivers to that switch's receivers again and is followed no further).
fn sender_by_sender(net: &Net<'_>, mfts: &[Option<&Mft>], f: &Flow, acc: &mut Acc) {
    let mut first_in: Vec<Option<u8>> = vec![None; net.is_switch.len()];
    let mut got: BTreeMap<(u32, u8), u32> = BTreeMap::new();
    for &s in &f.senders {
        let Some(start) = start(net, f, s, acc) else {
            continue;
        };
        first_in.iter_mut().for_each(|x| *x = None);
        got.clear();
        let mut looped: Option<(u32, u8, u8)> = None;
        let mut drop: Option<McStop> = None;
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(st) = queue.pop_front() {
            let (x, i, _) = st;
            // A copy back at a switch it passed is a loop: it still delivers to the switch's
            // receivers (again), and is followed no further.
            let again = match first_in.get(x as usize).copied().flatten() {
                Some(first) => {
                    looped.get_or_insert((x, first, i));
                    true
                }
                None => {
                    if let Some(slot) = first_in.get_mut(x as usize) {
                        *slot = Some(i);
                    }
                    false
                }
            };
            for o in mask_at(mfts, x, f.mlid).iter() {
                let o = o.0;
                if o == i && i != 0 {
                    continue;
                }
                match copy(net, st, o, f.sl) {
                    Copy::Deliver(n, p) => *got.entry((n, p)).or_default() += 1,
                    Copy::Forward { .. } if again => {}
                    Copy::Forward { to, port, v } => queue.push_back((to, port, v)),
                    Copy::Dark => {}
                    Copy::Drop(reason) => {
                        drop.get_or_insert(McStop::Dropped {
                            switch: net.node_ref(x),
                            reason,
                        });
                    }
                }
            }
        }
        if let Some(l) = looped {
            acc.add(
                net,
                f,
                McProblem::Loop,
                1,
                Example {
                    sender: s,
                    receiver: None,
                    loop_at: Some(l),
                    stop: None,
                },
            );
        }
        let mut missing = 0u64;
        let mut twice = 0u64;
        let mut first_missing = None;
        let mut first_twice = None;
        for &r in &f.receivers {
            if r == s {
                continue;
            }
            match got.get(&r).copied().unwrap_or(0) {
                0 => {
                    missing += 1;
                    first_missing.get_or_insert(r);
                }
                1 => {}
                _ => {
                    twice += 1;
                    first_twice.get_or_insert(r);
                }
            }
        }
        if let Some(r) = first_missing {
            let stop = drop.clone().or_else(|| {
                place(net, r).map(|(y, q)| {
                    if first_in.get(y as usize).copied().flatten().is_some() {
                        McStop::NotInMask {
                            switch: net.node_ref(y),
                            port: q,
                        }
                    } else {
                        McStop::NotJoined {
                            switch: net.node_ref(y),
                        }
                    }
                })
            });
            acc.add(
                net,
                f,
                McProblem::Undelivered,
                missing,
                Example {
                    sender: s,
                    receiver: Some(r),
                    loop_at: None,
                    stop,
                },
            );
        }
        if let Some(r) = first_twice {
            acc.add(
                net,
                f,
                McProblem::Duplicate,
                twice,
                Example {
                    sender: s,
                    receiver: Some(r),
                    loop_at: None,
                    stop: None,
                },
            );
        }
    }
}

/// A route of one multicast copy that takes the dependency `(x, i, vin) → (o, vout)`: from a
/// sender to `x`, out of `o`, and on to the first receiver (or end of the tree) beyond it.
/// The route's `dlid` is the MLID.
pub(crate) fn witness_route(
    net: &Net<'_>,
    flows: &[Flow],
    mfts: &[Option<&Mft>],
    dep: (u32, u8, u8, u8, u8),
) -> Option<Route> {
    let (x, i, vin, o, vout) = dep;
    for f in flows {
        if !mask_at(mfts, x, f.mlid).contains(PortNum(o)) {
            continue;
        }
        // Breadth-first over states from every sender (then injector), with the state each
        // came from.
        let mut from: BTreeMap<St, Option<(St, u8)>> = BTreeMap::new();
        let mut origin: BTreeMap<St, (u32, u8)> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::new();
        for &s in f.senders.iter().chain(&f.injectors) {
            if let Entry::At(st) = entry(net, s, f.sl) {
                if from.insert(st, None).is_none() {
                    origin.insert(st, s);
                    queue.push_back(st);
                }
            }
        }
        let target = (x, i, vin);
        let mut found = false;
        while let Some(st) = queue.pop_front() {
            if st == target {
                found = true;
                break;
            }
            for p in mask_at(mfts, st.0, f.mlid).iter() {
                if p.0 == st.1 && st.1 != 0 {
                    continue;
                }
                if let Copy::Forward { to, port, v } = copy(net, st, p.0, f.sl) {
                    let next = (to, port, v);
                    if let std::collections::btree_map::Entry::Vacant(e) = from.entry(next) {
                        e.insert(Some((st, p.0)));
                        queue.push_back(next);
                    }
                }
            }
        }
        if !found {
            continue;
        }
        let Copy::Forward { to, port, v } = copy(net, target, o, f.sl) else {
            continue;
        };
        if v != vout {
            continue;
        }
        // Back from the target to its sender.
        let mut path: Vec<(St, Option<u8>)> = vec![(target, Some(o))];
        let mut cur = target;
        let mut guard = 0usize;
        while let Some(Some((prev, out))) = from.get(&cur).copied() {
            path.push((prev, Some(out)));
            cur = prev;
            guard += 1;
            if guard > from.len() {
                break;
            }
        }
        path.reverse();
        let sender = origin.get(&cur).copied()?;
        let mut hops: Vec<Hop> = Vec::new();
        if !net.is_switch(sender.0) {
            hops.push(Hop {
                node: net.node_ref(sender.0),
                in_port: 0,
                out_port: Some(sender.1),
                vl: Some(cur.2),
            });
        }
        for (k, &((sx, si, _), out)) in path.iter().enumerate() {
            let vl = path.get(k + 1).map(|((_, _, nv), _)| *nv).or(Some(vout));
            hops.push(Hop {
                node: net.node_ref(sx),
                in_port: si,
                out_port: out,
                vl,
            });
        }
        // Onward from `to` to the first receiver: follow the first mask port that forwards.
        let mut st = (to, port, v);
        let mut dst = None;
        let mut visited = vec![false; net.is_switch.len()];
        while dst.is_none() {
            if std::mem::replace(visited.get_mut(st.0 as usize)?, true) {
                break;
            }
            let mut next = None;
            for p in mask_at(mfts, st.0, f.mlid).iter() {
                if p.0 == st.1 && st.1 != 0 {
                    continue;
                }
                match copy(net, st, p.0, f.sl) {
                    Copy::Deliver(n, q) => {
                        hops.push(Hop {
                            node: net.node_ref(st.0),
                            in_port: st.1,
                            out_port: Some(p.0),
                            vl: None,
                        });
                        dst = Some((n, q));
                        break;
                    }
                    Copy::Forward { to, port, v } if next.is_none() => {
                        next = Some((p.0, (to, port, v)));
                    }
                    _ => {}
                }
            }
            if dst.is_some() {
                break;
            }
            let (p, n) = next?;
            hops.push(Hop {
                node: net.node_ref(st.0),
                in_port: st.1,
                out_port: Some(p),
                vl: Some(n.2),
            });
            st = n;
        }
        let dst = dst.unwrap_or((to, 0));
        return Some(Route {
            src: net.endpoint(sender.0, sender.1),
            dlid: Lid(f.mlid.get()),
            dst: net.endpoint(dst.0, dst.1),
            sl: f.sl,
            hops,
        });
    }
    None
}

#[cfg(test)]
mod tests;

//! The explicit engine: graph algorithms on per-destination in-trees, in parallel.
//!
//! For each destination LID (in parallel, results collected in LID order):
//!
//! 1. every switch's next hop toward it (LFT, port, link) and a *distance label* (switch hops
//!    to arrival) by chasing next hops with memoisation; switches on or behind a loop or a
//!    failed entry get no label;
//! 2. if every source enters at a labelled switch, the route states (switch, input port,
//!    input VL, SL set) are propagated in decreasing label order — a topological order of the
//!    in-tree — checking every hop's VL and recording every dependency in a shared bitset;
//! 3. otherwise (or when a VL check fails) each route toward that destination is walked one by
//!    one, which records its dependencies and the exact failed routes with witnesses.
//!
//! The dependencies form the channel dependency graph; its strongly connected components are
//! the credit loops (one witness cycle each, with a concrete route per dependency); when it is
//! acyclic, a topological rank per channel and the distance labels form the [`Certificate`](crate::Certificate).

use crate::certificate;
use crate::channels::{self, DepSet, Graph};
use crate::failures;
use crate::net::{Attach, Dest, Net, Source, Step, NO_INDEX};
use crate::report::{
    Channel, CreditLoop, Dependency, FailureReason, Outcome, Report, Stats, Verdict,
};
use crate::{Checker, Options};
use rayon::prelude::*;
use weft_fabric::{SlSet, ValidState, LFT_UNSET};

/// No label: the switch does not reach the destination.
pub(crate) const NO_LABEL: u16 = u16::MAX;

/// The explicit engine as a [`Checker`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Explicit;

impl Checker for Explicit {
    fn name(&self) -> &'static str {
        "explicit"
    }

    fn check(&self, state: &ValidState, opts: &Options) -> Verdict {
        let opts = Options {
            certificate: false,
            max_listed: 0,
            witnesses: 0,
            ..opts.clone()
        };
        verify(state, &opts).verdict
    }
}

struct DestResult {
    routes: u64,
    labels: Option<Vec<u16>>,
    /// Every route arrives, every hop on an operational, scheduled VL (the fast path went through).
    clean: bool,
}

/// What the traffic of a switch's group (its own and its end nodes') does when the switch
/// sends a destination out on one port with one SL set: the states it leaves in.
#[derive(Clone, Copy, Debug, Default)]
struct Memo {
    sls: u16,
    /// 0: not worked out, 1: ok, 2: a VL is not operational or not scheduled.
    status: u8,
    n: u8,
    leave: [(u8, u16); MEMO_LEAVE],
}

/// Destinations handled together: their LFT entries are read switch by switch (a few cache
/// lines per switch) into [`Scratch::columns`] instead of one scattered read per switch and
/// destination.
const BLOCK: usize = 64;

/// The most states a memo entry holds (one per VL the group's traffic leaves on).
const MEMO_LEAVE: usize = 8;

/// Memo entries per output port (a power of two).
const MEMO_WAYS: usize = 8;

/// The memo entry of a port an SL set goes to.
fn memo_way(sls: u16) -> usize {
    (usize::from(sls.wrapping_mul(0x9e37)) >> 8) & (MEMO_WAYS - 1)
}

/// Per-worker scratch space, reused across destinations.
struct Scratch {
    /// For the current block: `columns[j * switches + k]` is switch index `k`'s LFT entry for
    /// the block's `j`th destination ([`LFT_UNSET`] when unset or the switch has no table).
    columns: Vec<u8>,
    step: Vec<Step>,
    label: Vec<u16>,
    mark: Vec<u8>,
    chase: Vec<u32>,
    states: Vec<Vec<(u8, u8, u16)>>,
    touched: Vec<u32>,
    /// Switches whose attached end nodes send toward the current destination.
    hca: Vec<bool>,
    queued: Vec<bool>,
    buckets: Vec<Vec<u32>>,
    /// Per output port (by port index) and [`memo_way`] of an SL set: the group's traffic
    /// there. Valid across destinations.
    memo: Vec<Memo>,
    /// Per output port (by port index), on one VL: the group's dependencies through it are
    /// recorded. Valid across destinations.
    group_done: Vec<bool>,
    /// Per switch index: the SLs its group sends toward the current destination (set where
    /// [`Scratch::hca`] is).
    group_sls: Vec<u16>,
    /// Per switch index: where its last per-switch path SL lookup ended.
    sls_at: Vec<u32>,
    /// Per switch index: the VLs it sends the current destination on ([`one_map_path`]).
    vl_mask: Vec<u16>,
    /// Per output port (by port index): the VLs its group's dependencies through it are
    /// recorded on ([`one_map_path`]). Valid across destinations.
    group_vls: Vec<u16>,
    /// Per (input port or switch, VL): the index of that state in its switch's list.
    slot: Vec<u32>,
    slot_keys: Vec<u32>,
}

impl Scratch {
    fn new(net: &Net<'_>) -> Scratch {
        let s = net.switches.len();
        Scratch {
            columns: vec![LFT_UNSET; s * BLOCK],
            step: vec![Step::Fail(FailureReason::Unset); s],
            label: vec![NO_LABEL; s],
            mark: vec![0; s],
            chase: Vec::new(),
            states: vec![Vec::new(); s],
            touched: Vec::new(),
            hca: vec![false; s],
            group_sls: vec![0; s],
            sls_at: vec![0; s],
            queued: vec![false; s],
            buckets: Vec::new(),
            memo: vec![Memo::default(); net.ports as usize * MEMO_WAYS],
            group_done: vec![false; net.ports as usize],
            vl_mask: vec![0; s],
            group_vls: vec![0; net.ports as usize],
            slot: vec![u32::MAX; (net.ports as usize + s) * usize::from(net.vls)],
            slot_keys: Vec::new(),
        }
    }
}

/// Runs the explicit engine.
pub fn verify(state: &ValidState, opts: &Options) -> Report {
    verify_with(state, opts, true)
}

/// [`verify`], with the one-VL and one-map fast paths allowed or not (the tests compare the
/// two).
fn verify_with(state: &ValidState, opts: &Options, one_vl: bool) -> Report {
    let net = Net::new(state);
    let (sources, dests) = net.endpoints(opts.scope);
    let deps = DepSet::new(&net);
    let mut attach = net.attach(&sources);
    attach.one_vl &= one_vl;
    if !one_vl {
        attach.one_map = None;
    }
    let blocks: Vec<Vec<DestResult>> = dests
        .par_chunks(BLOCK)
        .map_init(
            || Scratch::new(&net),
            |scr, block| {
                fill_columns(&net, block, &mut scr.columns);
                let mut out = Vec::with_capacity(block.len());
                for (j, &d) in block.iter().enumerate() {
                    let r = dest_pass(&net, &sources, &attach, d, j, scr, &deps, opts.certificate);
                    out.push(r);
                }
                out
            },
        )
        .collect();
    let results: Vec<DestResult> = blocks.into_iter().flatten().collect();

    // Destinations where some route fails: every route's fate, counted into patterns (this
    // also records the dependencies of every route toward them, failed or not).
    let failing: Vec<Dest> = results
        .iter()
        .zip(&dests)
        .filter(|(r, _)| !r.clean)
        .map(|(_, d)| *d)
        .collect();
    let keep = opts.max_listed.max(opts.witnesses);
    let acc = if failing.is_empty() {
        failures::Acc::new(&net, sources.len(), keep)
    } else {
        let sh = failures::Shared::new(&net, &sources);
        let chunk = failing
            .len()
            .div_ceil(rayon::current_num_threads().max(1) * 4)
            .max(1);
        let parts: Vec<failures::Acc> = failing
            .par_chunks(chunk)
            .map(|ds| {
                let mut scr = failures::Scratch::new(&net, &sh);
                let mut acc = failures::Acc::new(&net, sources.len(), keep);
                for &d in ds {
                    failures::destination(&net, &sh, &sources, d, &mut scr, &deps, &mut acc);
                }
                acc
            })
            .collect();
        parts.into_iter().fold(
            failures::Acc::new(&net, sources.len(), keep),
            failures::Acc::merge,
        )
    };
    let failed_routes = acc.failed;
    let failures = failures::finish(&net, &sources, acc, opts.max_listed, opts.witnesses);

    let dep_list = deps.each(&net);
    let edges = channels::edges(&net, &dep_list);
    let graph = Graph::new(net.ports as usize * usize::from(net.vls), &edges);
    let sccs = graph.cyclic_sccs();
    let used: u64 = {
        let mut seen = vec![false; graph.len()];
        for &(a, b) in &edges {
            for v in [a, b] {
                if let Some(s) = seen.get_mut(v as usize) {
                    *s = true;
                }
            }
        }
        seen.iter().filter(|&&s| s).count() as u64
    };
    let routes: u64 = results.iter().map(|r| r.routes).sum();
    let credit_loops: Vec<CreditLoop> = sccs
        .iter()
        .take(opts.max_listed)
        .map(|scc| credit_loop(&net, &graph, scc, &sources, &dests))
        .collect();

    // Nothing required: nothing is proven.
    let vacuous = (routes == 0).then(|| crate::no_routes(sources.len(), dests.len(), opts.scope));
    let deadlock_free = match (&vacuous, sccs.is_empty()) {
        (Some(why), _) => Outcome::Unknown(why.clone()),
        (None, true) => Outcome::Proven,
        (None, false) => Outcome::Violated,
    };
    let connected = match (&vacuous, failed_routes) {
        (Some(why), _) => Outcome::Unknown(why.clone()),
        (None, 0) => Outcome::Proven,
        (None, _) => Outcome::Violated,
    };
    let isolation = opts
        .properties
        .contains(&crate::Property::Isolated)
        .then(|| crate::isolation::check(state, opts.max_listed));
    let isolated = isolation.as_ref().map(crate::isolation::Isolation::verdict);
    let apm = opts
        .properties
        .contains(&crate::Property::ApmDisjoint)
        .then(|| crate::apm::check(state, opts.max_listed));
    let apm_disjoint = apm.as_ref().map(|a| a.outcome.clone());
    let proven = deadlock_free == Outcome::Proven
        && connected == Outcome::Proven
        && isolated.as_ref().is_none_or(|o| *o == Outcome::Proven)
        && apm_disjoint.as_ref().is_none_or(|o| *o == Outcome::Proven);
    let certificate = if opts.certificate && proven {
        graph.topo_ranks().map(|ranks| {
            let labels: Vec<(weft_fabric::Lid, Vec<u16>)> = results
                .iter()
                .zip(&dests)
                .map(|(r, d)| (d.lid, r.labels.clone().unwrap_or_default()))
                .collect();
            let mut c = certificate::build(&net, opts.scope, &edges, &ranks, labels);
            if isolated.is_some() {
                c.properties.push(crate::Property::Isolated);
            }
            if apm_disjoint.is_some() {
                c.properties.push(crate::Property::ApmDisjoint);
            }
            c
        })
    } else {
        None
    };
    Report {
        fabric: state.fabric.name.clone(),
        scope: opts.scope,
        properties: opts.properties.clone(),
        verdict: Verdict {
            deadlock_free,
            connected,
            isolated,
            apm_disjoint,
        },
        stats: Stats {
            sources: sources.len() as u64,
            destinations: dests.len() as u64,
            switch_destinations: dests.iter().filter(|d| net.is_switch(d.owner.0)).count() as u64,
            routes,
            channels: used,
            dependencies: edges.len() as u64,
            vls: net.vls,
        },
        credit_loops,
        credit_loops_total: sccs.len() as u64,
        failures,
        failed_routes,
        isolation,
        apm,
        certificate,
    }
}

/// Reads the block's LFT entries switch by switch into `columns` (see [`Scratch::columns`]).
fn fill_columns(net: &Net<'_>, block: &[Dest], columns: &mut [u8]) {
    let s = net.switches.len();
    for (k, &x) in net.switches.iter().enumerate() {
        let ports: &[u8] = net
            .sw
            .get(x as usize)
            .copied()
            .flatten()
            .map_or(&[], |t| t.lft.ports.as_slice());
        for (j, d) in block.iter().enumerate() {
            if let Some(c) = columns.get_mut(j * s + k) {
                *c = ports
                    .get(usize::from(d.lid.0))
                    .copied()
                    .unwrap_or(LFT_UNSET);
            }
        }
    }
}

/// The switch index where the destination's own port enters its switch (the switch itself
/// for a switch's LID): its group must not count the destination as a sender.
pub(crate) fn owner_switch(net: &Net<'_>, d: Dest) -> usize {
    if net.is_switch(d.owner.0) {
        return net.switch_of(d.owner.0) as usize;
    }
    match net.port_link(d.owner.0, d.owner.1) {
        Some(crate::net::PortLink::Up { node, .. }) => net.switch_of(node) as usize,
        _ => usize::MAX,
    }
}

/// The SLs of a mask, lowest first (without testing all 16 bits).
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

fn sls_of(net: &Net<'_>, s: Source, d: Dest) -> SlSet {
    net.path_sls(s.node, s.port, d.lid)
}

fn add_state(net: &Net<'_>, scr: &mut Scratch, k: u32, i: u8, vin: u8, sls: u16) {
    let Some(list) = scr.states.get_mut(k as usize) else {
        return;
    };
    if list.is_empty() {
        scr.touched.push(k);
    }
    let x = net.switches.get(k as usize).copied().unwrap_or(0);
    let base = if i == 0 {
        Some(net.ports + k)
    } else {
        net.dirport(x, i)
    };
    let key = base.map(|b| b * u32::from(net.vls) + u32::from(vin));
    match key.and_then(|key| scr.slot.get(key as usize).copied().map(|v| (key, v))) {
        Some((_, idx)) if idx != u32::MAX => {
            if let Some(e) = list.get_mut(idx as usize) {
                e.2 |= sls;
            }
        }
        Some((key, _)) => {
            if let Some(v) = scr.slot.get_mut(key as usize) {
                *v = list.len() as u32;
            }
            scr.slot_keys.push(key);
            list.push((i, vin, sls));
        }
        None => match list.iter_mut().find(|(a, b, _)| *a == i && *b == vin) {
            Some(e) => e.2 |= sls,
            None => list.push((i, vin, sls)),
        },
    }
}

/// Works out destination `d`, the `j`th of the current block.
#[allow(clippy::too_many_arguments)]
fn dest_pass(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    d: Dest,
    j: usize,
    scr: &mut Scratch,
    deps: &DepSet,
    want_labels: bool,
) -> DestResult {
    let routes: u64 = if attach.uniform {
        let sls = u64::from(net.st.path_sl.for_destination(d.lid).0.count_ones());
        let owner_sends = sources.iter().any(|s| (s.node, s.port) == d.owner);
        (sources.len() as u64 - u64::from(owner_sends)) * sls
    } else if attach.grouped {
        // Each group's SLs toward this destination, once.
        for (k, list) in attach.by_switch.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            if let (Some(g), Some(at)) = (scr.group_sls.get_mut(k), scr.sls_at.get_mut(k)) {
                *g = net.group_sls_at(k as u32, d.lid, at);
            }
        }
        let owner_k = owner_switch(net, d);
        let grouped: u64 = attach
            .by_switch
            .iter()
            .enumerate()
            .filter(|(_, list)| !list.is_empty())
            .map(|(k, list)| {
                let senders = list
                    .iter()
                    .filter(|&&(_, j)| {
                        k != owner_k
                            || sources
                                .get(j as usize)
                                .is_none_or(|s| (s.node, s.port) != d.owner)
                    })
                    .count() as u64;
                senders * u64::from(scr.group_sls.get(k).copied().unwrap_or(0).count_ones())
            })
            .sum();
        let loose: u64 = attach
            .loose
            .iter()
            .filter_map(|&j| sources.get(j as usize))
            .filter(|s| (s.node, s.port) != d.owner)
            .map(|&s| u64::from(sls_of(net, s, d).0.count_ones()))
            .sum();
        grouped + loose
    } else {
        sources
            .iter()
            .filter(|s| (s.node, s.port) != d.owner)
            .map(|&s| u64::from(sls_of(net, s, d).0.count_ones()))
            .sum()
    };
    // 1. next hops and labels.
    let s = net.switches.len();
    for (k, &x) in net.switches.iter().enumerate() {
        let st = if net.alive(x) {
            let entry = scr.columns.get(j * s + k).copied().unwrap_or(LFT_UNSET);
            net.entry_step(x, (entry != LFT_UNSET).then_some(entry), d)
        } else {
            Step::Fail(FailureReason::PortDown { port: 0 })
        };
        if let Some(s) = scr.step.get_mut(k) {
            *s = st;
        }
        if let Some(m) = scr.mark.get_mut(k) {
            *m = 0;
        }
    }
    for k in 0..net.switches.len() as u32 {
        resolve_label(net, scr, k);
    }
    // 2. fast path: propagate states in decreasing label order, or on one VL just follow
    // the next hops.
    let uniform_sls = net.st.path_sl.for_destination(d.lid).0;
    let clean = if attach.one_vl && uniform_sls & !attach.vl0_sls == 0 {
        one_vl_path(net, attach, d, uniform_sls, scr, deps)
    } else if let Some(map) = attach.one_map {
        one_map_path(net, attach, d, &map, uniform_sls, scr, deps)
    } else {
        fast_path(net, sources, attach, d, scr, deps)
    };
    for &k in &scr.touched {
        if let Some(l) = scr.states.get_mut(k as usize) {
            l.clear();
        }
        if let Some(h) = scr.hca.get_mut(k as usize) {
            *h = false;
        }
        if let Some(q) = scr.queued.get_mut(k as usize) {
            *q = false;
        }
        if let Some(m) = scr.vl_mask.get_mut(k as usize) {
            *m = 0;
        }
    }
    for &key in &scr.slot_keys {
        if let Some(v) = scr.slot.get_mut(key as usize) {
            *v = u32::MAX;
        }
    }
    scr.slot_keys.clear();
    scr.touched.clear();
    DestResult {
        routes,
        labels: (clean && want_labels).then(|| scr.label.clone()),
        clean,
    }
}

/// Gives switch `k` (and every switch on its chain) a label: hops to arrival, or none.
fn resolve_label(net: &Net<'_>, scr: &mut Scratch, k: u32) {
    if scr.mark.get(k as usize).copied().unwrap_or(2) != 0 {
        return;
    }
    scr.chase.clear();
    let mut cur = k;
    // Follow next hops until a resolved switch, an end, or the chase itself (a loop).
    let mut tail = loop {
        match scr.mark.get(cur as usize).copied().unwrap_or(2) {
            2 => break scr.label.get(cur as usize).copied().unwrap_or(NO_LABEL),
            1 => break NO_LABEL,
            _ => {}
        }
        if let Some(m) = scr.mark.get_mut(cur as usize) {
            *m = 1;
        }
        scr.chase.push(cur);
        match scr.step.get(cur as usize).copied() {
            Some(Step::Arrive) => {
                if let Some(l) = scr.label.get_mut(cur as usize) {
                    *l = 0;
                }
                scr.chase.pop();
                if let Some(m) = scr.mark.get_mut(cur as usize) {
                    *m = 2;
                }
                break 0;
            }
            Some(Step::Out { last: true, .. }) => {
                if let Some(l) = scr.label.get_mut(cur as usize) {
                    *l = 1;
                }
                scr.chase.pop();
                if let Some(m) = scr.mark.get_mut(cur as usize) {
                    *m = 2;
                }
                break 1;
            }
            Some(Step::Out { to, .. }) => {
                cur = net.switch_of(to);
                if cur == NO_INDEX {
                    break NO_LABEL;
                }
            }
            _ => break NO_LABEL,
        }
    };
    while let Some(c) = scr.chase.pop() {
        tail = if tail >= NO_LABEL - 1 {
            NO_LABEL
        } else {
            tail + 1
        };
        if let Some(l) = scr.label.get_mut(c as usize) {
            *l = tail;
        }
        if let Some(m) = scr.mark.get_mut(c as usize) {
            *m = 2;
        }
    }
}

/// The fast path when every hop is on VL 0 (switches without SL2VL rows, end nodes injecting
/// the destination's SLs on VL 0, path SLs by destination only, every end node cabled to a
/// switch): a route's state is just where it is, so each switch that carries traffic records
/// one dependency per switch feeding it and its end nodes' dependencies (once per output
/// port). `false` when some route fails.
fn one_vl_path(
    net: &Net<'_>,
    attach: &Attach,
    d: Dest,
    uniform_sls: u16,
    scr: &mut Scratch,
    deps: &DepSet,
) -> bool {
    if uniform_sls == 0 {
        return true;
    }
    let owner_k = owner_switch(net, d);
    for (k, list) in attach.by_switch.iter().enumerate() {
        let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
        if senders == 0 {
            continue;
        }
        if uniform_sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0
            || scr.label.get(k).copied().unwrap_or(NO_LABEL) == NO_LABEL
        {
            return false;
        }
        let x = net.switches.get(k).copied().unwrap_or(0);
        if let Some(Step::Out { out, .. }) = scr.step.get(k).copied() {
            // A dependency is recorded only for a hop that is taken.
            if net.vl_ok(x, out, 0).is_err() {
                return false;
            }
            let done = net
                .dirport(x, out)
                .and_then(|p| scr.group_done.get_mut(p as usize));
            if let Some(done) = done.filter(|d| !**d) {
                *done = true;
                for &(i, _) in list {
                    if i != 0 && i != out {
                        deps.insert(k as u32, i, 0, out, 0);
                    }
                }
            }
        }
        if !carry(net, scr, deps, k as u32) {
            return false;
        }
    }
    true
}

/// The fast path when one SL→VL map serves every hop ([`Attach::one_map`]): a route keeps
/// one VL end to end, so a switch's traffic toward the destination is the set of VLs it
/// carries. Each source switch's group adds the VLs of its SLs where it enters and carries them
/// on ([`carry_vls`]); its end nodes' dependencies are recorded once per output port and VL.
/// `false` when some route fails (then the general path finds which).
fn one_map_path(
    net: &Net<'_>,
    attach: &Attach,
    d: Dest,
    map: &[u8; 16],
    uniform_sls: u16,
    scr: &mut Scratch,
    deps: &DepSet,
) -> bool {
    let owner_k = owner_switch(net, d);
    for (k, list) in attach.by_switch.iter().enumerate() {
        let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
        if senders == 0 {
            continue;
        }
        let sls = if attach.uniform {
            uniform_sls
        } else {
            scr.group_sls.get(k).copied().unwrap_or(0)
        };
        if sls == 0 {
            continue;
        }
        if sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0
            || scr.label.get(k).copied().unwrap_or(NO_LABEL) == NO_LABEL
        {
            return false;
        }
        let mut vls = 0u16;
        for sl in bits(sls) {
            match map.get(usize::from(sl)) {
                Some(&v) if v < 15 => vls |= 1 << v,
                _ => return false,
            }
        }
        let x = net.switches.get(k).copied().unwrap_or(0);
        if let Some(Step::Out { out, .. }) = scr.step.get(k).copied() {
            // A dependency is recorded only for a hop that is taken.
            if bits(vls).any(|v| net.vl_ok(x, out, v).is_err()) {
                return false;
            }
            if let Some(done) = net
                .dirport(x, out)
                .and_then(|p| scr.group_vls.get_mut(p as usize))
            {
                let new = vls & !*done;
                if new != 0 {
                    *done |= new;
                    for &(i, _) in list {
                        if i != 0 && i != out {
                            for v in bits(new) {
                                deps.insert(k as u32, i, v, out, v);
                            }
                        }
                    }
                }
            }
        }
        if !carry_vls(net, scr, deps, k as u32, vls) {
            return false;
        }
    }
    true
}

/// Adds `vls` to what switch index `k` sends on and carries the VLs new there down the next
/// hops, recording the dependency where each switch hands them to the next; `false` when a
/// hop's VL is not operational or not scheduled.
fn carry_vls(net: &Net<'_>, scr: &mut Scratch, deps: &DepSet, mut k: u32, mut vls: u16) -> bool {
    loop {
        let Some(have) = scr.vl_mask.get_mut(k as usize) else {
            return false;
        };
        let new = vls & !*have;
        if new == 0 {
            return true;
        }
        if *have == 0 {
            scr.touched.push(k);
        }
        *have |= new;
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        match scr.step.get(k as usize).copied() {
            Some(Step::Arrive) => return true,
            Some(Step::Out {
                out,
                to,
                to_port,
                last,
            }) => {
                if bits(new).any(|v| net.vl_ok(x, out, v).is_err()) {
                    return false;
                }
                if last {
                    return true;
                }
                let m = net.switch_of(to);
                if let Some(Step::Out { out: next, .. }) = scr.step.get(m as usize).copied() {
                    // A dependency is recorded only for a hop that is taken.
                    let y = net.switches.get(m as usize).copied().unwrap_or(0);
                    if bits(new).any(|v| net.vl_ok(y, next, v).is_err()) {
                        return false;
                    }
                    for v in bits(new) {
                        deps.insert(m, to_port, v, next, v);
                    }
                }
                k = m;
                vls = new;
            }
            _ => return false,
        }
    }
}

/// Marks the switches traffic entering switch index `k` passes through (stopping at one
/// already marked) and records the dependency where each hands it to the next; `false` when a
/// hop's VL 0 is not operational or not scheduled.
fn carry(net: &Net<'_>, scr: &mut Scratch, deps: &DepSet, mut k: u32) -> bool {
    loop {
        match scr.queued.get_mut(k as usize) {
            Some(q) if !*q => *q = true,
            _ => return true,
        }
        scr.touched.push(k);
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        match scr.step.get(k as usize).copied() {
            Some(Step::Arrive) => return true,
            Some(Step::Out {
                out,
                to,
                to_port,
                last,
            }) => {
                if net.vl_ok(x, out, 0).is_err() {
                    return false;
                }
                if last {
                    return true;
                }
                let m = net.switch_of(to);
                if let Some(Step::Out { out: next, .. }) = scr.step.get(m as usize).copied() {
                    // A dependency is recorded only for a hop that is taken.
                    let y = net.switches.get(m as usize).copied().unwrap_or(0);
                    if net.vl_ok(y, next, 0).is_err() {
                        return false;
                    }
                    deps.insert(m, to_port, 0, next, 0);
                }
                k = m;
            }
            _ => return false,
        }
    }
}

/// Propagates route states through the labelled in-tree; `false` when some route fails
/// (then the slow path takes over). End nodes cabled to a switch are handled per switch, not
/// one by one: with destination-only path SLs they all send the same SLs, so what their
/// traffic does at the switch depends only on the switch's output port (memoised).
fn fast_path(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    d: Dest,
    scr: &mut Scratch,
    deps: &DepSet,
) -> bool {
    let label_of = |scr: &Scratch, n: u32| -> u16 {
        let k = net.switch_of(n);
        scr.label.get(k as usize).copied().unwrap_or(NO_LABEL)
    };
    let mut max_label = 0u16;
    // One end-node source on its own.
    let single = |scr: &mut Scratch, s: Source, max_label: &mut u16| -> bool {
        let sls = sls_of(net, s, d);
        match net.out_step(s.node, s.port, d) {
            Step::Out {
                to, to_port, last, ..
            } => {
                for sl in sls.iter() {
                    if net.injection_vl(s.node, s.port, sl.0).is_err() {
                        return false;
                    }
                }
                if last {
                    return true;
                }
                let l = label_of(scr, to);
                if l == NO_LABEL {
                    return false;
                }
                *max_label = (*max_label).max(l);
                let k = net.switch_of(to);
                for sl in sls.iter() {
                    if let Ok(v) = net.injection_vl(s.node, s.port, sl.0) {
                        add_state(net, scr, k, to_port, v, SlSet::one(sl).0);
                    }
                }
                true
            }
            _ => false,
        }
    };
    let uniform_sls = net.st.path_sl.for_destination(d.lid).0;
    if attach.grouped {
        for &j in &attach.loose {
            let Some(&s) = sources.get(j as usize) else {
                continue;
            };
            if (s.node, s.port) != d.owner && !single(scr, s, &mut max_label) {
                return false;
            }
        }
        // The switch the destination's own end node is cabled to (it does not send to itself).
        let owner_k = owner_switch(net, d);
        if uniform_sls != 0 || !attach.uniform {
            for (k, list) in attach.by_switch.iter().enumerate() {
                let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
                if senders == 0 {
                    continue;
                }
                // Per group when the SLs depend on the source switch (set by `dest_pass`).
                let sls = if attach.uniform {
                    uniform_sls
                } else {
                    scr.group_sls.get(k).copied().unwrap_or(0)
                };
                if let Some(g) = scr.group_sls.get_mut(k) {
                    *g = sls;
                }
                if sls == 0 {
                    continue;
                }
                if sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0 {
                    return false;
                }
                let l = scr.label.get(k).copied().unwrap_or(NO_LABEL);
                if l == NO_LABEL {
                    return false;
                }
                max_label = max_label.max(l);
                scr.touched.push(k as u32);
                if let Some(h) = scr.hca.get_mut(k) {
                    *h = true;
                }
            }
        }
    } else {
        for &s in sources {
            if (s.node, s.port) == d.owner {
                continue;
            }
            if net.is_switch(s.node) {
                let l = label_of(scr, s.node);
                if l == NO_LABEL {
                    return false;
                }
                max_label = max_label.max(l);
                let k = net.switch_of(s.node);
                add_state(net, scr, k, 0, 0, sls_of(net, s, d).0);
            } else if !single(scr, s, &mut max_label) {
                return false;
            }
        }
    }
    // Buckets by label, highest first.
    let mut buckets = std::mem::take(&mut scr.buckets);
    for b in buckets.iter_mut() {
        b.clear();
    }
    if buckets.len() < usize::from(max_label) + 1 {
        buckets.resize(usize::from(max_label) + 1, Vec::new());
    }
    for &k in &scr.touched {
        let l = scr.label.get(k as usize).copied().unwrap_or(NO_LABEL);
        if let (Some(b), Some(q)) = (
            buckets.get_mut(usize::from(l)),
            scr.queued.get_mut(k as usize),
        ) {
            if !*q {
                *q = true;
                b.push(k);
            }
        }
    }
    let ok = propagate(net, attach, scr, deps, &mut buckets, max_label);
    scr.buckets = buckets;
    ok
}

fn propagate(
    net: &Net<'_>,
    attach: &Attach,
    scr: &mut Scratch,
    deps: &DepSet,
    buckets: &mut [Vec<u32>],
    max_label: u16,
) -> bool {
    let mut pending: Vec<(u32, u8, u8, u16)> = Vec::new();
    for l in (1..=usize::from(max_label)).rev() {
        let mut idx = 0;
        while let Some(&k) = buckets.get(l).and_then(|b| b.get(idx)) {
            idx += 1;
            let x = net.switches.get(k as usize).copied().unwrap_or(0);
            let Some(Step::Out {
                out,
                to,
                to_port,
                last,
            }) = scr.step.get(k as usize).copied()
            else {
                return false;
            };
            let next_k = if last { NO_INDEX } else { net.switch_of(to) };
            pending.clear();
            if let Some(list) = scr.states.get(k as usize) {
                for &(i, vin, sls) in list {
                    for sl in bits(sls) {
                        let Ok(vout) = net.switch_vl(x, i, out, sl) else {
                            return false;
                        };
                        if i != 0 {
                            deps.insert(k, i, vin, out, vout);
                        }
                        if next_k != NO_INDEX {
                            pending.push((next_k, to_port, vout, 1 << sl));
                        }
                    }
                }
            }
            if scr.hca.get(k as usize).copied().unwrap_or(false) {
                let sls = scr.group_sls.get(k as usize).copied().unwrap_or(0);
                match group_states(net, attach, sls, scr, deps, k, x, out) {
                    Some(m) if m.status == 1 => {
                        if next_k != NO_INDEX {
                            for &(v, s) in m.leave.iter().take(usize::from(m.n)) {
                                pending.push((next_k, to_port, v, s));
                            }
                        }
                    }
                    Some(_) => return false,
                    None => {
                        let mut leaving = Vec::new();
                        if !group_compute(net, attach, sls, deps, k, x, out, &mut leaving) {
                            return false;
                        }
                        if next_k != NO_INDEX {
                            for (v, s) in leaving {
                                pending.push((next_k, to_port, v, s));
                            }
                        }
                    }
                }
            }
            for &(nk, p, v, s) in &pending {
                if scr.label.get(nk as usize).copied() != Some(l as u16 - 1) {
                    // Labels strictly decrease along next hops; anything else is a bug guard.
                    return false;
                }
                add_state(net, scr, nk, p, v, s);
                if let Some(q) = scr.queued.get_mut(nk as usize) {
                    if !*q {
                        *q = true;
                        if let Some(b) = buckets.get_mut(l - 1) {
                            b.push(nk);
                        }
                    }
                }
            }
        }
    }
    true
}

/// The group's traffic at switch index `k` sent out on `out` with SLs `sls`, from the memo
/// or worked out and memoised (`None` when it leaves in more states than a memo entry holds;
/// then [`group_compute`] works it out each time).
#[allow(clippy::too_many_arguments)]
fn group_states(
    net: &Net<'_>,
    attach: &Attach,
    sls: u16,
    scr: &mut Scratch,
    deps: &DepSet,
    k: u32,
    x: u32,
    out: u8,
) -> Option<Memo> {
    // A few entries per port, by SL set: with per-source path SLs one port sees a handful of
    // sets across destinations.
    let idx = net.dirport(x, out)? as usize * MEMO_WAYS + memo_way(sls);
    let m = *scr.memo.get(idx)?;
    if m.status != 0 && m.sls == sls {
        return Some(m);
    }
    let mut leaving = Vec::new();
    let ok = group_compute(net, attach, sls, deps, k, x, out, &mut leaving);
    if leaving.len() > MEMO_LEAVE {
        return None;
    }
    let mut m = Memo {
        sls,
        status: if ok { 1 } else { 2 },
        n: leaving.len() as u8,
        leave: [(0, 0); MEMO_LEAVE],
    };
    for (slot, l) in m.leave.iter_mut().zip(&leaving) {
        *slot = *l;
    }
    if let Some(e) = scr.memo.get_mut(idx) {
        *e = m;
    }
    Some(m)
}

/// The states the traffic of switch index `k`'s group (its own, and its end nodes') leaves in
/// when the switch sends the destination out on `out`, recording its dependencies; `false`
/// when a VL is not operational or not scheduled.
#[allow(clippy::too_many_arguments)]
fn group_compute(
    net: &Net<'_>,
    attach: &Attach,
    sls: u16,
    deps: &DepSet,
    k: u32,
    x: u32,
    out: u8,
    leaving: &mut Vec<(u8, u16)>,
) -> bool {
    for &(i, j) in attach
        .by_switch
        .get(k as usize)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        if i == out {
            // The destination itself (or a misdelivery, which has no label).
            continue;
        }
        let inj = attach.inj.get(j as usize).copied().unwrap_or([0; 16]);
        for sl in bits(sls) {
            let vin = inj.get(usize::from(sl)).copied().unwrap_or(0);
            let Ok(vout) = net.switch_vl(x, i, out, sl) else {
                return false;
            };
            if i != 0 {
                deps.insert(k, i, vin, out, vout);
            }
            match leaving.iter_mut().find(|(v, _)| *v == vout) {
                Some(e) => e.1 |= 1 << sl,
                None => leaving.push((vout, 1 << sl)),
            }
        }
    }
    true
}

/// A credit loop for one strongly connected component: its channels, a cycle, and a route
/// per dependency of the cycle.
fn credit_loop(
    net: &Net<'_>,
    graph: &Graph,
    scc: &[u32],
    sources: &[Source],
    dests: &[Dest],
) -> CreditLoop {
    let channels: Vec<Channel> = scc.iter().filter_map(|&c| channel(net, c)).collect();
    let cyc = graph.cycle_in(scc);
    let mut cycle = Vec::new();
    for (j, &a) in cyc.iter().enumerate() {
        let b = cyc.get((j + 1) % cyc.len()).copied().unwrap_or(a);
        let (Some(from), Some(to)) = (channel(net, a), channel(net, b)) else {
            continue;
        };
        let Some(route) = witness_route(net, a, b, sources, dests) else {
            continue;
        };
        cycle.push(Dependency { from, to, route });
    }
    CreditLoop { channels, cycle }
}

pub(crate) fn channel(net: &Net<'_>, c: u32) -> Option<Channel> {
    let (n, p, vl) = net.channel_parts(c)?;
    let Some(crate::net::PortLink::Up { node, port }) = net.port_link(n, p) else {
        return None;
    };
    Some(Channel {
        node: net.node_ref(n),
        port: p,
        to: net.node_ref(node),
        to_port: port,
        vl,
    })
}

/// One route that takes channel `a` then channel `b`.
fn witness_route(
    net: &Net<'_>,
    a: u32,
    b: u32,
    sources: &[Source],
    dests: &[Dest],
) -> Option<crate::report::Route> {
    let (_, _, vin) = net.channel_parts(a)?;
    let (x, o, vout) = net.channel_parts(b)?;
    let (an, ap, _) = net.channel_parts(a)?;
    let Some(crate::net::PortLink::Up { port: i, .. }) = net.port_link(an, ap) else {
        return None;
    };
    let lft = net.sw.get(x as usize).copied().flatten()?;
    for &d in dests {
        if lft.lft.get(d.lid).map(|p| p.0) != Some(o) {
            continue;
        }
        for &s in sources {
            if (s.node, s.port) == d.owner {
                continue;
            }
            for sl in sls_of(net, s, d).iter() {
                let mut hit = false;
                let w = net.walk(s, d, sl.0, |dx, di, dvin, dout, dvout| {
                    if (dx, di, dvin, dout, dvout) == (x, i, vin, o, vout) {
                        hit = true;
                    }
                });
                if hit {
                    return Some(net.route(s, d, sl.0, &w.hops));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Rng};
    use crate::Scope;

    /// A small random fabric (a ring a quarter of the time), routed min-hop or up/down, with
    /// at least `hosts` hosts per switch on rings and `hosts` to `hosts + 7` in all otherwise.
    fn routed(rng: &mut Rng, hosts: usize) -> weft_fabric::FabricState {
        let f = if rng.below(4) == 0 {
            testkit::ring(4 + rng.below(4) as usize, hosts + rng.below(3) as usize)
        } else {
            let switches = 2 + rng.below(6) as usize;
            let extra = rng.below(5) as usize;
            let h = hosts + rng.below(8) as usize;
            testkit::random_fabric(rng, switches, extra, h, 5)
        };
        let lids = testkit::sequential_lids(&f);
        if rng.below(2) == 0 {
            testkit::route_minhop(&f, lids)
        } else {
            testkit::route_updown(&f, lids)
        }
    }

    /// Verifies case `n` with the fast paths and without, asserting the same report; returns
    /// it and the state's attachment (which fast paths apply).
    fn same_with_and_without_fast_paths(st: &ValidState, n: usize) -> (Report, Attach) {
        let opts = Options {
            scope: if n.is_multiple_of(3) {
                Scope::HcaToHca
            } else {
                Scope::All
            },
            certificate: true,
            ..Options::default()
        };
        let net = Net::new(st);
        let (sources, _) = net.endpoints(opts.scope);
        let attach = net.attach(&sources);
        let fast = verify_with(st, &opts, true);
        let general = verify_with(st, &opts, false);
        assert_eq!(
            serde_json::to_string(&fast).ok(),
            serde_json::to_string(&general).ok(),
            "case {n}: {}",
            st.to_json()
        );
        (fast, attach)
    }

    /// The one-VL fast path records exactly the dependencies, labels and verdicts the general
    /// state propagation does, on random one-VL fabrics with corrupted tables.
    #[test]
    fn one_vl_path_matches_state_propagation() {
        let mut rng = Rng(0x0e71);
        let mut used = 0;
        for n in 0..400 {
            let mut st = routed(&mut rng, 0);
            for _ in 0..rng.below(3) {
                testkit::corrupt(&mut rng, &mut st);
            }
            let (_, attach) = same_with_and_without_fast_paths(&testkit::valid(st), n);
            used += usize::from(attach.one_vl);
        }
        assert!(used > 200, "the one-VL path ran on {used} of 400 cases");
    }

    /// The one-map fast path records exactly the dependencies, labels and verdicts the general
    /// state propagation does: random fabrics with one SL→VL map for every hop (VL 15 and VLs
    /// past a port's VLCap included), path SLs per source switch, and corrupted tables.
    #[test]
    fn one_map_path_matches_state_propagation() {
        let mut rng = Rng(0x0e72);
        let mut used = 0;
        // [proven, with a credit loop, with failed routes]
        let mut mix = [0usize; 3];
        for n in 0..400 {
            let mut st = routed(&mut rng, 1);
            let mut map = [15u8; 16];
            for v in map.iter_mut().take(4) {
                *v = match rng.below(12) {
                    0 => 15,
                    1 => 9,
                    _ => rng.below(4) as u8,
                };
            }
            for s in st.switches.values_mut() {
                s.sl2vl_all = Some(map);
            }
            for (i, node) in st.fabric.clone().nodes().iter().enumerate() {
                if !node.is_switch() {
                    st.set_node_injection(weft_fabric::NodeId(i as u32), map);
                }
            }
            let max_lid = st.lids.max_lid(&st.fabric);
            st.path_sl.default = weft_fabric::SlSet(1 + rng.below(3) as u16);
            let switches: Vec<weft_fabric::NodeId> = st.switches.keys().copied().collect();
            let mut triples = Vec::new();
            for &x in &switches {
                for lid in 1..=max_lid {
                    if rng.below(2) == 0 {
                        let sls = weft_fabric::SlSet(1 + rng.below(15) as u16);
                        triples.push((x, weft_fabric::Lid(lid), sls));
                    }
                }
            }
            st.path_sl.set_by_switch(triples);
            if rng.below(3) == 0 {
                testkit::corrupt(&mut rng, &mut st);
            }
            // Arbitration that sends every VL, or (in a quarter of the cases) ports that stop
            // sending one.
            if rng.below(4) == 0 {
                testkit::arbitrate(&mut rng, &mut st);
            } else {
                testkit::schedule_all(&mut st);
            }
            let (fast, attach) = same_with_and_without_fast_paths(&testkit::valid(st), n);
            used += usize::from(attach.one_map.is_some());
            mix[0] += usize::from(fast.is_proven());
            mix[1] += usize::from(!fast.credit_loops.is_empty());
            mix[2] += usize::from(fast.failed_routes > 0);
        }
        assert!(used > 200, "the one-map path ran on {used} of 400 cases");
        assert!(mix.iter().all(|&c| c >= 20), "verdicts {mix:?}");
    }
}

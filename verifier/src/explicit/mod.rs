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

mod dest;
mod fast;
mod rows;
mod witness;

use crate::certificate;
use crate::channels::{DepSet, Graph};
use crate::failures;
use crate::net::{Attach, Dest, Net, Source};
use crate::report::{CreditLoop, Outcome, Report, Stats, Verdict};
use crate::{Checker, Options};
use dest::{dest_pass, DestResult, Scratch};
use rayon::prelude::*;
use weft_fabric::{ValidState, LFT_UNSET};
use witness::credit_loop;

pub(crate) use rows::row_pass;
pub(crate) use witness::channel;

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

/// Destinations handled together: their LFT entries are read switch by switch (a few cache
/// lines per switch) into [`Scratch::columns`] instead of one scattered read per switch and
/// destination.
const BLOCK: usize = 64;
/// Runs the explicit engine.
pub fn verify(state: &ValidState, opts: &Options) -> Report {
    verify_with(state, opts, Paths::All)
}

/// The fast paths a run may take (the tests compare them).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Paths {
    /// The row pass where it applies, else the per-destination pass with its one-VL and
    /// one-map shortcuts.
    All,
    /// The per-destination pass with its shortcuts.
    PerDestination,
    /// The per-destination pass's general state propagation only.
    General,
}

/// [`verify`], with the fast paths `paths` allows.
fn verify_with(state: &ValidState, opts: &Options, paths: Paths) -> Report {
    let net = Net::new(state);
    let (sources, dests) = net.endpoints(opts.scope);
    let deps = DepSet::new(&net);
    let mut attach = net.attach(&sources);
    let one_vl = paths != Paths::General;
    attach.one_vl &= one_vl;
    if !one_vl {
        attach.one_map = None;
    }
    let dirty = (paths == Paths::All && !opts.certificate)
        .then(|| rows::row_pass(&net, &dests, &attach, &deps))
        .flatten();
    let rows_ran = dirty.is_some();
    let results = match dirty {
        Some(dirty) => after_rows(&net, &sources, &dests, &attach, &deps, &dirty),
        None => dest_passes(&net, &sources, &dests, &attach, &deps, opts.certificate),
    };
    let acc = count_failures(&net, &sources, &dests, &results, &deps, opts);
    let failed_routes = acc.failed;
    let failures = failures::finish(&net, &sources, acc, opts.max_listed, opts.witnesses);

    // Multicast: every group's copies add their dependencies to the same graph.
    let mc = (!state.multicast.is_empty())
        .then(|| crate::multicast::check(&net, state, &deps, opts.max_listed));
    let graph = deps.graph(&net);
    let sccs = graph.cyclic_sccs();
    if rows_ran && !sccs.is_empty() {
        // A credit loop, or a route that loops: the per-destination pass finds which routes.
        return verify_with(state, opts, Paths::PerDestination);
    }
    let used = used_channels(&graph);
    let routes: u64 = results.iter().map(|r| r.routes).sum();
    let flows = if mc.is_some() {
        crate::multicast::flows(state)
    } else {
        Vec::new()
    };
    let mfts = crate::multicast::mft_index(state);
    let credit_loops: Vec<CreditLoop> = sccs
        .iter()
        .take(opts.max_listed)
        .map(|scc| credit_loop(&net, &graph, scc, &sources, &dests, (&flows, &mfts)))
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
    let multicast_connected = opts
        .properties
        .contains(&crate::Property::MulticastConnected)
        .then(|| crate::multicast::outcome(mc.as_ref()));
    let proven = deadlock_free == Outcome::Proven
        && connected == Outcome::Proven
        && isolated.as_ref().is_none_or(|o| *o == Outcome::Proven)
        && apm_disjoint.as_ref().is_none_or(|o| *o == Outcome::Proven)
        && multicast_connected
            .as_ref()
            .is_none_or(|o| *o == Outcome::Proven);
    let certificate = if opts.certificate && proven {
        graph.topo_ranks().map(|ranks| {
            let labels: Vec<(weft_fabric::Lid, Vec<u16>)> = results
                .iter()
                .zip(&dests)
                .map(|(r, d)| (d.lid, r.labels.clone().unwrap_or_default()))
                .collect();
            let mut c = certificate::build(&net, opts.scope, &graph.edges(), &ranks, labels);
            if isolated.is_some() {
                c.properties.push(crate::Property::Isolated);
            }
            if apm_disjoint.is_some() {
                c.properties.push(crate::Property::ApmDisjoint);
            }
            if multicast_connected.is_some() {
                c.properties.push(crate::Property::MulticastConnected);
            }
            c.multicast = mc.as_ref().map(|m| certificate::McCoverage::of(&flows, m));
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
            multicast_connected,
        },
        stats: Stats {
            sources: sources.len() as u64,
            destinations: dests.len() as u64,
            switch_destinations: dests.iter().filter(|d| net.is_switch(d.owner.0)).count() as u64,
            routes,
            channels: used,
            dependencies: graph.edge_count() as u64,
            vls: net.vls,
        },
        credit_loops,
        credit_loops_total: sccs.len() as u64,
        failures,
        failed_routes,
        isolation,
        apm,
        traffic: mc.as_ref().map(|m| m.traffic.clone()).unwrap_or_default(),
        multicast: mc,
        certificate,
    }
}

/// The results after the row pass: the destinations it left (`dirty`) walked one by one,
/// the others counted (every route toward them arrives, once the caller finds no cycle).
fn after_rows(
    net: &Net<'_>,
    sources: &[Source],
    dests: &[Dest],
    attach: &Attach,
    deps: &DepSet,
    dirty: &[bool],
) -> Vec<DestResult> {
    let rest: Vec<Dest> = dests
        .iter()
        .zip(dirty)
        .filter(|(_, &d)| d)
        .map(|(d, _)| *d)
        .collect();
    let mut walked = dest_passes(net, sources, &rest, attach, deps, false).into_iter();
    let mut out = Vec::with_capacity(dests.len());
    for (d, &dirty) in dests.iter().zip(dirty) {
        let r = if dirty {
            walked.next()
        } else {
            // The row pass runs with path SLs by destination only.
            Some(DestResult {
                routes: attach.routes_by_destination(*d, net.st.path_sl.for_destination(d.lid).0),
                labels: None,
                clean: true,
            })
        };
        out.extend(r);
    }
    out
}

/// The per-destination pass over every destination, in blocks that share their LFT columns.
fn dest_passes(
    net: &Net<'_>,
    sources: &[Source],
    dests: &[Dest],
    attach: &Attach,
    deps: &DepSet,
    certificate: bool,
) -> Vec<DestResult> {
    let blocks: Vec<Vec<DestResult>> = dests
        .par_chunks(BLOCK)
        .map_init(
            || Scratch::new(net),
            |scr, block| {
                fill_columns(net, block, &mut scr.columns);
                let mut out = Vec::with_capacity(block.len());
                for (j, &d) in block.iter().enumerate() {
                    let r = dest_pass(net, sources, attach, d, j, scr, deps, certificate);
                    out.push(r);
                }
                out
            },
        )
        .collect();
    blocks.into_iter().flatten().collect()
}

/// Destinations where some route fails: every route's fate, counted into patterns (this
/// also records the dependencies of every route toward them, failed or not).
fn count_failures(
    net: &Net<'_>,
    sources: &[Source],
    dests: &[Dest],
    results: &[DestResult],
    deps: &DepSet,
    opts: &Options,
) -> failures::Acc {
    let failing: Vec<Dest> = results
        .iter()
        .zip(dests)
        .filter(|(r, _)| !r.clean)
        .map(|(_, d)| *d)
        .collect();
    let keep = opts.max_listed.max(opts.witnesses);
    if failing.is_empty() {
        return failures::Acc::new(net, sources.len(), keep);
    }
    let sh = failures::Shared::new(net, sources);
    let chunk = failing
        .len()
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(1);
    let parts: Vec<failures::Acc> = failing
        .par_chunks(chunk)
        .map(|ds| {
            let mut scr = failures::Scratch::new(net, &sh);
            let mut acc = failures::Acc::new(net, sources.len(), keep);
            for &d in ds {
                failures::destination(net, &sh, sources, d, &mut scr, deps, &mut acc);
            }
            acc
        })
        .collect();
    parts.into_iter().fold(
        failures::Acc::new(net, sources.len(), keep),
        failures::Acc::merge,
    )
}

/// How many of the graph's channels some dependency uses.
fn used_channels(graph: &Graph) -> u64 {
    let mut seen = vec![false; graph.len()];
    for a in 0..graph.len() as u32 {
        let succ = graph.succ(a);
        if !succ.is_empty() {
            if let Some(s) = seen.get_mut(a as usize) {
                *s = true;
            }
        }
        for &b in succ {
            if let Some(s) = seen.get_mut(b as usize) {
                *s = true;
            }
        }
    }
    seen.iter().filter(|&&s| s).count() as u64
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Attach;
    use crate::testkit::{self, Rng};
    use crate::Scope;
    use weft_formats::state_json::ToJson;

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
        let fast = verify_with(st, &opts, Paths::PerDestination);
        let general = verify_with(st, &opts, Paths::General);
        assert_eq!(
            serde_json::to_string(&fast).ok(),
            serde_json::to_string(&general).ok(),
            "case {n}: {}",
            st.to_json()
        );
        (fast, attach)
    }

    /// The row pass gives exactly the report the per-destination pass gives (verdicts, counts,
    /// failures and credit loops listed), on random one-VL fabrics with corrupted tables: it
    /// runs where every switch sends, and where an entry fails or a route loops the
    /// per-destination pass takes over.
    #[test]
    fn row_pass_matches_per_destination_pass() {
        let mut rng = Rng(0x0e73);
        // [the row pass read every destination, it gave way to a loop, it left some
        // destinations to the walk]
        let mut mix = [0usize; 3];
        for n in 0..600 {
            let hosts = rng.below(2) as usize;
            let mut st = routed(&mut rng, hosts);
            for _ in 0..rng.below(3) {
                testkit::corrupt(&mut rng, &mut st);
            }
            let st = testkit::valid(st);
            let opts = Options {
                scope: if n % 4 == 0 {
                    Scope::HcaToHca
                } else {
                    Scope::All
                },
                certificate: false,
                max_listed: 8,
                witnesses: 2,
                ..Options::default()
            };
            let rows = verify_with(&st, &opts, Paths::All);
            let per_dest = verify_with(&st, &opts, Paths::PerDestination);
            assert_eq!(
                serde_json::to_string(&rows).ok(),
                serde_json::to_string(&per_dest).ok(),
                "case {n}: {}",
                st.to_json()
            );
            let net = Net::new(&st);
            let (sources, dests) = net.endpoints(opts.scope);
            let attach = net.attach(&sources);
            let deps = DepSet::new(&net);
            let dirty = rows::row_pass(&net, &dests, &attach, &deps);
            let some_dirty = dirty.as_ref().is_some_and(|d| d.contains(&true));
            match (dirty.is_some(), rows.credit_loops_total == 0) {
                (true, true) if some_dirty => mix[2] += 1,
                (true, true) => mix[0] += 1,
                (true, false) => mix[1] += 1,
                (false, _) => {}
            }
        }
        assert!(
            mix.iter().all(|&c| c >= 20),
            "[read all, looped, left some] {mix:?}"
        );
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

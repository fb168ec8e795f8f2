//! Multicast trees checked by flooding the MFTs, independently of how they were built: from
//! every sender a group's packet reaches every receiving member exactly once (never its own
//! port) and never enters a switch twice; on the examples, random degraded fat-trees
//! (`fat_tree`) and random irregular fabrics (`updn`, `layered`).

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use std::collections::{BTreeMap, BTreeSet};
use weft_compiler::build::build;
use weft_compiler::diagnostic::Diagnostic;
use weft_compiler::{check, NoFiles};
use weft_fabric::{FabricState, McGroup, PortNum, PortRef};
use weft_formats::state_json::ToJson;

fn try_compile(src: &str) -> Result<FabricState, Vec<Diagnostic>> {
    let c = check("t.weft", src, &NoFiles);
    if c.has_errors() {
        return Err(c.diagnostics);
    }
    let e = c.elaborated.unwrap_or_else(|| panic!("no fabric"));
    build(&e).map(|b| b.state.into_inner())
}

fn compile(src: &str) -> FabricState {
    try_compile(src).unwrap_or_else(|d| panic!("build failed: {d:?}"))
}

/// An example with the implicit IPoIB groups turned on (`multicast { ipoib = true }` added
/// at the end of its fabric).
fn example(name: &str) -> FabricState {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let end = text
        .rfind('}')
        .unwrap_or_else(|| panic!("{path}: no fabric"));
    compile(&format!(
        "{}    multicast {{ ipoib = true }}\n{}",
        &text[..end],
        &text[end..]
    ))
}

/// Floods group `g`'s packet from `sender` over the MFTs: the end ports it is delivered to,
/// with how often; an error when it enters a switch twice.
fn flood(st: &FabricState, g: &McGroup, sender: PortRef) -> Result<BTreeMap<PortRef, u32>, String> {
    let f = &st.fabric;
    let mut got: BTreeMap<PortRef, u32> = BTreeMap::new();
    let Some(first) = f.live_peer(sender) else {
        return Ok(got);
    };
    if !f.node(first.node).is_switch() {
        return Ok(got);
    }
    let mut seen = BTreeSet::new();
    let mut stack = vec![first];
    while let Some(at) = stack.pop() {
        if !seen.insert(at.node) {
            return Err(format!(
                "{} from {}: `{}` entered twice",
                g.mlid,
                f.node(sender.node).name(),
                f.node(at.node).name()
            ));
        }
        let mask = st
            .multicast
            .mfts
            .get(&at.node)
            .map(|t| t.get(g.mlid))
            .unwrap_or_default();
        for out in mask.iter().filter(|&p| p != at.port && p != PortNum(0)) {
            let Some(next) = f.live_peer(PortRef::new(at.node, out.0)) else {
                return Err(format!(
                    "{}: `{}` port {} leads nowhere",
                    g.mlid,
                    f.node(at.node).name(),
                    out.0
                ));
            };
            if f.node(next.node).is_switch() {
                stack.push(next);
            } else {
                *got.entry(next).or_insert(0) += 1;
            }
        }
    }
    Ok(got)
}

/// Every group of `st` delivers from every sender (all members, or a spread sample of at
/// most `senders`) to every receiving member but the sender, exactly once.
fn assert_trees(st: &FabricState, senders: usize) {
    assert!(!st.multicast.groups.is_empty(), "no groups");
    for g in &st.multicast.groups {
        let receivers: BTreeSet<PortRef> = g
            .members
            .iter()
            .filter(|(_, j)| j.receives())
            .map(|(&p, _)| p)
            .collect();
        let all: Vec<PortRef> = g.members.keys().copied().collect();
        let step = (all.len() / senders.max(1)).max(1);
        for &s in all.iter().step_by(step) {
            let got = flood(st, g, s).unwrap_or_else(|e| panic!("{e}"));
            let want: BTreeSet<PortRef> = receivers.iter().copied().filter(|&p| p != s).collect();
            let twice: Vec<_> = got.iter().filter(|(_, &n)| n > 1).collect();
            assert!(twice.is_empty(), "{} delivered twice: {twice:?}", g.mlid);
            let delivered: BTreeSet<PortRef> = got.keys().copied().collect();
            assert_eq!(delivered, want, "{} from {s:?}", g.mlid);
        }
    }
}

#[test]
fn examples_deliver_to_every_member_once() {
    for (name, senders) in [
        ("lab-16.weft", 64),
        ("tenants-648.weft", 12),
        ("qos-648.weft", 6),
        ("torus-4x4.weft", 64),
        ("vswitch-fig2.weft", 64),
        ("superpod-1su.weft", 6),
    ] {
        let st = example(name);
        assert_trees(&st, senders);
    }
}

/// The implicit groups (`ipoib = true`): the default partition's on every end port and one
/// per partition, on the MLIDs after the declared ones; without it (the default) or with
/// `ipoib = false` none, and the state says nothing about multicast (`state.json` v1).
#[test]
fn implicit_groups_and_turning_them_off() {
    let tree = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\n";
    let body = "    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    tenant a { pkey = 0x8001, hosts = cn001..=cn004 }\n    tenant b { pkey = 0x8003, hosts = cn005..=cn008 }\n";
    let on = compile(&format!(
        "{tree}fabric f {{\n{body}    multicast {{\n        ipoib = true\n        group jobs {{ mlid = 0xc001, members = [cn001, cn009], send_only = cn010 }}\n    }}\n}}\n"
    ));
    let keys: Vec<(u16, u16, usize)> = on
        .multicast
        .groups
        .iter()
        .map(|g| (g.mlid.get(), g.pkey, g.members.len()))
        .collect();
    assert_eq!(
        keys,
        [
            (0xc000, 0xffff, 32),
            (0xc001, 0xffff, 3),
            (0xc002, 0x8001, 4),
            (0xc003, 0x8003, 4)
        ]
    );
    assert_trees(&on, 64);
    assert!(on.to_json().contains("\"version\": 2"));
    let off = compile(&format!(
        "{tree}fabric f {{\n{body}    multicast {{ ipoib = false }}\n}}\n"
    ));
    assert!(off.multicast.is_empty());
    assert!(off.to_json().contains("\"version\": 1"));
    let default = compile(&format!("{tree}fabric f {{\n{body}}}\n"));
    assert!(default.multicast.is_empty());
}

/// A group of two hosts on one leaf stays on that leaf.
#[test]
fn a_group_on_one_leaf_stays_there() {
    let st = compile("use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    multicast {\n        ipoib = false\n        group pair { mlid = 0xc010, members = [cn001, cn002] }\n    }\n}\n");
    let used: Vec<&str> = st
        .multicast
        .mfts
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(&s, _)| st.fabric.node(s).name())
        .collect();
    assert_eq!(used, ["leaf1"]);
    assert_trees(&st, 8);
}

/// On the 4×4 torus under `layered` (one layer, VL 0, where a trivial lane map wrote no
/// tables), the IPoIB group and `jobs` have no tree free of loops with the routes: they get
/// SL 1 on VL 1, in every switch's SL→VL map and every end port's injection, scheduled by
/// every cabled port's VL arbitration, within `max_vls`, and in `opensm.conf`'s tables; SL 0
/// stays on VL 0, and so does SL 3, which `pinned` (on one switch) declares; the trees
/// deliver once to every member.
#[test]
fn a_layered_torus_gives_its_groups_a_vl_of_their_own() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\nfabric t {\n    topology = torus(dims: [4, 4], switch: sb7800, hca: connectx5, hosts_per_switch: 2)\n    routing { engine = layered }\n    multicast {\n        ipoib = true\n        group jobs { mlid = 0xc001, members = all }\n        group pinned { mlid = 0xc002, members = [h1, h2], sl = 3 }\n    }\n}\n";
    let c = check("t.weft", src, &NoFiles);
    let b = build(c.elaborated.as_ref().unwrap()).unwrap_or_else(|d| panic!("{d:?}"));
    assert_eq!(b.lanes.layers, 1);
    assert_eq!(b.lanes.multicast.map(|(s, v)| (s.0, v.0)), Some((1, 1)));
    let st = b.state.state();
    let sls: Vec<u8> = st.multicast.groups.iter().map(|g| g.sl.0).collect();
    assert_eq!(sls, [1, 1, 3]);
    for (id, sw) in &st.switches {
        let t = sw
            .sl2vl_all
            .unwrap_or_else(|| panic!("{id:?}: no SL→VL map"));
        assert_eq!((t[0], t[1], t[3]), (0, 1, 0), "{id:?}");
    }
    for p in live_ports(st) {
        assert_eq!(st.injection_vl(p, weft_fabric::Sl(1)).0, 1, "{p:?}");
        assert_eq!(st.injection_vl(p, weft_fabric::Sl(0)).0, 0, "{p:?}");
    }
    for (p, ps) in &st.ports {
        if st.fabric.live_peer(*p).is_none() {
            continue;
        }
        let arb = ps
            .vlarb
            .as_ref()
            .unwrap_or_else(|| panic!("{p:?}: no VLArb"));
        let vls: Vec<(u8, u8)> = arb.low.iter().map(|w| (w.vl, w.weight)).collect();
        assert_eq!(vls, [(0, 1), (1, 1)], "{p:?}");
    }
    assert_eq!(st.max_vls, Some(2));
    assert_eq!(
        weft_compiler::qos::qos_conf(&b.lanes),
        weft_formats::opensm::QosConf::of_state(st).unwrap()
    );
    assert_trees(st, 64);
}

/// Every end port whose cable is up.
fn live_ports(st: &FabricState) -> Vec<PortRef> {
    st.fabric
        .node_ids()
        .filter(|&n| !st.fabric.node(n).is_switch())
        .flat_map(|n| {
            st.fabric
                .node(n)
                .ports
                .iter()
                .map(move |p| PortRef::new(n, p.num.0))
        })
        .filter(|&p| st.fabric.live_peer(p).is_some())
        .collect()
}

mod random {
    use super::*;
    use proptest::prelude::*;

    /// A connected irregular fabric: a ring of `n` switches with `chords`, two hosts each.
    fn irregular(n: usize, chords: &[(usize, usize)], engine: &str) -> String {
        let mut s = format!("use std::hardware::{{sb7800, connectx5}}\nfabric f {{\n    topology {{\n        switch sw[1..={n}] : sb7800\n        hca h[1..={}] : connectx5\n", 2 * n);
        let mut next = vec![1u8; n + 1];
        let mut port = |x: usize| {
            let p = next[x];
            next[x] += 1;
            p
        };
        let mut cabled = BTreeSet::new();
        for i in 1..=n {
            let j = i % n + 1;
            cabled.insert((i.min(j), i.max(j)));
            s += &format!(
                "        link sw[{i}].p[{}] <-> sw[{j}].p[{}]\n",
                port(i),
                port(j)
            );
        }
        for &(a, b) in chords {
            let (a, b) = (a % n + 1, b % n + 1);
            if a == b || !cabled.insert((a.min(b), a.max(b))) {
                continue;
            }
            s += &format!(
                "        link sw[{a}].p[{}] <-> sw[{b}].p[{}]\n",
                port(a),
                port(b)
            );
        }
        for i in 1..=n {
            for k in 0..2 {
                s += &format!(
                    "        link h[{}].p[1] <-> sw[{i}].p[{}]\n",
                    2 * i - 1 + k,
                    30 + k
                );
            }
        }
        s += &format!("    }}\n    vls {{ budget = 4 }}\n    routing {{ engine = {engine} }}\n    multicast {{ group half {{ mlid = 0xc005, members = h[1]..=h[{n}] }} }}\n}}\n");
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Random 3-level trees with random cables down: every group delivers to every
        /// member once, from every sender.
        #[test]
        fn degraded_fat_trees(m in 2u32..=3, w in 2u32..=3, faults in proptest::collection::btree_set((1u32..=12, 1u32..=6), 0..4)) {
            let spines = m * w;
            let lines: String = faults
                .iter()
                .map(|&(s, p)| format!("        link spine{}.p[{}] down\n", (s - 1) % spines + 1, (p - 1) % (m + w) + 1))
                .collect();
            let src = format!("use std::hardware::{{sb7800, connectx5}}\nuse std::topology::xgft\nfabric t {{\n    topology = xgft(h: 3, m: [{m}, {m}, {m}], w: [1, {w}, {w}], switch: sb7800, hca: connectx5)\n    faults {{\n{lines}    }}\n    routing {{ engine = fat_tree }}\n    multicast {{ group some {{ mlid = 0xc003, members = [cn001, cn002, cn{:03}], send_only = cn003 }} }}\n}}\n", m * m * m);
            match try_compile(&src) {
                Ok(st) => assert_trees(&st, 32),
                // A fault may cut the tree apart; then the check or unicast refuses first.
                Err(d) => prop_assert!(
                    d.iter().all(|d| d.code == "weft::unroutable" || d.code == "weft::fabric_split"),
                    "{d:?}"
                ),
            }
        }

        /// Random irregular fabrics under Up*/Down*: a tree always exists (it follows the
        /// order), and delivers once to every member.
        #[test]
        fn irregular_updn(n in 4usize..=10, chords in proptest::collection::vec((0usize..10, 0usize..10), 0..8)) {
            let st = compile(&irregular(n, &chords, "updn"));
            assert_trees(&st, 64);
        }

        /// The same under `layered`: when a tree is built it delivers once to every member;
        /// a refusal names the loop.
        #[test]
        fn irregular_layered(n in 4usize..=10, chords in proptest::collection::vec((0usize..10, 0usize..10), 0..8)) {
            match try_compile(&irregular(n, &chords, "layered")) {
                Ok(st) => assert_trees(&st, 64),
                Err(d) => prop_assert!(
                    d.iter().all(|d| d.code == "weft::layers_exceeded" || (d.code == "weft::multicast_loop" && d.message.contains(" → "))),
                    "{d:?}"
                ),
            }
        }
    }
}

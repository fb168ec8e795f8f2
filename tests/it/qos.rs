//! QoS classes on the 648-node tree (`examples/qos-648.weft`): vFtree's lanes reproduce Paper
//! III's Algorithm 1 exactly, dFtree pairs carry both lanes and are proven for every subset,
//! every class's SLs map to its own VLs on every port pair, and a broken SL→VL table (the
//! slow lane sent on a VL the port lacks) is refused with a witness.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_compiler::{build, check, qos, NoFiles};
use weft_fabric::{FabricState, Lid, NodeId, NodeKind, PortNum, PortRef, Sl, ValidState};
use weft_verifier::{verify, Options, Outcome};

const EXAMPLE: &str = include_str!("../../examples/qos-648.weft");

fn built(src: &str) -> ValidState {
    let c = check("qos-648.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    build::build(&c.elaborated.unwrap())
        .unwrap_or_else(|d| panic!("{d:?}"))
        .state
}

/// One host per leaf, leaves in declaration order: (leaf, host, the host's LID).
fn host_per_leaf(st: &FabricState) -> Vec<(NodeId, NodeId, Lid)> {
    let f = &st.fabric;
    let mut out = Vec::new();
    for x in f
        .node_ids()
        .filter(|&x| f.node(x).spec.kind == NodeKind::Switch)
    {
        let host = f.node(x).ports.iter().enumerate().find_map(|(i, _)| {
            let (peer, _) = f.peer(PortRef::new(x, i as u8))?;
            (f.node(peer.node).spec.kind == NodeKind::Hca).then_some(peer)
        });
        if let Some(h) = host {
            out.push((x, h.node, st.lids.get(h.node, h.port).unwrap()));
        }
    }
    out
}

#[test]
fn vftree_reproduces_algorithm_1_on_the_648_node_tree() {
    let st = built(EXAMPLE);
    let st = st.state();
    let leaves = host_per_leaf(st);
    assert_eq!(leaves.len(), 36);
    // `compute` is the second class: SLs 1..=4, lane = SL - 1.
    let mut m = vec![vec![0u8; 36]; 36];
    for (a, &(_, src, _)) in leaves.iter().enumerate() {
        for (b, &(_, _, dlid)) in leaves.iter().enumerate() {
            let sls = st.path_sls(PortRef::new(src, 1), dlid);
            let compute: Vec<Sl> = sls.iter().filter(|s| (1..=4).contains(&s.0)).collect();
            assert_eq!(compute.len(), 1, "leaf {a} → leaf {b}: {sls:?}");
            m[a][b] = compute[0].0 - 1;
            // Management on SL 0 and both storage lanes (SLs 5, 6) on every pair.
            assert!(sls.contains(Sl(0)) && sls.contains(Sl(5)) && sls.contains(Sl(6)));
            assert_eq!(sls.len(), 4);
        }
    }
    assert_eq!(m, qos::vftree_matrix(36, 4));
    for (a, row) in m.iter().enumerate() {
        assert_eq!(row[a], 0, "intra-leaf traffic on the first lane");
        for (b, &v) in row.iter().enumerate() {
            assert_eq!(v, m[b][a], "symmetric");
        }
    }
    let text: String = m
        .iter()
        .map(|r| r.iter().map(|v| char::from(b'0' + v)).collect::<String>() + "\n")
        .collect();
    insta::assert_snapshot!(text);
}

#[test]
fn every_class_has_its_own_vls_and_the_example_is_proven() {
    let st = built(EXAMPLE);
    let s = st.state();
    // SL i → VL i for the 7 SLs used, unused SLs dropped, on every switch port pair.
    let want: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 15, 15, 15, 15, 15, 15, 15, 15, 15];
    for (&x, sw) in &s.switches {
        let ports = s.fabric.node(x).spec.port_count;
        for i in 0..=ports {
            for o in 1..=ports {
                let got: Vec<u8> = (0..16u8)
                    .map(|sl| sw.vl(PortNum(i), PortNum(o), Sl(sl)).unwrap().0)
                    .collect();
                assert_eq!(got, want, "{i} → {o}");
            }
        }
    }
    // VL arbitration: management high (VL 0, weight 16), the rest low with their weight split.
    let arb = s.ports.values().find_map(|p| p.vlarb.clone()).unwrap();
    assert_eq!(arb.high_limit, qos::HIGH_LIMIT);
    let low: Vec<(u8, u8)> = arb.low.iter().map(|w| (w.vl, w.weight)).collect();
    assert_eq!(low, [(1, 48), (2, 48), (3, 48), (4, 48), (5, 24), (6, 24)]);
    let high: Vec<(u8, u8)> = arb.high.iter().map(|w| (w.vl, w.weight)).collect();
    assert_eq!(high, [(0, 16)]);
    // Seven VLs used: the SM operates eight (max_vls), which opensm.conf asks for twice.
    assert_eq!(s.max_vls, Some(8));
    let c = check("qos-648.weft", EXAMPLE, &NoFiles);
    let b = build::build(&c.elaborated.unwrap()).unwrap();
    let conf = qos::opensm_conf(&b.lanes, "qos648");
    assert!(
        conf.contains("\nmax_op_vls 4\n") && conf.contains("\nqos_max_vls 8\n"),
        "{conf}"
    );
    // Every cabled port's arbitration sends every VL a route may take.
    for (r, p) in &s.ports {
        if s.fabric
            .node(r.node)
            .port(r.port)
            .is_some_and(|x| x.link.is_some())
        {
            let arb = p.vlarb.as_ref().unwrap();
            assert!((0..7).all(|vl| arb.schedules(vl)), "{r:?}");
        }
    }
    let r = verify(&st, &Options::default());
    assert!(r.is_proven(), "{:?}", r.verdict);
    assert_eq!(r.stats.vls, 7);
}

/// The slow storage lane (SL 6) sent on VL 8 out of one spine port: the port's VLCap is 8
/// (VLs 0–7), so every route that may take it fails there, and the verifier names it.
#[test]
fn a_slow_lane_on_a_vl_the_port_lacks_is_refused_with_a_witness() {
    let st = built(EXAMPLE);
    let mut s = st.into_inner();
    let f = &s.fabric;
    let spine = f
        .node_ids()
        .filter(|&x| f.node(x).spec.kind == NodeKind::Switch)
        .find(|&x| host_per_leaf_has_none(&s, x))
        .unwrap();
    let sw = s.switches.get_mut(&spine).unwrap();
    let mut vl = sw.sl2vl_all.unwrap();
    vl[6] = 8;
    sw.sl2vl.push(weft_fabric::Sl2VlRow {
        in_port: 1,
        out_port: 2,
        vl,
    });
    sw.sort_sl2vl();
    let st = ValidState::new(s).unwrap();
    let r = verify(&st, &Options::default());
    assert_eq!(r.verdict.connected, Outcome::Violated);
    let p = &r.failures[0];
    let w = &p.witnesses[0];
    let text = format!("{:?}", w);
    assert!(text.contains("VlNotOperational"), "{text}");
    assert!(p.routes > 0);
}

fn host_per_leaf_has_none(st: &FabricState, x: NodeId) -> bool {
    !host_per_leaf(st).iter().any(|&(l, _, _)| l == x)
}

/// dFtree over `layered`: lanes multiply layers. The 5×5 torus needs two layers; a dFtree
/// class takes a fast and a slow lane of each, four VLs in all, and every pair's path-SL set
/// holds both lanes of its layer. The verifier proves the union of every pair's SLs, so every
/// assignment of fast or slow lanes to flows is proven with it.
#[test]
fn dftree_lanes_multiply_layered_layers() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::torus\nfabric t {\n    topology = torus(dims: [5, 5], switch: sb7800, hca: connectx5, hosts_per_switch: 2)\n    vls { budget = 8 }\n    routing { engine = layered }\n    qos {\n        class bulk { lanes = dftree }\n    }\n}\n";
    let st = built(src);
    let s = st.state();
    let mut sizes = std::collections::BTreeSet::new();
    let mut layers_seen = std::collections::BTreeSet::new();
    for (&n, ports) in &s.lids.base {
        for &p in ports.keys() {
            let src = PortRef::new(n, p.0);
            for (lid, o) in s.lids.owners(&s.fabric).iter().enumerate() {
                if o.is_none() || lid == 0 {
                    continue;
                }
                let sls = s.path_sls(src, Lid(lid as u16));
                sizes.insert(sls.len());
                // Fast lane l on SL layer, slow lane on SL 2 + layer.
                let v: Vec<u8> = sls.iter().map(|s| s.0).collect();
                assert_eq!(v.len(), 2, "{v:?}");
                assert_eq!(v[1], v[0] + 2, "{v:?}");
                layers_seen.insert(v[0]);
            }
        }
    }
    assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [2]);
    assert_eq!(layers_seen.into_iter().collect::<Vec<_>>(), [0, 1]);
    let r = verify(&st, &Options::default());
    assert!(r.is_proven(), "{:?}", r.verdict);
    assert_eq!(r.stats.vls, 4);
}

/// `opensm.conf` says the tables the state holds: the lane map's tables are the state's
/// (one SL→VL map and one arbitration on every port), and the file written from them reads
/// back as them — on the QoS classes example and on a layered 5×5 torus (two layers), whose
/// only class is the implicit one spread over the routing layers.
#[test]
fn opensm_conf_states_the_states_tables() {
    use weft_formats::opensm::{parse_qos_conf, QosConf};
    for (name, src) in [
        ("qos-648.weft", EXAMPLE),
        (
            "torus-5x5.weft",
            &include_str!("../../examples/torus-4x4.weft")
                .replace("dims: [4, 4]", "dims: [5, 5]")
                .replace("engine = updn", "engine = layered"),
        ),
    ] {
        let c = check(name, src, &NoFiles);
        assert!(!c.has_errors(), "{name}: {:?}", c.diagnostics);
        let b = build::build(&c.elaborated.unwrap()).unwrap();
        assert!(!b.lanes.trivial(), "{name}: no QoS tables to compare");
        let want = qos::qos_conf(&b.lanes);
        assert_eq!(QosConf::of_state(&b.state), Ok(want.clone()), "{name}");
        let conf = qos::opensm_conf(&b.lanes, name);
        assert_eq!(parse_qos_conf(&conf), Ok(want), "{name}: {conf}");
    }
}

//! Multicast trees on `layered` routes, proven with the unicast routes by the verifier (which
//! shares no code with the tree builder): the 5×5 torus and the 4×4 one with the implicit
//! IPoIB group, whose trees no layer's VL admits, on a VL of their own — deadlock-free over
//! the union, connected, every member reached once, with a certificate the independent
//! checker accepts; and random irregular fabrics with random extra groups and budgets, each
//! build proven or refused naming why, never one the verifier refutes.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use proptest::prelude::*;
use weft_compiler::build::Built;
use weft_compiler::diagnostic::Diagnostic;
use weft_compiler::{check, NoFiles};
use weft_tests::{example, irregular_source, Rng};
use weft_verifier::{certificate, verify, Certificate, Options, Outcome, Property, Request};

/// `src` with `extra` added as the last lines of its fabric.
fn with(src: &str, extra: &str) -> String {
    let end = src.rfind('}').expect("a fabric");
    format!("{}{extra}{}", &src[..end], &src[end..])
}

/// The build of `src` as the compiler makes it (no z3 layer placement), or its errors.
fn build(src: &str) -> Result<Built, Vec<Diagnostic>> {
    let c = check("t.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}\n{src}", c.diagnostics);
    weft_compiler::build::build(c.elaborated.as_ref().unwrap())
}

/// Proves `b` as `weft build` does (the driver's properties, which include
/// `multicast_connected` when there are groups), checks its certificate, and returns the
/// data VLs the proof saw.
fn prove(b: &Built, what: &str) -> u8 {
    let properties = weft_driver::properties(b);
    for p in [
        Property::DeadlockFree,
        Property::Connected,
        Property::MulticastConnected,
    ] {
        assert!(properties.contains(&p), "{what}: {p:?} not asked");
    }
    let st = &b.state;
    let r = verify(
        st,
        &Options {
            properties: properties.clone(),
            ..Options::default()
        },
    );
    for p in &properties {
        assert_eq!(
            *r.outcome(*p),
            Outcome::Proven,
            "{what}: {p:?}\n{:#?}\n{:#?}",
            r.credit_loops.first(),
            r.failures.first()
        );
    }
    let cert = r.certificate.as_ref().expect("a certificate");
    let back = Certificate::from_json(&cert.to_json()).unwrap();
    let req = Request {
        properties,
        ..Default::default()
    };
    let sum = certificate::check(st, &back, &req).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        sum.traffic.multicast_groups,
        st.multicast.groups.len() as u64,
        "{what}"
    );
    r.stats.vls
}

/// The two tori with `multicast { ipoib = true }`: the broadcast group's tree closes a loop
/// with the routes on every layer's VL, so it is on the next VL, which no unicast route takes
/// (its SL maps there in every table, the arbitration schedules it, `max_vls` covers it);
/// the union is proven.
#[test]
fn layered_tori_with_ipoib_are_proven() {
    let five = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../bench/fabrics/torus-5x5-layered.weft"),
    )
    .unwrap();
    let four = example("torus-4x4.weft").replace("engine = updn", "engine = layered");
    assert!(four.contains("engine = layered"));
    for (name, src, layers) in [("torus-5x5", five, 2u8), ("torus-4x4", four, 1)] {
        let b = build(&with(&src, "    multicast { ipoib = true }\n"))
            .unwrap_or_else(|d| panic!("{name}: {d:?}"));
        assert_eq!(b.lanes.layers, layers, "{name}");
        let st = &b.state;
        let [g] = &st.multicast.groups[..] else {
            panic!("{name}: {:?}", st.multicast.groups);
        };
        // Its own VL: the first after the layers', with an SL of its own.
        assert_eq!(b.lanes.multicast.map(|(_, v)| v.0), Some(layers), "{name}");
        assert_eq!(b.lanes.sl2vl[usize::from(g.sl.0)].0, layers, "{name}");
        assert!(g.sl.0 >= layers, "{name}: SL {}", g.sl.0);
        assert!(st.max_vls.unwrap() > layers, "{name}");
        let note = b
            .notes
            .iter()
            .find(|n| n.code.as_str() == "weft::multicast")
            .unwrap();
        assert!(
            note.message
                .contains(&format!("`ipoib`: it is on SL {} → VL {layers}", g.sl.0)),
            "{name}: {}",
            note.message
        );
        assert_eq!(prove(&b, name), layers + 1, "{name}");
    }
}

/// Many groups share the VL of their own: on the 4×4 torus under `layered` (one layer), 24
/// groups of hosts far apart, whose trees cross the torus's rings; each group on the VL of
/// their own is a subtree of one spanning tree (the note names its root), so together they
/// close no loop there, and the union is proven.
#[test]
fn many_groups_share_the_vl_of_their_own() {
    let src = example("torus-4x4.weft").replace("engine = updn", "engine = layered");
    let mut groups = String::from("    multicast {\n        ipoib = true\n");
    for k in 0..24usize {
        let members: Vec<String> = [0, 9, 18, 27]
            .iter()
            .map(|d| format!("h{}", (k * 5 + d) % 32 + 1))
            .collect();
        groups += &format!(
            "        group g{k} {{ mlid = {:#x}, members = [{}] }}\n",
            0xc010 + k,
            members.join(", ")
        );
    }
    let b = build(&with(&src, &(groups + "    }\n"))).unwrap_or_else(|d| panic!("{d:?}"));
    let (sl, vl) = b.lanes.multicast.expect("a VL of their own");
    assert_eq!(vl.0, 1);
    let own = b
        .state
        .multicast
        .groups
        .iter()
        .filter(|g| g.sl == sl)
        .count();
    assert!(own >= 8, "only {own} groups on the VL of their own");
    assert_eq!(prove(&b, "torus-4x4 with 25 groups"), 2);
}

/// Random extra groups for a fabric of `hosts` hosts `h{first}…`: members, sometimes `all`,
/// sometimes a send-only member, sometimes held to SL 0 (layer 0's, always mapped).
fn groups(rng: &mut Rng, hosts: usize, first: usize) -> String {
    let mut out = String::from("    multicast {\n        ipoib = true\n");
    for k in 0..rng.below(4) {
        let chosen: std::collections::BTreeSet<usize> = (0..1 + rng.below(hosts))
            .map(|_| first + rng.below(hosts))
            .collect();
        let members = if rng.below(4) == 0 {
            "all".to_owned()
        } else {
            let names: Vec<String> = chosen.iter().map(|h| format!("h{h}")).collect();
            format!("[{}]", names.join(", "))
        };
        // Send-only: a host not among the full members (any, with `all`).
        let other = first + rng.below(hosts);
        let send_only = if rng.below(3) == 0 && (members == "all" || !chosen.contains(&other)) {
            format!(", send_only = h{other}")
        } else {
            String::new()
        };
        let sl = if rng.below(8) == 0 { ", sl = 0" } else { "" };
        out += &format!(
            "        group g{k} {{ mlid = {:#x}, members = {members}{send_only}{sl} }}\n",
            0xc010 + k
        );
    }
    out + "    }\n"
}

/// A ring of `n` switches with `chords` (pairs of switches, taken modulo `n`), one or two
/// hosts `h0…` on each, routed by `layered` within `budget` VLs: rings need a second layer
/// from five switches on, and their chords close more cycles for a tree to cross.
fn ring_with_chords(n: usize, chords: &[(usize, usize)], two: &[bool], budget: u8) -> String {
    let mut body = String::new();
    let mut port = vec![1u8; n];
    let mut next = |x: usize| {
        port[x] += 1;
        port[x] - 1
    };
    let mut cabled = std::collections::BTreeSet::new();
    let mut link = |a: usize, b: usize, body: &mut String| {
        if a != b && cabled.insert((a.min(b), a.max(b))) {
            *body += &format!("        link s{a}.p[{}] <-> s{b}.p[{}]\n", next(a), next(b));
        }
    };
    for i in 0..n {
        link(i, (i + 1) % n, &mut body);
    }
    for &(a, b) in chords {
        link(a % n, b % n, &mut body);
    }
    let mut h = 0;
    for s in 0..n {
        for k in 0..1 + usize::from(two.get(s).copied().unwrap_or(false)) {
            body += &format!(
                "        hca h{h} : connectx5\n        link h{h}.p[1] <-> s{s}.p[{}]\n",
                30 + k
            );
            h += 1;
        }
    }
    let switches: String = (0..n)
        .map(|s| format!("        switch s{s} : sb7800\n"))
        .collect();
    format!("use std::hardware::{{sb7800, connectx5}}\nfabric f {{\n    topology {{\n{switches}{body}    }}\n    vls {{ budget = {budget} }}\n    routing {{ engine = layered }}\n}}\n")
}

/// What [`irregular_layered_with_groups`] asserts of one program.
fn proven_or_refused(src: &str) -> Result<(), TestCaseError> {
    match build(src) {
        Ok(b) => {
            prove(&b, src);
        }
        Err(d) => {
            for d in &d {
                let m = &d.message;
                match d.code.as_str() {
                    "weft::multicast_loop" => {
                        prop_assert!(m.contains(" → "), "no loop named: {m}\n{src}");
                        // A group free to move is refused only when no VL is spare.
                        let name = m.split('`').nth(1).unwrap_or("");
                        let pinned = src.lines().any(|l| {
                            l.contains(&format!("group {name} {{")) && l.contains("sl = 0")
                        });
                        prop_assert!(
                            pinned
                                || m.contains("would need a budget of")
                                || m.contains("none is left"),
                            "{m}\n{src}"
                        );
                    }
                    "weft::layers_exceeded" => prop_assert!(m.contains("layer"), "{m}\n{src}"),
                    other => prop_assert!(false, "{other}: {m}\n{src}"),
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random irregular fabrics under `layered` with a random budget, the IPoIB group and
    /// random extra groups: every build is proven (deadlock-free over the union, connected,
    /// every member reached once), or refused naming why — a loop (`weft::multicast_loop`,
    /// with the loop and, when no VL was spare, the budget a VL of its own would need) or too
    /// few VLs for the unicast layers (`weft::layers_exceeded`). Never a build the verifier
    /// refutes.
    #[test]
    fn irregular_layered_with_groups(seed in any::<u64>(), n in 4usize..=14, budget in 1u8..=4) {
        let mut rng = Rng(seed);
        let src = irregular_source(&mut rng, n, "f")
            .replace("vls { budget = 8 }", &format!("vls {{ budget = {budget} }}"));
        let hosts = src.matches("hca h").count();
        proven_or_refused(&with(&src, &groups(&mut rng, hosts, 0)))?;
    }

    /// The same on rings of switches with random chords.
    #[test]
    fn rings_with_chords_and_groups(
        seed in any::<u64>(),
        n in 4usize..=12,
        chords in proptest::collection::vec((0usize..12, 0usize..12), 0..6),
        two in proptest::collection::vec(any::<bool>(), 12),
        budget in 1u8..=4,
    ) {
        let src = ring_with_chords(n, &chords, &two, budget);
        let hosts = src.matches("hca h").count();
        proven_or_refused(&with(&src, &groups(&mut Rng(seed), hosts, 0)))?;
    }

    /// The same on 2-D tori of 3 to 5 switches a side with up to two cables down (never
    /// enough to cut one apart: every switch has four), where the groups' trees most often
    /// cross every layer's cycles and take a VL of their own.
    #[test]
    fn degraded_tori_and_groups(
        seed in any::<u64>(),
        a in 3usize..=5,
        b in 4usize..=5,
        faults in proptest::collection::btree_set((1usize..=25, 1u8..=4), 0..=2),
        budget in 1u8..=4,
    ) {
        let lines: String = faults
            .iter()
            .map(|&(s, p)| format!("        link sw{}.p[{p}] down\n", (s - 1) % (a * b) + 1))
            .collect();
        let src = format!(
            "use std::hardware::{{sb7800, connectx5}}\nuse std::topology::torus\nfabric t {{\n    topology = torus(dims: [{a}, {b}], switch: sb7800, hca: connectx5)\n    faults {{\n{lines}    }}\n    vls {{ budget = {budget} }}\n    routing {{ engine = layered }}\n}}\n"
        );
        // The torus's hosts are `h1…`, one per switch.
        proven_or_refused(&with(&src, &groups(&mut Rng(seed), a * b, 1)))?;
    }
}

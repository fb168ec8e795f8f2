//! dFtree's moves in OpenSM's QoS policy (`weft_compiler::qos::with_slow_flows`): the policy
//! `weft build` writes for a small tree with a management class and a dFtree class, with two
//! sources moved to the slow lane toward one hot-spot.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_compiler::qos::{lid_port_guid, qos_policy, with_slow_flows, SlowFlow};
use weft_compiler::{check, NoFiles};
use weft_fabric::{FabricState, PortNum, PortRef};

/// One spine, two leaves, four hosts; `qos` as given.
fn tiny(qos: &str) -> String {
    tiny_named("leaf{}", qos)
}

/// [`tiny`] with the leaves named so (`{}` in `leaf`: the leaf's number).
fn tiny_named(leaf: &str, qos: &str) -> String {
    format!(
        "use std::hardware::{{sb7800, connectx5}}\n\
         fabric tiny {{\n\
             topology {{\n\
                 switch spine : sb7800 {{ level = 2 }}\n\
                 switch leaf[1..=2] : sb7800 {{ level = 1, name = \"{leaf}\" }}\n\
                 hca host[1..=4] : connectx5 {{ name = \"h{{}}\" }}\n\
                 for l in 1..=2 {{ link leaf[l].p[36] <-> spine.p[l] }}\n\
                 for n in 1..=4 {{ link host[n].p[1] <-> leaf[(n - 1) / 2 + 1].p[(n - 1) % 2 + 1] }}\n\
             }}\n\
             vls {{ budget = 8 }}\n\
             routing {{ engine = fat_tree }}\n\
             {qos}\n\
         }}\n"
    )
}

fn built(qos: &str) -> (FabricState, String) {
    built_from(&tiny(qos))
}

fn built_from(src: &str) -> (FabricState, String) {
    let c = check("tiny.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let b = weft_compiler::build::build(&c.elaborated.unwrap()).unwrap_or_else(|d| panic!("{d:?}"));
    let state = b.state.state().clone();
    let policy = qos_policy(&state, &b.lanes, b.layers.as_ref()).unwrap();
    (state, policy)
}

fn host(state: &FabricState, name: &str) -> (u64, u16) {
    let f = &state.fabric;
    let n = f.find(name).unwrap_or_else(|| panic!("no {name}"));
    let lid = state.lids.get(n, PortNum(1)).unwrap().0;
    let guid = lid_port_guid(state, lid).unwrap();
    assert_eq!(
        guid,
        f.node(n).port(PortNum(1)).unwrap().guid.0,
        "{name}'s LID is its port's"
    );
    let _ = PortRef::new(n, 1);
    (guid, lid)
}

#[test]
fn moved_flows_are_copies_of_the_fast_lane_rules_on_the_slow_sl() {
    let (state, base) = built(
        "qos {\n class mgmt { vl = 0, priority = high, weight = 8, match { service_id = 0x10..0x20 } }\n class bulk { lanes = dftree, weight = 64 }\n class storage { lanes = dftree, weight = 32, match { service_id = 0x2000..0x3000 } }\n }",
    );
    // No flows: the policy as built.
    assert_eq!(with_slow_flows(&base, &state, &[]).unwrap(), base);
    let (h1, _) = host(&state, "h1");
    let (h2, _) = host(&state, "h2");
    let (_, l4) = host(&state, "h4");
    // bulk (the default class): SLs 1 (fast) and 2 (slow); storage: 3 and 4.
    let flows = [
        SlowFlow {
            src_port_guid: h2,
            dst_lid: l4,
            fast_sl: 1,
            slow_sl: 2,
        },
        SlowFlow {
            src_port_guid: h1,
            dst_lid: l4,
            fast_sl: 1,
            slow_sl: 2,
        },
        SlowFlow {
            src_port_guid: h1,
            dst_lid: l4,
            fast_sl: 3,
            slow_sl: 4,
        },
    ];
    let text = with_slow_flows(&base, &state, &flows).unwrap();
    // Any order of the flows, the same text.
    let mut rev = flows;
    rev.reverse();
    assert_eq!(with_slow_flows(&base, &state, &rev).unwrap(), text);
    // The base's rules all still there, in order.
    let rules = |t: &str| -> Vec<String> {
        t.split("    qos-match-rule\n")
            .skip(1)
            .filter(|r| !r.contains("dFtree"))
            .map(|r| {
                r.split("    end-qos-match-rule\n")
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(rules(&text), rules(&base));
    insta::assert_snapshot!(text);
}

#[test]
fn a_policy_weft_did_not_write_is_refused() {
    let (state, _) = built("qos {\n class bulk { lanes = dftree }\n }");
    let (h1, _) = host(&state, "h1");
    let (_, l4) = host(&state, "h4");
    let flows = [SlowFlow {
        src_port_guid: h1,
        dst_lid: l4,
        fast_sl: 0,
        slow_sl: 1,
    }];
    let e = with_slow_flows("qos-levels\nend-qos-levels\n", &state, &flows).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the QoS policy to add dFtree's moves to is not one weft wrote: it has no `end-port-groups`"
    );
    let (_, base) = built("qos {\n class bulk { lanes = dftree }\n }");
    let bad = [SlowFlow {
        dst_lid: 999,
        ..flows[0]
    }];
    assert_eq!(
        with_slow_flows(&base, &state, &bad)
            .unwrap_err()
            .to_string(),
        "dFtree moved a flow toward LID 999, which no port of the state owns"
    );
}

/// The policy's sections are found by their keyword lines alone: leaves whose names contain
/// `end-port-groups` and `qos-match-rules` (in their port groups' `use:` lines) do not cut
/// the base in the middle of a port group.
#[test]
fn section_keywords_are_whole_lines_not_names_containing_them() {
    let (state, base) = built_from(&tiny_named(
        "leaf{}-qos-match-rules-end-port-groups",
        "qos {\n class bulk { lanes = dftree }\n }",
    ));
    assert!(
        base.contains("use: leaf1-qos-match-rules-end-port-groups\n"),
        "{base}"
    );
    let (h1, _) = host(&state, "h1");
    let (_, l4) = host(&state, "h4");
    let text = with_slow_flows(
        &base,
        &state,
        &[SlowFlow {
            src_port_guid: h1,
            dst_lid: l4,
            fast_sl: 0,
            slow_sl: 1,
        }],
    )
    .unwrap();
    // Every base port group is whole, before dFtree's two; then the base's levels and rules.
    let (groups, after) = text.split_once("\nend-port-groups\n").unwrap();
    let (base_groups, base_after) = base.split_once("\nend-port-groups\n").unwrap();
    let ours = groups
        .strip_prefix(base_groups)
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(ours.matches("    port-group\n").count(), 2, "{text}");
    assert!(
        ours.contains(&format!("name: weft-dftree-dst-{l4}\n")),
        "{text}"
    );
    assert!(
        ours.contains(&format!("name: weft-dftree-src-{l4}-sl1\n")),
        "{text}"
    );
    assert!(
        groups.matches("    port-group\n").count() == groups.matches("    end-port-group").count(),
        "{text}"
    );
    // The levels untouched (SL1 is there already), the moved pair's rule (after DEFAULT's,
    // the only base rule) in the rules.
    let (levels, rules) = after.split_once("\nqos-match-rules\n").unwrap();
    assert_eq!(
        levels,
        base_after.split_once("\nqos-match-rules\n").unwrap().0
    );
    assert!(
        rules.starts_with(&format!(
            "    qos-match-rule\n        use: dFtree slow lane toward LID {l4} (SL0 to SL1)\n"
        )),
        "{text}"
    );
}

//! Tenants and shared partitions become P_Key tables: each tenant host a full member of its
//! tenant's partition and a limited member of every shared one and of the default partition;
//! each shared host a full member of its partition; other hosts in the default partition only
//! (limited); switches without a table (full default members). Deterministic.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_compiler::{check, NoFiles};
use weft_fabric::{FabricState, PKey, PortNum, PortRef};
use weft_formats::state_json::ToJson;

const SRC: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice { pkey = 0x8001, hosts = cn001..=cn003 }\n    tenant bob { pkey = 0x0002, hosts = [cn004, cn005] }\n    shared storage { pkey = 0x8010, hosts = cn007, members = limited }\n}\n";

fn built(src: &str) -> FabricState {
    let c = check("t.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    weft_compiler::build::build(&c.elaborated.unwrap())
        .unwrap_or_else(|d| panic!("{d:?}"))
        .state
        .into_inner()
}

fn table(st: &FabricState, name: &str) -> Option<Vec<u16>> {
    let id = st.fabric.find(name).unwrap_or_else(|| panic!("{name}"));
    let port = if st.fabric.node(id).is_switch() { 0 } else { 1 };
    st.ports
        .get(&PortRef {
            node: id,
            port: PortNum(port),
        })
        .and_then(|p| p.pkeys.as_ref())
        .map(|t| t.iter().map(|k: &PKey| k.0).collect())
}

#[test]
fn tenants_become_pkey_tables() {
    let st = built(SRC);
    assert_eq!(table(&st, "cn001"), Some(vec![0x7fff, 0x8001, 0x0010]));
    assert_eq!(table(&st, "cn003"), Some(vec![0x7fff, 0x8001, 0x0010]));
    assert_eq!(table(&st, "cn004"), Some(vec![0x7fff, 0x8002, 0x0010]));
    assert_eq!(table(&st, "cn006"), Some(vec![0x7fff]));
    assert_eq!(table(&st, "cn007"), Some(vec![0x7fff, 0x8010]));
    assert_eq!(table(&st, "leaf1"), None);
    // The same text, the same tables (and state).
    assert_eq!(st.to_json(), built(SRC).to_json());
}

/// `members = full` makes every tenant host a full member of the shared partition.
#[test]
fn shared_full_members() {
    let st = built(&SRC.replace("members = limited", "members = full"));
    assert_eq!(table(&st, "cn002"), Some(vec![0x7fff, 0x8001, 0x8010]));
}

/// Without tenants no port has a table.
#[test]
fn no_tenants_no_tables() {
    let src: String = SRC
        .lines()
        .filter(|l| !l.contains("tenant") && !l.contains("shared"))
        .map(|l| format!("{l}\n"))
        .collect();
    let st = built(&src);
    assert!(st.ports.values().all(|p| p.pkeys.is_none()));
}

/// The partitions are recorded as declared, beside the tables: each tenant's hosts full
/// members of its partition, every tenant host a member of the shared one as `members` says,
/// the shared hosts full members of theirs.
#[test]
fn partitions_recorded_as_declared() {
    use weft_fabric::Membership;
    let st = built(SRC);
    let names: Vec<&str> = st.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["alice", "bob", "storage"]);
    let members = |name: &str| -> Vec<(String, Membership)> {
        let p = st.partitions.iter().find(|p| p.name == name).unwrap();
        p.members
            .iter()
            .map(|(r, &m)| (st.fabric.node(r.node).name().to_owned(), m))
            .collect()
    };
    let full = |h: &str| (h.to_owned(), Membership::Full);
    let limited = |h: &str| (h.to_owned(), Membership::Limited);
    assert_eq!(
        members("alice"),
        [full("cn001"), full("cn002"), full("cn003")]
    );
    assert_eq!(members("bob"), [full("cn004"), full("cn005")]);
    assert_eq!(
        members("storage"),
        [
            limited("cn001"),
            limited("cn002"),
            limited("cn003"),
            limited("cn004"),
            limited("cn005"),
            full("cn007")
        ]
    );
    assert_eq!(
        st.partitions.iter().map(|p| p.pkey).collect::<Vec<_>>(),
        [0x0001, 0x0002, 0x0010]
    );
}

/// Two tenants with classes: each tenant's pairs on its class's SL (and the partition records
/// the class), other pairs on every class's.
#[test]
fn tenants_with_classes_take_their_sls() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    qos {\n        class compute { weight = 8 }\n        class bulk { weight = 2, match { service_id = 0x100 } }\n    }\n    tenant alice { pkey = 0x8001, hosts = cn001..=cn003, class = bulk }\n    tenant bob { pkey = 0x8002, hosts = [cn004, cn005], class = compute }\n}\n";
    let st = built(src);
    let port = |n: &str| PortRef::new(st.fabric.find(n).unwrap(), 1);
    let lid = |n: &str| st.lids.get(st.fabric.find(n).unwrap(), PortNum(1)).unwrap();
    assert_eq!(
        st.path_sls(port("cn001"), lid("cn003")).0,
        0b10,
        "alice: bulk"
    );
    assert_eq!(
        st.path_sls(port("cn004"), lid("cn005")).0,
        0b01,
        "bob: compute"
    );
    assert_eq!(
        st.path_sls(port("cn006"), lid("cn007")).0,
        0b11,
        "no tenant: both"
    );
    let class = |name: &str| {
        st.partitions
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.class.as_ref())
            .map(|c| (c.name.clone(), c.sls.0))
    };
    assert_eq!(class("alice"), Some(("bulk".to_owned(), 0b10)));
    assert_eq!(class("bob"), Some(("compute".to_owned(), 0b01)));
}

/// [`SRC`] with `line` added at the end of its fabric block.
fn with_line(line: &str) -> String {
    let end = SRC.rfind('}').unwrap();
    format!("{}{line}}}\n", &SRC[..end])
}

/// `sm on NODES`: the state says where the SM runs (an end node's port 1, or `port = N`; a
/// switch's port 0), and a host the SM runs on holds the default key as a full member
/// (`0xffff`, first), its tenant's keys as any host of its tenant.
#[test]
fn sm_on_nodes_is_recorded_and_a_full_default_member() {
    let st = built(&with_line("    sm on [cn002, cn006, leaf1]\n"));
    let at = |n: &str, p: u8| PortRef::new(st.fabric.find(n).unwrap(), p);
    let mut want = vec![at("cn002", 1), at("cn006", 1), at("leaf1", 0)];
    want.sort();
    assert_eq!(st.sm, want);
    assert_eq!(table(&st, "cn002"), Some(vec![0xffff, 0x8001, 0x0010]));
    assert_eq!(table(&st, "cn006"), Some(vec![0xffff]));
    assert_eq!(table(&st, "cn001"), Some(vec![0x7fff, 0x8001, 0x0010]));
    assert_eq!(table(&st, "leaf1"), None);
    // Without `sm`: no SM ports, and cn002's and cn006's default key limited.
    let plain = built(SRC);
    assert!(plain.sm.is_empty());
    assert_eq!(table(&plain, "cn006"), Some(vec![0x7fff]));
    // Another port of a host.
    let src = with_line("    sm on cn006 { port = 1 }\n");
    assert_eq!(built(&src).sm, vec![at("cn006", 1)]);
}

/// What `sm` refuses, each with its reason.
#[test]
fn sm_mistakes_are_named() {
    let cases = [
        ("    sm\n", "`sm` needs the node it runs on"),
        ("    sm main on cn001\n", "`sm` takes no name"),
        (
            "    sm on cn001 { port = 2 }\n",
            "`cn001` has 1 port(s), not port 2",
        ),
        ("    sm on leaf1 { port = 1 }\n", "`leaf1` is a switch"),
        ("    sm on [cn001, cn001]\n", "`cn001` is named twice"),
        ("    sm on nobody\n", "cannot find `nobody`"),
        ("    sm on cn001 { lid = 3 }\n", "lid"),
        (
            "    sm on cn001\n    sm on cn002\n",
            "a second `sm` section",
        ),
    ];
    for (line, want) in cases {
        let c = check("t.weft", &with_line(line), &NoFiles);
        let text: Vec<String> = c.diagnostics.iter().map(|d| d.message.clone()).collect();
        assert!(c.has_errors(), "{line}: accepted");
        assert!(text.iter().any(|m| m.contains(want)), "{line}: {text:?}");
    }
}

/// Hosts as operators list them: a Slurm host list names exactly its hosts, zero padding
/// kept (`cn[001-003,006]` is cn001, cn002, cn003 and cn006), lists of host lists and names are
/// read in place, and `sm on` takes one too. An exclusive name range leaves its end out, with
/// a warning; `..=` includes it.
#[test]
fn host_lists_name_exactly_their_hosts() {
    let src = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice { pkey = 0x8001, hosts = cn[001-003,006] }\n    tenant bob { pkey = 0x8002, hosts = [cn[004-005], cn007] }\n    sm on cn[008]\n}\n";
    // `cn[008]` alone is an index (of no array): a host list needs a range or a comma.
    let c = check("t.weft", src, &NoFiles);
    assert!(c.has_errors(), "`cn[008]` is not a host list");
    let st = built(&src.replace("cn[008]", "cn[007-008]"));
    for (host, key) in [
        ("cn001", 0x8001),
        ("cn002", 0x8001),
        ("cn003", 0x8001),
        ("cn006", 0x8001),
        ("cn004", 0x8002),
        ("cn005", 0x8002),
        ("cn007", 0x8002),
    ] {
        let table = table(&st, host).unwrap();
        assert_eq!(table.get(1).copied(), Some(key), "{host}: {table:x?}");
    }
    // Both SM hosts are full default members.
    assert_eq!(table(&st, "cn007").unwrap().first(), Some(&0xffff));
    assert_eq!(table(&st, "cn008"), Some(vec![0xffff]));
    let members = |st: &FabricState, pkey: u16| {
        st.partitions
            .iter()
            .find(|p| p.pkey == pkey)
            .map_or(0, |p| p.members.len())
    };
    assert_eq!((members(&st, 1), members(&st, 2)), (4, 3));
    // `cn001..cn004` stops before cn004, and says so; `cn001..=cn004` does not.
    let exclusive = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice { pkey = 0x8001, hosts = cn001..cn004 }\n}\n";
    let c = check("t.weft", exclusive, &NoFiles);
    let codes: Vec<&str> = c.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["weft::exclusive_node_range"]);
    assert_eq!(members(&built(exclusive), 1), 3);
    let inclusive = exclusive.replace("..", "..=");
    assert!(check("t.weft", &inclusive, &NoFiles).diagnostics.is_empty());
    assert_eq!(members(&built(&inclusive), 1), 4);
}

/// A tenant's `hosts` may name a host (`host = "…"` on its HCAs): every HCA of it joins the
/// partition, and an HCA may still be named alone. The host name is looked up only where no
/// node has it.
#[test]
fn a_host_name_stands_for_all_its_hcas() {
    let src = "use std::hardware::{qm9700, connectx7}\nuse std::topology::superpod\n\
               fabric su {\n    topology = superpod(units: 1, nodes: 4, switch: qm9700, hca: connectx7)\n\
               tenant ai { pkey = 0x8001, hosts = [\"dgx001\", \"dgx002\"] }\n\
               tenant one { pkey = 0x8002, hosts = node(\"dgx003 mlx5_5\") }\n}\n";
    let st = built(src);
    let members = |name: &str| -> Vec<String> {
        let p = st.partitions.iter().find(|p| p.name == name).unwrap();
        p.members
            .keys()
            .map(|r| st.fabric.node(r.node).name().to_owned())
            .collect()
    };
    let ai = members("ai");
    assert_eq!(ai.len(), 16, "{ai:?}");
    for h in ["dgx001", "dgx002"] {
        for r in 0..8 {
            assert!(
                ai.contains(&format!("{h} mlx5_{r}")),
                "{h} rail {r}: {ai:?}"
            );
        }
    }
    assert_eq!(members("one"), ["dgx003 mlx5_5"]);
    assert_eq!(table(&st, "dgx002 mlx5_7"), Some(vec![0x7fff, 0x8001]));
    assert_eq!(table(&st, "dgx003 mlx5_4"), Some(vec![0x7fff]));
}

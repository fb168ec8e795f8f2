//! Tenants and shared partitions become P_Key tables: each tenant host a full member of its
//! tenant's partition and a limited member of every shared one and of the default partition;
//! each shared host a full member of its partition; other hosts in the default partition only
//! (limited); switches without a table (full default members). Deterministic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use weft_compiler::{check, NoFiles};
use weft_fabric::{FabricState, PKey, PortNum, PortRef};

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

//! VMs on vSwitch SR-IOV hypervisors: VF LIDs, GUIDs and P_Key tables, and vSwitchFatTree —
//! Paper A's Fig. 2 as a golden test, and with one VM per hypervisor the very routes `fat_tree`
//! gives the hypervisors themselves.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_compiler::{check, NoFiles};
use weft_fabric::{FabricState, Lid, NodeId, PortNum};
use weft_formats::state_json::ToJson;

fn built(src: &str) -> FabricState {
    let c = check("t.weft", src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    weft_compiler::build::build(&c.elaborated.unwrap())
        .unwrap_or_else(|d| panic!("{d:?}"))
        .state
        .into_inner()
}

fn node(st: &FabricState, name: &str) -> NodeId {
    st.fabric.find(name).unwrap_or_else(|| panic!("{name}"))
}

fn entry(st: &FabricState, switch: &str, lid: Lid) -> u8 {
    st.switches[&node(st, switch)].lft.get(lid).unwrap().0
}

fn vm_lid(st: &FabricState, vm: &str) -> Lid {
    st.lids
        .vports
        .iter()
        .find(|v| v.vm.as_deref() == Some(vm))
        .and_then(|v| v.lid)
        .unwrap_or_else(|| panic!("{vm}"))
}

const FIG2: &str = include_str!("../../../examples/vswitch-fig2.weft");

/// Fig. 2: which root each VM's main path takes, read from the other leaf's up entry (leaf
/// port 11 leads to root1, 12 to root2). vsw1 and vsw2 alternate (1/2 each); vsw4 goes
/// first on leaf2 (fewest VMs: its VM weighs a whole cable) and takes root1, so vsw3's three
/// VMs (1/3 each) all take root2: each root's down link to each leaf carries one cable.
#[test]
fn fig2_golden() {
    let st = built(FIG2);
    let root_of = |vm: &str, other_leaf: &str| match entry(&st, other_leaf, vm_lid(&st, vm)) {
        11 => "root1",
        12 => "root2",
        p => panic!("{vm}: port {p}"),
    };
    let got: Vec<(&str, &str)> = ["vm1", "vm2", "vm3", "vm4"]
        .iter()
        .map(|&vm| (vm, root_of(vm, "leaf2")))
        .chain(
            ["vm5", "vm6", "vm7", "vm8"]
                .iter()
                .map(|&vm| (vm, root_of(vm, "leaf1"))),
        )
        .collect();
    assert_eq!(
        got,
        [
            ("vm1", "root1"),
            ("vm2", "root2"),
            ("vm3", "root1"),
            ("vm4", "root2"),
            ("vm5", "root2"),
            ("vm6", "root2"),
            ("vm7", "root2"),
            ("vm8", "root1"),
        ]
    );
    // Each VM's leaf delivers it to its hypervisor's port.
    for (vm, leaf, port) in [
        ("vm1", "leaf1", 1),
        ("vm4", "leaf1", 2),
        ("vm8", "leaf2", 2),
    ] {
        assert_eq!(entry(&st, leaf, vm_lid(&st, vm)), port, "{vm}");
    }
    // Dynamic LIDs: one per VM, right after the physical ones, in declaration order.
    let physical = st.fabric.nodes().len() as u16;
    let lids: Vec<u16> = (1..=8).map(|i| vm_lid(&st, &format!("vm{i}")).0).collect();
    assert_eq!(lids, (physical + 1..=physical + 8).collect::<Vec<_>>());
    // Free VFs have GUIDs but no LIDs; every VF GUID is its own.
    assert_eq!(st.lids.vports.len(), 16);
    assert_eq!(st.lids.vports.iter().filter(|v| v.lid.is_none()).count(), 8);
    let mut guids: Vec<u64> = st.lids.vports.iter().map(|v| v.guid.0).collect();
    guids.extend(st.fabric.nodes().iter().map(|n| n.guid().0));
    let n = guids.len();
    guids.sort_unstable();
    guids.dedup();
    assert_eq!(guids.len(), n);
    // A VM's VF is a full member of its tenant's partition; a free VF of nothing but the
    // default partition (limited); the hypervisor's own port stays out of the tenant.
    let vf = |vm: Option<&str>| {
        st.lids
            .vports
            .iter()
            .find(|v| v.vm.as_deref() == vm)
            .and_then(|v| v.pkeys.clone())
            .map(|t| t.iter().map(|k| k.0).collect::<Vec<u16>>())
    };
    assert_eq!(vf(Some("vm3")), Some(vec![0x7fff, 0x8001]));
    assert_eq!(vf(None), Some(vec![0x7fff]));
    let pf = weft_fabric::PortRef::new(node(&st, "vsw1"), 1);
    assert_eq!(
        st.ports[&pf]
            .pkeys
            .as_ref()
            .map(|t| t.iter().map(|k| k.0).collect::<Vec<_>>()),
        Some(vec![0x7fff])
    );
    // Deterministic.
    assert_eq!(st.to_json(), built(FIG2).to_json());
}

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric t {\n    topology = fat_tree(levels: 3, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n";

/// With one VM per hypervisor (dynamic LIDs), every VM's column is the column `fat_tree` gives
/// its hypervisor on the same tree without VMs, and so is every hypervisor's own.
#[test]
fn one_vm_per_hypervisor_routes_as_fat_tree() {
    let plain = built(&format!("{TREE}}}\n"));
    let hosts: Vec<String> = plain
        .fabric
        .nodes()
        .iter()
        .filter(|n| !n.is_switch())
        .map(|n| n.name().to_owned())
        .collect();
    let mut vms = String::from("    tenant cloud {\n        pkey = 0x8001\n");
    vms += &format!(
        "        vms on {}..={} {{ vfs_per_host = 2 }}\n",
        hosts[0],
        hosts[hosts.len() - 1]
    );
    for h in &hosts {
        vms += &format!("        vm vm_{h} on {h}\n");
    }
    vms += "    }\n";
    let with = built(&format!("{TREE}{vms}}}\n"));
    assert_eq!(
        with.lids.vports.iter().filter(|v| v.lid.is_some()).count(),
        hosts.len()
    );
    let mut compared = 0;
    for h in &hosts {
        let id = node(&plain, h);
        let lid = plain.lids.get(id, PortNum(1)).unwrap();
        let vm = vm_lid(&with, &format!("vm_{h}"));
        for (&s, t) in &plain.switches {
            let want = t.lft.get(lid);
            assert_eq!(
                with.switches[&s].lft.get(vm),
                want,
                "{h}'s VM at switch {s:?}"
            );
            assert_eq!(with.switches[&s].lft.get(lid), want, "{h} at switch {s:?}");
            compared += 2;
        }
    }
    assert!(compared > 1000, "{compared}");
}

/// Prepopulated LIDs: every VF has one, from a 64-LID block, a hypervisor's VFs in one block,
/// hypervisors of one leaf side by side; the budget counts every VF.
#[test]
fn prepopulated_lids_are_block_aware() {
    let src = format!(
        "{TREE}    tenant cloud {{\n        pkey = 0x8001\n        vms on cn001..=cn040 {{ vfs_per_host = 6, lids = prepopulated }}\n        vm a on cn003\n    }}\n}}\n"
    );
    let st = built(&src);
    let lids: Vec<u16> = st
        .lids
        .vports
        .iter()
        .filter_map(|v| v.lid.map(|l| l.0))
        .collect();
    assert_eq!(lids.len(), 240);
    let first = *lids.iter().min().unwrap();
    assert_eq!(first % 64, 0);
    assert!(u32::from(first) > u32::from(st.lids.max_lid(&st.fabric)) - 300);
    for chunk in st.lids.vports.chunks(6) {
        let block: Vec<u16> = chunk.iter().map(|v| v.lid.unwrap().0 / 64).collect();
        assert!(block.iter().all(|&b| b == block[0]), "{block:?}");
    }
    // The VM runs on its hypervisor's first VF and has that VF's LID.
    let v = st.lids.vports.iter().find(|v| v.vm.is_some()).unwrap();
    assert_eq!((st.fabric.node(v.host.node).name(), v.vf), ("cn003", 0));
    // Too many VFs for the LID space: an error at the pool.
    let big = format!(
        "{}    tenant cloud {{\n        pkey = 0x8001\n        vms on cn0001..=cn1024 {{ vfs_per_host = 64, lids = prepopulated }}\n    }}\n}}\n",
        TREE.replace("radix: 8", "radix: 16, host_name: \"cn{:04}\"")
    );
    let c = check("t.weft", &big, &NoFiles);
    let e = weft_compiler::build::build(&c.elaborated.unwrap())
        .err()
        .unwrap();
    assert_eq!(e[0].code.as_str(), "weft::lid_budget_exceeded", "{e:?}");
}

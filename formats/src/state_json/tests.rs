//! Tests of state.json: round trips, versions, and every malformed document refused with its path.

use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};
use weft_fabric::{
    FabricBuilder, Guid, LinkId, NodeKind, NodeSpec, PortNum, PortRef, VirtualPort, VlWeight,
};
use weft_fabric::{Mft, TrafficClass};

/// Two switches `sw1`, `sw2` cabled on port 1; `h1` on `sw1` port 2, `h2` on `sw2` port 2.
fn small() -> FabricState {
    let mut b = FabricBuilder::new("small");
    let s1 = b
        .add_node(NodeSpec::new(
            "sw1",
            NodeKind::Switch,
            Guid(0xf452_1403_0000_0100),
            4,
        ))
        .unwrap();
    let s2 = b
        .add_node(NodeSpec::new(
            "sw2",
            NodeKind::Switch,
            Guid(0xf452_1403_0000_0200),
            4,
        ))
        .unwrap();
    let h1 = b
        .add_node(NodeSpec::new(
            "h1",
            NodeKind::Hca,
            Guid(0xf452_1403_0000_0300),
            1,
        ))
        .unwrap();
    let h2 = b
        .add_node(NodeSpec::new(
            "h2",
            NodeKind::Hca,
            Guid(0xf452_1403_0000_0400),
            1,
        ))
        .unwrap();
    b.add_link(PortRef::new(s1, 1), PortRef::new(s2, 1))
        .unwrap();
    b.add_link(PortRef::new(h1, 1), PortRef::new(s1, 2))
        .unwrap();
    b.add_link(PortRef::new(h2, 1), PortRef::new(s2, 2))
        .unwrap();
    let mut st = FabricState::new(b.finish());
    for (n, p, l) in [(s1, 0, 1), (s2, 0, 2), (h1, 1, 3), (h2, 1, 4)] {
        st.lids
            .base
            .entry(n)
            .or_default()
            .insert(PortNum(p), Lid(l));
    }
    for (x, to_other, to_host) in [(s1, 1u8, 2u8), (s2, 1, 2)] {
        let mut s = SwitchState::default();
        for lid in 1..=4u16 {
            let own = u32::from(lid) == x.0 + 1;
            let local_host = u32::from(lid) == x.0 + 3;
            s.lft.set(
                Lid(lid),
                PortNum(if own {
                    0
                } else if local_host {
                    to_host
                } else {
                    to_other
                }),
            );
        }
        st.switches.insert(x, s);
    }
    st
}

fn value(st: &FabricState) -> Value {
    serde_json::from_str(&st.to_json()).unwrap()
}

fn read_value(v: &Value) -> Result<ValidState, StateErrors> {
    read(&serde_json::to_string(v).unwrap())
}

/// The rendered errors of a state edited by `edit` (with the fingerprint removed, so the
/// checks behind it are what speaks).
fn errors_of(edit: impl FnOnce(&mut Value)) -> String {
    errors_of_state(&small(), edit)
}

/// [`errors_of`] for another state.
fn errors_of_state(st: &FabricState, edit: impl FnOnce(&mut Value)) -> String {
    let mut v = value(st);
    v.as_object_mut().unwrap().remove("fingerprint");
    edit(&mut v);
    match read_value(&v) {
        Ok(_) => "accepted".to_owned(),
        Err(e) => {
            let codes: Vec<String> = e.0.iter().map(StateError::code).collect();
            format!("{}\n{e}", codes.join(", "))
        }
    }
}

#[test]
fn a_written_state_reads_back_equal() {
    let mut st = small();
    st.ports.insert(
        PortRef::new(NodeId(2), 1),
        PortState {
            sl2vl: Some([1; 16]),
            vlarb: Some(VlArb {
                high_limit: 4,
                high: vec![VlWeight { vl: 0, weight: 16 }],
                low: vec![VlWeight { vl: 1, weight: 64 }],
            }),
            pkeys: Some(vec![PKey(0xffff), PKey(0x8001)]),
        },
    );
    st.path_sl
        .set_by_source([(PortRef::new(NodeId(2), 1), Lid(4), SlSet(0b110))]);
    st.path_sl
        .set_by_dlid([(Lid(1), SlSet(0b1)), (Lid(2), SlSet(0b1))]);
    st.switches.get_mut(&NodeId(0)).unwrap().sl2vl_all =
        Some([0, 1, 2, 3, 0, 1, 2, 3, 15, 15, 15, 15, 15, 15, 15, 15]);
    st.path_sl.set_by_switch([
        (NodeId(1), Lid(3), SlSet(0b10)),
        (NodeId(1), Lid(4), SlSet(0b10)),
        (NodeId(0), Lid(2), SlSet(0b1000)),
    ]);
    st.partitions = vec![Partition {
        name: "alice".to_owned(),
        pkey: 0x0001,
        members: [
            (PortRef::new(NodeId(2), 1), Membership::Full),
            (PortRef::new(NodeId(3), 1), Membership::Limited),
        ]
        .into_iter()
        .collect(),
        vms: BTreeMap::new(),
        class: Some(TrafficClass {
            name: "compute".to_owned(),
            sls: SlSet(0b10),
            vls: 0b10,
        }),
    }];
    st.max_vls = Some(4);
    st.sm = vec![PortRef::new(NodeId(0), 0), PortRef::new(NodeId(2), 1)];
    let text = st.to_json();
    let back = read(&text).unwrap();
    assert_eq!(*back, st);
    assert_eq!(back.to_json(), text, "byte-identical when written again");
    insta::assert_snapshot!(text);
}

/// `max_vls` and `sm` are written only when set: a state without them is the v1 file it was
/// before they existed, and reads back without them.
#[test]
fn max_vls_and_sm_are_written_only_when_set() {
    let st = small();
    let text = st.to_json();
    assert!(
        !text.contains("max_vls") && !text.contains("\"sm\""),
        "{text}"
    );
    let back = read(&text).unwrap();
    assert_eq!((back.max_vls, back.sm.is_empty()), (None, true));
}

/// dFtree's lane pairs are written only when there are, read back, and a bad pair (one SL
/// twice, above 15, out of order) is refused naming it.
#[test]
fn dftree_lanes_read_back_and_bad_pairs_are_refused() {
    let mut st = small();
    assert!(!st.to_json().contains("dftree_lanes"));
    st.dftree_lanes = vec![(Sl(1), Sl(2)), (Sl(3), Sl(4))];
    let text = st.to_json();
    assert!(
        text.contains("\"dftree_lanes\": [[1, 2], [3, 4]]"),
        "{text}"
    );
    let back = read(&text).unwrap();
    assert_eq!(back.dftree_lanes, st.dftree_lanes);
    for (bad, what) in [
        ("[[1, 1]]", "uses one SL twice"),
        ("[[1, 16]]", "names an SL above 15"),
        ("[[3, 4], [1, 2]]", "out of order"),
    ] {
        let text = text.replace("[[1, 2], [3, 4]]", bad);
        let err = read(&text).unwrap_err().to_string();
        let all = format!("{err} {:?}", read(&text).unwrap_err());
        assert!(all.contains(what), "{bad}: {all}");
    }
}

/// A role is written only when it is not `host` (so states of fabrics without service nodes
/// are the files they were), reads back, and is refused on a switch.
#[test]
fn roles_are_written_only_when_not_host() {
    let st = small();
    let text = st.to_json();
    assert!(!text.contains("\"role\""), "{text}");
    let mut b = FabricBuilder::from(st.fabric.clone());
    assert!(b.set_role(NodeId(3), weft_fabric::Role::Aggregation));
    let mut with = st.clone();
    with.fabric = b.finish();
    let text = with.to_json();
    assert_eq!(
        text.matches("\"role\":\"aggregation\"").count(),
        1,
        "{text}"
    );
    let back = read(&text).unwrap();
    assert_eq!(
        back.fabric.node(NodeId(3)).role(),
        weft_fabric::Role::Aggregation
    );
    assert_eq!(back.fabric.node(NodeId(2)).role(), weft_fabric::Role::Host);
    assert_eq!(back.to_json(), text);
    let mut v = value(&st);
    v.as_object_mut().unwrap().remove("fingerprint");
    v["fabric"]["nodes"][0]["role"] = json!("storage");
    let err = read_value(&v).unwrap_err().to_string();
    assert!(
        err.contains("is a switch and cannot have the role `storage`"),
        "{err}"
    );
}

/// A change to a state's JSON.
type Edit = Box<dyn FnOnce(&mut Value)>;

#[test]
fn a_state_file_names_what_is_wrong() {
    let cases = [
        fabric_cases(),
        lid_cases(),
        table_cases(),
        extension_cases(),
    ];
    let mut out = String::new();
    for (name, edit) in cases.into_iter().flatten() {
        out += &format!("## {name}\n{}\n\n", errors_of(edit));
    }
    insta::assert_snapshot!(out);
}

/// Broken fabrics: ports, links, node GUIDs and names.
fn fabric_cases() -> Vec<(&'static str, Edit)> {
    vec![
        (
            "port 0 on a link",
            Box::new(|v: &mut Value| v["fabric"]["links"][0]["a"][1] = json!(0)),
        ),
        (
            "port past the port count",
            Box::new(|v: &mut Value| v["fabric"]["links"][1]["b"][1] = json!(9)),
        ),
        (
            "a link to a GUID nobody has",
            Box::new(|v: &mut Value| v["fabric"]["links"][0]["b"][0] = json!("0x1234")),
        ),
        (
            "duplicate node GUID",
            Box::new(|v: &mut Value| {
                v["fabric"]["nodes"][1]["guid"] = v["fabric"]["nodes"][0]["guid"].clone()
            }),
        ),
        (
            "duplicate node name",
            Box::new(|v: &mut Value| v["fabric"]["nodes"][3]["name"] = json!("h1")),
        ),
        (
            "GUID 0",
            Box::new(|v: &mut Value| v["fabric"]["nodes"][2]["guid"] = json!("0x0")),
        ),
        (
            "a GUID as a JSON number",
            Box::new(|v: &mut Value| {
                v["fabric"]["nodes"][2]["guid"] = json!(17_603_012_467_410_093_824u64)
            }),
        ),
    ]
}

/// Broken LIDs and LMC.
fn lid_cases() -> Vec<(&'static str, Edit)> {
    vec![
        (
            "LID past the unicast range",
            Box::new(|v: &mut Value| v["lids"][2][2] = json!(0xC000)),
        ),
        (
            "LMC 200",
            Box::new(|v: &mut Value| v["fabric"]["lmc"] = json!(200)),
        ),
        (
            "LID 0",
            Box::new(|v: &mut Value| v["lids"][3][2] = json!(0)),
        ),
        (
            "no LIDs at all",
            Box::new(|v: &mut Value| v["lids"] = json!([])),
        ),
        (
            "two ports with one LID",
            Box::new(|v: &mut Value| v["lids"][3][2] = json!(1)),
        ),
        (
            "a switch LID on port 1",
            Box::new(|v: &mut Value| v["lids"][0][1] = json!(1)),
        ),
    ]
}

/// Broken tables: path SLs, SL2VL maps, LFTs.
fn table_cases() -> Vec<(&'static str, Edit)> {
    vec![
        (
            "an empty SL set",
            Box::new(|v: &mut Value| v["path_sl"]["default"] = json!([])),
        ),
        (
            "SL 16",
            Box::new(|v: &mut Value| v["path_sl"]["by_dlid"] = json!([[1, 2, [16]]])),
        ),
        (
            "path SLs of a port without a LID",
            Box::new(|v: &mut Value| {
                v["path_sl"]["by_source"] = json!([["0xf452140300000300", 2, 1, 2, [1]]])
            }),
        ),
        (
            "per-switch path SLs of an HCA, and overlapping ranges",
            Box::new(|v: &mut Value| {
                v["path_sl"]["by_switch"] = json!([
                    ["0xf452140300000300", 1, 2, [1]],
                    ["0xf452140300000100", 1, 3, [1]],
                    ["0xf452140300000100", 3, 4, [2]]
                ])
            }),
        ),
        (
            "a map for all port pairs with VL 16",
            Box::new(|v: &mut Value| {
                v["switches"][0]["sl2vl_all"] =
                    json!([0, 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
            }),
        ),
        (
            "an LFT longer than LinearFDBCap",
            Box::new(|v: &mut Value| {
                v["fabric"]["nodes"][0]["linear_fdb_cap"] = json!(2);
            }),
        ),
        (
            "switch tables on an HCA",
            Box::new(|v: &mut Value| {
                let t = v["switches"][0].clone();
                let mut t = t;
                t["guid"] = json!("0xf452140300000300");
                v["switches"].as_array_mut().unwrap().push(t);
            }),
        ),
        (
            "an SL2VL row on a missing port",
            Box::new(|v: &mut Value| {
                v["switches"][0]["sl2vl"] =
                    json!([{"in_port": 7, "out_port": 1, "vl": vec![0; 16]}])
            }),
        ),
    ]
}

/// Broken P_Keys, partitions, VLs, SM ports and header fields.
fn extension_cases() -> Vec<(&'static str, Edit)> {
    vec![
        (
            "a P_Key of partition 0 and a duplicate",
            Box::new(|v: &mut Value| {
                v["ports"] = json!([{"guid": "0xf452140300000300", "port": 1,
                                     "pkeys": ["0x8000", "0x8001", "0x0001"]}])
            }),
        ),
        (
            "a P_Key table longer than the port's PartitionCap",
            Box::new(|v: &mut Value| {
                v["fabric"]["nodes"][2]["partition_cap"] = json!(2);
                v["ports"] = json!([{"guid": "0xf452140300000300", "port": 1,
                                     "pkeys": ["0x7fff", "0x8001", "0x0002"]}])
            }),
        ),
        (
            "partitions: a bad number, a name and a number twice, a switch and a port listed twice",
            Box::new(|v: &mut Value| {
                v["partitions"] = json!([
                    {"name": "a", "pkey": "0x8001", "members": []},
                    {"name": "b", "pkey": "0x0002",
                     "members": [["0xf452140300000100", 0, "full"],
                                 ["0xf452140300000300", 1, "full"],
                                 ["0xf452140300000300", 1, "limited"]]},
                    {"name": "b", "pkey": "0x0002", "members": [["0xf4521403000009ff", 1, "full"]]},
                    {"name": "", "pkey": "0x7fff", "members": [["0xf452140300000400", 2, "full"]]}
                ])
            }),
        ),
        (
            "max_vls 16",
            Box::new(|v: &mut Value| v["max_vls"] = json!(16)),
        ),
        (
            "SM ports that cannot be",
            Box::new(|v: &mut Value| {
                v["sm"] = json!([
                    ["0xf452140300000100", 3],
                    ["0xf452140300000300", 1],
                    ["0xf452140300000300", 1],
                    ["0xf452140300000300", 0],
                    ["0x1234", 1]
                ])
            }),
        ),
        (
            "an unknown field",
            Box::new(|v: &mut Value| v["fabric"]["nodes"][0]["lvl"] = json!(1)),
        ),
        (
            "another version",
            Box::new(|v: &mut Value| v["version"] = json!(3)),
        ),
        (
            "an unversioned state",
            Box::new(|v: &mut Value| {
                v.as_object_mut().unwrap().remove("format");
                v.as_object_mut().unwrap().remove("version");
            }),
        ),
    ]
}

#[test]
fn an_edited_state_is_refused_unless_the_fingerprint_goes() {
    let mut v = value(&small());
    v["lids"][3][2] = json!(8);
    let e = read_value(&v).unwrap_err();
    assert_eq!(e.0.len(), 1, "{e}");
    assert_eq!(e.0[0].code(), "weft::state::fingerprint", "{e}");
    v.as_object_mut().unwrap().remove("fingerprint");
    let ok = read_value(&v).unwrap();
    assert_eq!(ok.lids.get(NodeId(3), PortNum(1)), Some(Lid(8)));
}

#[test]
fn a_live_port_without_a_lid_is_named() {
    let mut st = small();
    st.lids.base.remove(&NodeId(3));
    let e = ValidState::new(st.clone()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`h2` (0xf452140300000400) port 1 is live but has no LID"
    );
    // A port whose cable is down needs none.
    let mut b = FabricBuilder::from(st.fabric.clone());
    b.set_link_down(LinkId(2));
    st.fabric = b.finish();
    assert!(ValidState::new(st).is_ok());
}

/// A VF whose port GUID is a physical port's (here `h2`'s port 1: its node GUID + 1) is
/// refused: `weft apply` finds a VF the fabric shows as a node by that GUID.
#[test]
fn a_vf_guid_that_is_a_physical_ports_is_named() {
    let mut st = small();
    let vf = |guid| VirtualPort {
        host: PortRef::new(NodeId(2), 1),
        vf: 0,
        guid: Guid(guid),
        lid: Some(Lid(5)),
        vm: None,
        pkeys: None,
    };
    st.lids.vports.push(vf(0xf452_1403_0000_0401));
    let e = ValidState::new(st.clone()).unwrap_err().to_string();
    assert!(e.contains("GUID 0xf452140300000401"), "{e}");
    st.lids.vports = vec![vf(0x0152_1403_0000_0300)];
    assert!(ValidState::new(st).is_ok());
}

#[test]
fn many_errors_of_one_kind_are_capped() {
    let mut st = small();
    for k in 0..30u16 {
        st.path_sl.by_dlid.push(DlidSls {
            lids: LidRange {
                lo: Lid(100 + 2 * k),
                hi: Lid(100 + 2 * k),
            },
            sls: SlSet(0),
        });
    }
    let e = ValidState::new(st).unwrap_err();
    assert_eq!(e.0.len(), 30);
    let text = e.to_string();
    assert_eq!(text.lines().count(), StateErrors::SHOWN + 1, "{text}");
    assert!(
        text.ends_with("… and 20 more like this (weft::state::path_sl)"),
        "{text}"
    );
}

/// [`small`] with the default partition's IPoIB group (MLID 0xc000: `h1` full, `h2`
/// send-only) forwarded by both switches, and a second group 0xc021 (block 1) on `sw2` only.
fn small_mc() -> FabricState {
    let mut st = small();
    let m = |l| Mlid::new(l).unwrap();
    st.multicast.groups.push(McGroup {
        mlid: m(0xC000),
        pkey: 0xffff,
        sl: Sl(0),
        members: [
            (PortRef::new(NodeId(2), 1), JoinState::FULL),
            (PortRef::new(NodeId(3), 1), JoinState::SEND_ONLY_NON_MEMBER),
        ]
        .into(),
    });
    st.multicast.groups.push(McGroup {
        mlid: m(0xC021),
        pkey: 0x8001,
        sl: Sl(3),
        members: [(PortRef::new(NodeId(3), 1), JoinState::FULL)].into(),
    });
    for (sw, ports) in [(0u32, vec![0u8, 1, 2]), (1, vec![1])] {
        let mask = PortMask::of(ports.into_iter().map(PortNum));
        st.multicast
            .mfts
            .entry(NodeId(sw))
            .or_default()
            .set(m(0xC000), mask);
    }
    st.multicast
        .mfts
        .entry(NodeId(1))
        .or_default()
        .set(m(0xC021), PortMask::of([PortNum(2)]));
    st
}

#[test]
fn multicast_is_written_as_version_2_and_only_then() {
    let plain = small();
    let text = plain.to_json();
    assert!(text.starts_with("{\n\"format\": \"weft-state\",\n\"version\": 1,\n"));
    assert!(!text.contains("multicast"), "{text}");
    let st = ValidState::new(small_mc()).unwrap();
    let text = st.to_json();
    assert!(text.starts_with("{\n\"format\": \"weft-state\",\n\"version\": 2,\n"));
    insta::assert_snapshot!(text.split_once("\"multicast\"").unwrap().1);
    let back = read(&text).unwrap();
    assert_eq!(*back, *st);
    assert_eq!(
        back.multicast.group(Mlid::new(0xC021).unwrap()).unwrap().sl,
        Sl(3)
    );
    // An empty table is no multicast: version 1 again.
    let mut none = plain.clone();
    none.multicast.mfts.insert(NodeId(0), Mft::default());
    assert_eq!(version_of(&none), VERSION);
    // A MulticastFDBCap alone is version 2 (an older weft would not know the field).
    let mut b = FabricBuilder::from(plain.fabric.clone());
    assert!(b.set_multicast_fdb_cap(NodeId(0), Some(64)));
    assert!(!b.set_multicast_fdb_cap(NodeId(2), Some(64)));
    let mut capped = plain;
    capped.fabric = b.finish();
    let text = capped.to_json();
    assert!(text.contains("\"multicast_fdb_cap\":64"), "{text}");
    assert_eq!(version_of(&capped), VERSION_MULTICAST);
    assert_eq!(*read(&text).unwrap(), capped);
}

#[test]
fn a_multicast_state_names_what_is_wrong() {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "an MFT entry below the multicast range",
            Box::new(|v: &mut Value| v["multicast"]["mfts"][0][1] = json!("0xbfff")),
        ),
        (
            "a group at the permissive LID",
            Box::new(|v: &mut Value| v["multicast"]["groups"][0]["mlid"] = json!("0xffff")),
        ),
        (
            "a port beyond the switch",
            Box::new(|v: &mut Value| v["multicast"]["mfts"][1][2] = json!([1, 9, 200])),
        ),
        (
            "an MFT on an HCA",
            Box::new(|v: &mut Value| v["multicast"]["mfts"][2][0] = json!("0xf452140300000300")),
        ),
        (
            "an MFT on a GUID nobody has",
            Box::new(|v: &mut Value| v["multicast"]["mfts"][2][0] = json!("0x1234")),
        ),
        (
            "an MFT entry given twice",
            Box::new(|v: &mut Value| {
                let e = v["multicast"]["mfts"][0].clone();
                v["multicast"]["mfts"].as_array_mut().unwrap().push(e)
            }),
        ),
        (
            "an MFT entry without ports",
            Box::new(|v: &mut Value| v["multicast"]["mfts"][0][2] = json!([])),
        ),
        (
            "two groups with one MLID",
            Box::new(|v: &mut Value| v["multicast"]["groups"][1]["mlid"] = json!("0xc000")),
        ),
        (
            "members that cannot be",
            Box::new(|v: &mut Value| {
                v["multicast"]["groups"][0]["members"] = json!([
                    ["0xf452140300000100", 3, "full"],
                    ["0xf452140300000100", 0, "full"],
                    ["0xf452140300000300", 2, "full"],
                    ["0xf452140300000400", 1, "full"],
                    ["0xf452140300000400", 1, "non_member"],
                    ["0x1234", 1, "full"]
                ])
            }),
        ),
        (
            "a join state that is not one",
            Box::new(|v: &mut Value| {
                v["multicast"]["groups"][0]["members"][0][2] = json!("fullish")
            }),
        ),
        (
            "a P_Key without a partition number, an SL past 15",
            Box::new(|v: &mut Value| {
                v["multicast"]["groups"][0]["pkey"] = json!("0x8000");
                v["multicast"]["groups"][1]["sl"] = json!(16);
            }),
        ),
        (
            "an MLID past MulticastFDBCap",
            Box::new(|v: &mut Value| v["fabric"]["nodes"][1]["multicast_fdb_cap"] = json!(32)),
        ),
        (
            "multicast in a version 1 file",
            Box::new(|v: &mut Value| v["version"] = json!(1)),
        ),
    ];
    let st = small_mc();
    let mut out = String::new();
    for (name, edit) in cases {
        out += &format!("## {name}\n{}\n\n", errors_of_state(&st, edit));
    }
    insta::assert_snapshot!(out);
}

/// [`arb_state`] with random valid multicast: groups on random MLIDs (members random end
/// ports and switch port 0s with random join states) and MFT entries over each switch's own
/// ports, in any block and position.
fn arb_mc_state() -> impl Strategy<Value = FabricState> {
    (
        arb_state(),
        proptest::collection::vec(
            (0xC000u16..=0xFFFE, any::<u16>(), 0u8..16, any::<u64>()),
            0..6,
        ),
        proptest::collection::vec((any::<u8>(), 0xC000u16..=0xFFFE, any::<u16>()), 0..30),
    )
        .prop_map(|(mut st, groups, entries)| {
            let ports: Vec<PortRef> = st
                .fabric
                .node_ids()
                .flat_map(|n| {
                    let node = st.fabric.node(n);
                    if node.is_switch() {
                        vec![PortRef::new(n, 0)]
                    } else {
                        (1..=node.spec.port_count)
                            .map(|p| PortRef::new(n, p))
                            .collect()
                    }
                })
                .collect();
            for (mlid, pkey, sl, pick) in groups {
                let Some(mlid) = Mlid::new(mlid) else {
                    continue;
                };
                if st.multicast.groups.iter().any(|g| g.mlid == mlid) {
                    continue;
                }
                let members = ports
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| pick >> (i % 64) & 1 == 1)
                    .map(|(i, &r)| (r, JoinState::from_bits(1 + (i as u8 + sl) % 15).unwrap()))
                    .collect();
                st.multicast.groups.push(McGroup {
                    mlid,
                    // A partition number of 1..=0x7fff, full or limited (0x8000 and 0 name none).
                    pkey: (1 + pkey % 0x7fff) | (pkey & 0x8000),
                    sl: Sl(sl),
                    members,
                });
            }
            let switches: Vec<NodeId> = st.switches.keys().copied().collect();
            for (sw, mlid, bits) in entries {
                let n = switches[usize::from(sw) % switches.len()];
                let count = st.fabric.node(n).spec.port_count;
                let mask = PortMask::of(
                    (0..=count)
                        .filter(|p| bits >> (p % 16) & 1 == 1)
                        .map(PortNum),
                );
                st.multicast
                    .mfts
                    .entry(n)
                    .or_default()
                    .set(Mlid::new(mlid).unwrap(), mask);
            }
            st
        })
}

fn arb_state() -> impl Strategy<Value = FabricState> {
    (
        1usize..5,
        1usize..6,
        0u8..3,
        proptest::collection::vec(any::<u16>(), 0..40),
        any::<u64>(),
    )
        .prop_map(|(switches, hcas, lmc, noise, guid_hi)| {
            let mut b = FabricBuilder::new("random");
            b.set_lmc(lmc);
            let base = (guid_hi | 1 << 63) & !0xffff_ffff;
            let mut ids = Vec::new();
            for s in 0..switches {
                ids.push(
                    b.add_node(NodeSpec::new(
                        format!("s{s}"),
                        NodeKind::Switch,
                        Guid(base + 0x100 * (s as u64 + 1)),
                        8,
                    ))
                    .unwrap(),
                );
            }
            for w in ids.windows(2) {
                b.add_link(PortRef::new(w[0], 1), PortRef::new(w[1], 2))
                    .unwrap();
            }
            let mut hosts = Vec::new();
            for h in 0..hcas {
                let id = b
                    .add_node(NodeSpec::new(
                        format!("h{h}"),
                        NodeKind::Hca,
                        Guid(base + 0x10_0000 + 0x100 * h as u64),
                        2,
                    ))
                    .unwrap();
                let sw = ids[h % ids.len()];
                let port = 3 + (h / ids.len()) as u8;
                if port <= 8 {
                    b.add_link(PortRef::new(id, 1), PortRef::new(sw, port))
                        .unwrap();
                }
                hosts.push(id);
            }
            if let Some(&n) = noise.first() {
                if n % 3 == 0 && !ids.is_empty() {
                    b.set_link_down(LinkId(0));
                }
            }
            let mut st = FabricState::new(b.finish());
            let span = 1u16 << lmc;
            let mut next = span;
            for &s in &ids {
                st.lids
                    .base
                    .entry(s)
                    .or_default()
                    .insert(PortNum(0), Lid(next));
                next += span;
            }
            for &h in &hosts {
                st.lids
                    .base
                    .entry(h)
                    .or_default()
                    .insert(PortNum(1), Lid(next));
                next += span;
            }
            let top = next;
            for (i, &s) in ids.iter().enumerate() {
                let mut sw = SwitchState::default();
                for l in 1..top {
                    let v = noise
                        .get((i + usize::from(l)) % noise.len().max(1))
                        .copied();
                    sw.lft
                        .set(Lid(l), PortNum(v.map_or(255, |v| (v % 10) as u8)));
                }
                if noise.len() > 5 {
                    sw.sl2vl.push(Sl2VlRow {
                        in_port: 1,
                        out_port: 2,
                        vl: [(noise[5] % 8) as u8; 16],
                    });
                }
                st.switches.insert(s, sw);
            }
            for (i, &h) in hosts.iter().enumerate() {
                if let Some(&v) = noise.get(i) {
                    st.ports.insert(
                        PortRef::new(h, 1),
                        PortState {
                            sl2vl: Some([(v % 8) as u8; 16]),
                            vlarb: (v % 2 == 0).then(|| VlArb {
                                high_limit: (v % 256) as u8,
                                high: vec![VlWeight { vl: 0, weight: 1 }],
                                low: vec![],
                            }),
                            pkeys: (v % 3 == 0).then(|| vec![PKey(0xffff)]),
                        },
                    );
                    st.path_sl.by_source.push(SourceSls {
                        src: PortRef::new(h, 1),
                        lids: LidRange {
                            lo: Lid(1),
                            hi: Lid(1 + v % 10),
                        },
                        sls: SlSet(1 | (v & 0xff)),
                    });
                }
            }
            st.path_sl.sort();
            if let Some(&n) = noise.get(1) {
                st.max_vls = (n % 2 == 0).then_some(1 + (n % 15) as u8);
                if n % 3 == 0 {
                    st.sm = hosts.iter().take(2).map(|&h| PortRef::new(h, 1)).collect();
                    st.sm.extend(ids.first().map(|&s| PortRef::new(s, 0)));
                }
            }
            st
        })
}

/// A valid `st` read back equal from its JSON, and written again byte for byte.
fn survives_json(st: FabricState) -> Result<(), TestCaseError> {
    let st = ValidState::new(st).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let text = st.to_json();
    let back = read(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    prop_assert_eq!(&*back, &*st);
    prop_assert_eq!(back.to_json(), text);
    Ok(())
}

/// `text` with `len` bytes at `at` (wrapped) replaced by `with`, unless that cuts a character.
fn mangled(text: &str, at: usize, len: usize, with: &str) -> Option<String> {
    let at = at % text.len();
    let end = (at + len).min(text.len());
    let mut t = text.to_owned();
    (text.is_char_boundary(at) && text.is_char_boundary(end)).then(|| {
        t.replace_range(at..end, with);
        t
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any valid state survives JSON: read back equal, written again byte for byte.
    #[test]
    fn round_trip(st in arb_state()) {
        survives_json(st)?;
    }

    /// Any valid state with multicast survives JSON the same way.
    #[test]
    fn round_trip_with_multicast(st in arb_mc_state()) {
        survives_json(st)?;
    }

    /// Arbitrary edits of a state file with multicast never panic the reader.
    #[test]
    fn mangled_multicast_files_never_panic(at in 0usize..4000, len in 0usize..12, with in ".{0,8}") {
        let text = small_mc().to_json();
        let _ = mangled(&text, at, len, &with).map(|t| read(&t));
    }

    /// Arbitrary edits of a state file never panic the reader.
    #[test]
    fn mangled_files_never_panic(at in 0usize..4000, len in 0usize..12, with in ".{0,8}") {
        let text = small().to_json();
        let _ = mangled(&text, at, len, &with).map(|t| read(&t));
    }
}

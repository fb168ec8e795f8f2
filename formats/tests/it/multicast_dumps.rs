//! The multicast readers on real ibsim/OpenSM output and on tables written in the tools' exact
//! layout (`tests/data/multicast/README.md` says which is which and how each was made): MFTs
//! from `opensm.mcfdbs`, `ibroute -M`, `dump_fts -M` and `dump_mfts`; groups from `saquery`.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use weft_fabric::{
    Fabric, FabricState, JoinState, McGroup, Mlid, NodeId, PortMask, PortNum, PortRef, Sl,
    ValidState,
};
use weft_formats::ibnetdiscover::{self, ParseOptions};
use weft_formats::opensm::{parse_mcmembers, parse_mfts, MftTables};
use weft_formats::state_json::ToJson;

macro_rules! data {
    ($f:literal) => {
        include_str!(concat!("../data/multicast/", $f))
    };
}

fn discovered() -> ibnetdiscover::Discovered {
    ibnetdiscover::parse(data!("sim.ibnetdiscover"), &ParseOptions::default()).unwrap()
}

fn fabric() -> Fabric {
    discovered().fabric
}

fn id(f: &Fabric, guid: u64) -> NodeId {
    f.find_guid(weft_fabric::Guid(guid)).unwrap()
}

fn mlid(l: u16) -> Mlid {
    Mlid::new(l).unwrap()
}

fn mask(ports: &[u8]) -> PortMask {
    PortMask::of(ports.iter().copied().map(PortNum))
}

fn mfts(text: &str, f: &Fabric) -> MftTables {
    let (t, warnings) = parse_mfts(text, f).unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    t
}

#[test]
fn real_dumps_of_a_fabric_without_members_read_as_empty_tables() {
    let f = fabric();
    let (s1, s2) = (id(&f, 0x200000), id(&f, 0x200001));
    assert!(mfts(data!("opensm.mcfdbs"), &f).tables.is_empty());
    for text in [data!("dump_fts-M.txt"), data!("dump_mfts.txt")] {
        let t = mfts(text, &f);
        let listed: std::collections::BTreeSet<NodeId> = t.tables.keys().copied().collect();
        assert_eq!(listed, [s1, s2].into());
        assert!(t.tables.values().all(|m| m.is_empty()));
    }
    let t = mfts(data!("ibroute-M-a.txt"), &f);
    assert!(t.tables[&s1].is_empty());
    let t = mfts(data!("ibroute-M-v.txt"), &f);
    assert_eq!(t.fdb_caps.get(&s1), Some(&1024));
}

#[test]
fn opensm_and_ibroute_forms_give_the_same_tables() {
    let f = fabric();
    let (s1, s2) = (id(&f, 0x200000), id(&f, 0x200001));
    let a = mfts(data!("written-opensm.mcfdbs"), &f);
    let b = mfts(data!("written-ibroute-M.txt"), &f);
    assert_eq!(a, b);
    assert_eq!(a.tables[&s1].get(mlid(0xC000)), mask(&[1, 2, 3]));
    assert_eq!(a.tables[&s1].get(mlid(0xC001)), mask(&[0, 1]));
    assert_eq!(a.tables[&s2].get(mlid(0xC000)), mask(&[1, 2]));
    assert_eq!(a.tables[&s2].top(), Some(mlid(0xC000)));
    // And they make a valid state.
    let d = discovered();
    let mut st = FabricState::new(d.fabric);
    st.lids = d.lids;
    st.multicast.mfts = a.tables;
    let st = ValidState::new(st).unwrap();
    assert!(st.to_json().contains("\"version\": 2"));
}

#[test]
fn brief_ibroute_masks_are_positions() {
    let f = fabric();
    let text = "Multicast mlids [0xc000-0xc001] of switch Lid 1 guid 0x0000000000200000 (x):\n MLid       Port Mask\n0xc000      000e\n0xc001      0003\n2 valid mlids dumped \n";
    let a = mfts(text, &f);
    let b = mfts(data!("written-opensm.mcfdbs"), &f);
    let s1 = id(&f, 0x200000);
    assert_eq!(a.tables[&s1], b.tables[&s1]);
}

#[test]
fn real_saquery_output_gives_the_broadcast_group_without_members() {
    let f = fabric();
    let want = McGroup {
        mlid: mlid(0xC000),
        pkey: 0xffff,
        sl: Sl(0),
        members: Default::default(),
    };
    for text in [data!("saquery-MCMR.txt"), data!("saquery-g.txt")] {
        let (groups, w) = parse_mcmembers(text, &f).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(groups, std::slice::from_ref(&want));
    }
    // `saquery -m` alone has no P_Key or SL: refused, saying what to add.
    let e = parse_mcmembers(data!("saquery-m.txt"), &f).unwrap_err();
    assert_eq!(
        e.to_string(),
        "mcmembers:1: group 0xc000 has no P_Key and SL: give `saquery -g` or `saquery MCMR` output too"
    );
    let both = format!("{}{}", data!("saquery-g.txt"), data!("saquery-m.txt"));
    assert_eq!(parse_mcmembers(&both, &f).unwrap().0, [want]);
}

/// Members, as `saquery` prints them for joined ports (the layout of `saquery.c`; no port
/// joined on ibsim).
#[test]
fn saquery_members_resolve_to_ports_with_their_join_state() {
    let f = fabric();
    let text = "MCMemberRecord group dump:
\t\tMGID....................ff12:401b:ffff::ffff:ffff
\t\tMlid....................0xC000
\t\tMtu.....................0x84
\t\tpkey....................0xFFFF
\t\tRate....................0x83
\t\tSL......................0x0
MCMemberRecord member dump:
\t\tMGID....................ff12:401b:ffff::ffff:ffff
\t\tMlid....................0xC000
\t\tPortGid.................fe80::10:1
\t\tScopeState..............0x21
\t\tProxyJoin...............0x0
\t\tNodeDescription.........H-0002c90000000200
MCMember Record dump:
\t\tMGID....................ff12:401b:ffff::ffff:ffff
\t\tPortGid.................fe80::10:5
\t\tqkey....................0xb1b
\t\tmlid....................0xc000
\t\tmtu.....................0x84
\t\tTClass..................0x0
\t\tpkey....................0xffff
\t\trate....................0x83
\t\tpkt_life................0x92
\t\tSL......................0x0
\t\tFlowLabel...............0x0
\t\tHopLimit................0x0
\t\tScope...................0x2
\t\tJoinState...............0x4
\t\tProxyJoin...............0x0
";
    let (groups, w) = parse_mcmembers(text, &f).unwrap();
    assert!(w.is_empty(), "{w:?}");
    let h = |g| PortRef::new(id(&f, g), 1);
    assert_eq!(
        groups[0].members,
        [
            (h(0x100000), JoinState::FULL),
            (h(0x100004), JoinState::SEND_ONLY_NON_MEMBER)
        ]
        .into()
    );
}

#[test]
fn malformed_multicast_input_is_named_by_line() {
    let f = fabric();
    let bad_mfts = "\nSwitch 0x0000000000200000\nLID    : Out Port(s)\n0xBFFF : 0x001 \n0xC000 : 0x009 \n0xC001 : 1 \n0xC002 : 0x001 \n0xC002 : 0x002 \n\nSwitch 0x0000000000100000\n0xC000 : 0x001 \nSwitch 0x0000000000999999\n0xC000 : 0x001 \nMulticast mlids [0xc000-0xc001] of switch Lid 1 guid 0x0000000000200000 (x):\n MLid\n0xc000       x\n0xc001    x\nhello\n";
    let e = parse_mfts(bad_mfts, &f).unwrap_err();
    let members = "\t\tPortGid.................fe80::10:1 (h)
MCMember Record dump:
\t\tmlid....................0xbfff
MCMember Record dump:
\t\tmlid....................0xc001
\t\tpkey....................0xffff
\t\tSL......................0x0
MCMember Record dump:
\t\tmlid....................0xc001
\t\tpkey....................0x8001
\t\tSL......................0x1
\t\tPortGid.................fe80::99
\t\tJoinState...............0x1
MCMember Record dump:
\t\tmlid....................0xc001
\t\tPortGid.................fe80::10:1
\t\tJoinState...............0x0
\t\tSL......................0x10
what is this
";
    let m = parse_mcmembers(members, &f).unwrap_err();
    insta::assert_snapshot!(format!("{e}\n\n{m}"));
}

proptest::proptest! {
    /// Arbitrary edits of an MFT dump or of `saquery` output never panic the readers.
    #[test]
    fn mangled_multicast_input_never_panics(at in 0usize..2000, len in 0usize..12, with in ".{0,8}") {
        let f = fabric();
        for text in [data!("written-opensm.mcfdbs"), data!("written-ibroute-M.txt"), data!("saquery-MCMR.txt")] {
            let at = at % text.len();
            let end = (at + len).min(text.len());
            if text.is_char_boundary(at) && text.is_char_boundary(end) {
                let mut t = text.to_owned();
                t.replace_range(at..end, &with);
                let _ = parse_mfts(&t, &f);
                let _ = parse_mcmembers(&t, &f);
            }
        }
    }
}

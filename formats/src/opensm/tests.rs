//! Tests of the OpenSM dump readers and writers: round trips, and every malformed line named.

use super::*;
use weft_fabric::{
    FabricBuilder, FabricState, Guid, Lid, LidAssignment, NodeId, NodeKind, NodeSpec, PKey,
    PortNum, PortRef, Sl2VlRow, SlSet, SwitchState,
};

/// EXP-FT's shape: leaves L1, L2 (hosts on ports 1-2, spines on 5-6), spines S1, S2.
fn ft() -> weft_fabric::Fabric {
    let mut b = FabricBuilder::new("ft");
    let l1 = b
        .add_node(NodeSpec::new("L1", NodeKind::Switch, Guid(0x200000), 8))
        .unwrap();
    let l2 = b
        .add_node(NodeSpec::new("L2", NodeKind::Switch, Guid(0x200001), 8))
        .unwrap();
    let s1 = b
        .add_node(NodeSpec::new("S1", NodeKind::Switch, Guid(0x200002), 8))
        .unwrap();
    let s2 = b
        .add_node(NodeSpec::new("S2", NodeKind::Switch, Guid(0x200003), 8))
        .unwrap();
    for (leaf, li) in [(l1, 1u8), (l2, 2)] {
        b.add_link(PortRef::new(leaf, 5), PortRef::new(s1, li))
            .unwrap();
        b.add_link(PortRef::new(leaf, 6), PortRef::new(s2, li))
            .unwrap();
    }
    for h in 0..4u64 {
        let id = b
            .add_node(NodeSpec::new(
                format!("H{}", h + 1),
                NodeKind::Hca,
                Guid(0x100000 + 4 * h),
                1,
            ))
            .unwrap();
        let leaf = if h < 2 { l1 } else { l2 };
        b.add_link(PortRef::new(id, 1), PortRef::new(leaf, (h % 2 + 1) as u8))
            .unwrap();
    }
    b.finish()
}

fn state() -> FabricState {
    let f = ft();
    let mut st = FabricState::new(f);
    let mut lids = LidAssignment::default();
    for (i, id) in st.fabric.node_ids().enumerate() {
        let p = if st.fabric.node(id).is_switch() { 0 } else { 1 };
        lids.base
            .entry(id)
            .or_default()
            .insert(PortNum(p), Lid(i as u16 + 1));
    }
    st.lids = lids;
    for id in st
        .fabric
        .node_ids()
        .filter(|&i| st.fabric.node(i).is_switch())
    {
        let mut s = SwitchState::default();
        for lid in 1..=8u16 {
            s.lft
                .set(Lid(lid), PortNum(((lid + id.0 as u16) % 9) as u8));
        }
        for i in 0..=8u8 {
            for o in 1..=8u8 {
                let mut vl = [0u8; 16];
                for (k, v) in vl.iter_mut().enumerate() {
                    *v = ((k as u8) + i + o) % 4;
                }
                s.sl2vl.push(Sl2VlRow {
                    in_port: i,
                    out_port: o,
                    vl,
                });
            }
        }
        st.switches.insert(id, s);
    }
    st.ports
        .entry(PortRef::new(NodeId(4), 1))
        .or_default()
        .sl2vl = Some([1; 16]);
    st.path_sl.set_by_source([
        (PortRef::new(NodeId(4), 1), Lid(7), SlSet(0b101)),
        (PortRef::new(NodeId(0), 0), Lid(2), SlSet(0b1)),
    ]);
    st
}

#[test]
fn lfts_round_trip() {
    let st = state();
    let text = write_lfts(&st);
    let (lfts, warnings) = parse_lfts(&text, &st.fabric).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    for (id, s) in &st.switches {
        let got = &lfts[id];
        for lid in 1..=8u16 {
            assert_eq!(got.get(Lid(lid)), s.lft.get(Lid(lid)), "{id:?} {lid}");
        }
    }
}

#[test]
fn reads_opensm_and_dump_fts_verbatim() {
    // anchors.md §2.1, EXP-FT (S1 = 0x200002), then dump_fts output for L2.
    let text = "\
Unicast lids [0-8] of switch Lid 4 guid 0x0000000000200002 ('S1'):
0x0001 001 # Switch portguid 0x0000000000200000: 'L1'
0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'H1'
0x0004 000 # Switch portguid 0x0000000000200002: 'S1'
0x0007 002 # Channel Adapter portguid 0x0000000000100005: 'H3'
8 lids dumped
Unicast lids [0x0-0x8] of switch DR path slid 0; dlid 0; 0,5,2 guid 0x0000000000200001 (L2):
  Lid  Out   Destination
       Port     Info
0x0001 005 : (Switch portguid 0x0000000000200000: 'L1')
0x0007 001 : (Channel Adapter portguid 0x0000000000100005: 'H3')
8 valid lids dumped
Unicast lids [0-1] of switch Lid 9 guid 0x00000000deadbeef ('gone'):
0x0001 001 # x
";
    let f = ft();
    let (lfts, warnings) = parse_lfts(text, &f).unwrap();
    let s1 = f.find("S1").unwrap();
    let l2 = f.find("L2").unwrap();
    assert_eq!(lfts[&s1].get(Lid(4)), Some(PortNum(0)));
    assert_eq!(lfts[&s1].get(Lid(7)), Some(PortNum(2)));
    assert_eq!(lfts[&s1].get(Lid(6)), None);
    assert_eq!(lfts[&l2].get(Lid(1)), Some(PortNum(5)));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].message.contains("0x00000000deadbeef"));
}

#[test]
fn lft_errors_are_all_reported() {
    let text = "0x0001 001\nUnicast lids [0-1] of switch Lid 4 guid 0x0000000000200002 ('S1'):\n0x0001 009\nhello\n0xzz 1\n0xc000 1\n";
    let e = parse_lfts(text, &ft()).unwrap_err();
    let lines: Vec<usize> = e.0.iter().map(|e| e.line).collect();
    assert_eq!(lines, [1, 3, 4, 5, 6], "{e}");
    assert!(e.to_string().contains("`S1` has no port 9"));
}

#[test]
fn sl2vl_round_trip() {
    let st = state();
    let text = write_sl2vl(&st);
    assert!(text.starts_with("Switch 0x0000000000200000, base LID 1, \"L1\"\n#in out : 0  1  2"));
    assert!(text.contains("\n0   5   : 1  2  3  0  1  2  3  0  1  2  3  0  1  2  3  0 \n"));
    let (t, warnings) = parse_sl2vl(&text, &st.fabric).unwrap();
    assert!(warnings.is_empty());
    for (id, s) in &st.switches {
        // Only wired output ports are dumped (OpenSM's rule).
        let rows: Vec<&Sl2VlRow> = s
            .sl2vl
            .iter()
            .filter(|r| {
                st.fabric
                    .node(*id)
                    .port(PortNum(r.out_port))
                    .unwrap()
                    .link
                    .is_some()
            })
            .collect();
        let got: Vec<&Sl2VlRow> = t.switches[id].iter().collect();
        assert_eq!(got, rows);
    }
    assert_eq!(t.end_ports[&PortRef::new(NodeId(4), 1)], [1; 16]);
    assert_eq!(t.end_ports[&PortRef::new(NodeId(5), 1)], [0; 16]);
}

#[test]
fn path_sl_round_trip_and_sets() {
    let st = state();
    let text = write_path_sl(&st, PslSls::All);
    let (p, w) = parse_path_sl(&text, &st.fabric).unwrap();
    assert!(w.is_empty());
    assert_eq!(
        p.get(PortRef::new(NodeId(4), 1), None, Lid(7)),
        SlSet(0b101)
    );
    assert_eq!(p.get(PortRef::new(NodeId(0), 0), None, Lid(2)), SlSet(0b1));
    assert_eq!(p.get(PortRef::new(NodeId(5), 1), None, Lid(1)), SlSet(0b1));
    // ibdmchk's form: one line per pair, the set's lowest SL.
    let lowest = write_path_sl(&st, PslSls::Lowest);
    assert_eq!(lowest.lines().count() + 1, text.lines().count());
    let (p, _) = parse_path_sl(&lowest, &st.fabric).unwrap();
    assert_eq!(p.get(PortRef::new(NodeId(4), 1), None, Lid(7)), SlSet(0b1));
    let e = parse_path_sl(
        "0x100000 7\n0x1 3 0\n0x100000 0 1\n0x100000 7 16\n",
        &st.fabric,
    )
    .unwrap_err();
    assert_eq!(e.0.len(), 4, "{e}");
}

#[test]
fn guid2lid_round_trip_with_blank_lines() {
    let mut st = state();
    let text = write_guid2lid(&st);
    assert!(text.contains("0x0000000000200000 0x0001 0x0001\n\n"));
    let (lids, w) = parse_guid2lid(&text, &st.fabric).unwrap();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(lids, st.lids);
    // LMC 2: four LIDs per end-node port.
    st.lids.lmc = 2;
    let (lids, _) = parse_guid2lid(&write_guid2lid(&st), &st.fabric).unwrap();
    assert_eq!(lids.lmc, 2);
    // Consecutive lines are read too; unknown GUIDs are warnings.
    let (lids, w) = parse_guid2lid(
        "0x0000000000200000 0x0005 0x0005\n0x0000000000000042 0x0009 0x0009\n",
        &st.fabric,
    )
    .unwrap();
    assert_eq!(lids.get(NodeId(0), PortNum(0)), Some(Lid(5)));
    assert_eq!(w.len(), 1);
}

#[test]
fn a_guid2lid_of_other_port_guids_is_one_error_with_the_counts() {
    let st = state();
    let lfts = write_lfts(&st);
    let g2l = write_guid2lid(&st);
    let assemble_with = |g2l: &str| {
        assemble(
            st.fabric.clone(),
            LidAssignment::default(),
            &Dumps {
                lfts: &lfts,
                guid2lid: Some(g2l),
                ..Dumps::default()
            },
        )
    };
    assert!(assemble_with(&g2l).is_ok());
    // The end nodes' port GUIDs renumbered (as ibsim does): 4 switches keep their LIDs, the
    // 4 HCA ports lose theirs. Half covered is not "few": each port is its own error.
    let renumbered = g2l.replace("0x00000000001000", "0x00000000009000");
    let e = assemble_with(&renumbered).unwrap_err();
    assert!(e.dumps.is_empty());
    assert_eq!(e.state.len(), 4, "{e:?}");
    // Every GUID renumbered: one error saying so, with the counts.
    let foreign = renumbered.replace("0x00000000002000", "0x00000000008000");
    let e = assemble_with(&foreign).unwrap_err();
    assert!(e.state.is_empty());
    let [d] = e.dumps.as_slice() else {
        panic!("{e:?}");
    };
    assert_eq!(d.file, "guid2lid");
    assert!(
        d.message
            .starts_with("the guid2lid gives LIDs to 0 of the topology's 8 ports that need one, and 8 of its 8 records"),
        "{}",
        d.message
    );
}

#[test]
fn assemble_builds_a_state() {
    let st = state();
    let lfts = write_lfts(&st);
    let sl2vl = write_sl2vl(&st);
    let psl = write_path_sl(&st, PslSls::All);
    let (got, w) = assemble(
        st.fabric.clone(),
        st.lids.clone(),
        &Dumps {
            lfts: &lfts,
            sl2vl: Some(&sl2vl),
            path_sl: Some(&psl),
            guid2lid: None,
            mfts: None,
            mcmembers: None,
        },
    )
    .unwrap();
    assert!(w.is_empty());
    assert_eq!(
        got.injection_vl(PortRef::new(NodeId(4), 1), weft_fabric::Sl(3)),
        weft_fabric::Vl(1)
    );
    assert_eq!(
        got.path_sls(PortRef::new(NodeId(4), 1), Lid(7)),
        SlSet(0b101)
    );
    let bad = assemble(
        st.fabric.clone(),
        st.lids.clone(),
        &Dumps {
            lfts: "junk\n",
            sl2vl: Some("junk\n"),
            ..Dumps::default()
        },
    )
    .unwrap_err();
    assert_eq!(bad.dumps.len(), 2);
}

mod never_panic {
    use super::*;
    use proptest::prelude::*;

    fn mutate(text: &str, cuts: &[(usize, usize, String)]) -> String {
        let mut t = text.to_owned();
        for (at, len, with) in cuts {
            let at = at % (t.len() + 1);
            let end = (at + len % 8).min(t.len());
            if t.is_char_boundary(at) && t.is_char_boundary(end) {
                t.replace_range(at..end, with);
            }
        }
        t
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Readers return errors, never panic, on arbitrary and on mangled input.
        #[test]
        fn readers_never_panic(
            junk in ".{0,400}",
            cuts in proptest::collection::vec((0usize..4000, 0usize..8, "[0-9a-fx :#\\n]{0,6}"), 0..6),
        ) {
            let st = state();
            let f = &st.fabric;
            for text in [
                junk.clone(),
                mutate(&write_lfts(&st), &cuts),
                mutate(&write_sl2vl(&st), &cuts),
                mutate(&write_path_sl(&st, PslSls::All), &cuts),
                mutate(&write_guid2lid(&st), &cuts),
            ] {
                let _ = parse_lfts(&text, f);
                let _ = parse_sl2vl(&text, f);
                let _ = parse_path_sl(&text, f);
                let _ = parse_guid2lid(&text, f);
                let _ = assemble(f.clone(), st.lids.clone(), &Dumps {
                    lfts: &text,
                    sl2vl: Some(&text),
                    path_sl: Some(&text),
                    guid2lid: Some(&text),
            mfts: None,
            mcmembers: None,
                });
            }
        }
    }
}

/// The SM's port ends a full member of the default partition whatever port OpenSM runs on:
/// `SELF=full` is the last member line (OpenSM lets the last line naming a port decide, and
/// the old file's `SELF=full` first was undone by the SM host's own `=limited` line); a port
/// the state says the SM runs on holds `0xffff` and is listed full itself.
#[test]
fn the_sms_port_is_a_full_default_member_last() {
    let mut st = state();
    let host = |st: &FabricState, n: u32| st.fabric.node(NodeId(n)).ports[0].guid.0;
    let (h4, h5) = (host(&st, 4), host(&st, 5));
    st.ports
        .entry(PortRef::new(NodeId(4), 1))
        .or_default()
        .pkeys = Some(vec![PKey(0x7fff), PKey(0x8001)]);
    st.ports
        .entry(PortRef::new(NodeId(5), 1))
        .or_default()
        .pkeys = Some(vec![PKey(0xffff)]);
    st.sm = vec![PortRef::new(NodeId(5), 1)];
    let text = write_partitions(&st).unwrap();
    let default = text
        .split_once("Default=0x7fff :")
        .and_then(|(_, rest)| rest.split(';').next())
        .unwrap();
    let members: Vec<&str> = default.split(',').map(str::trim).collect();
    assert_eq!(members.last(), Some(&"SELF=full"), "{text}");
    assert!(
        members.contains(&format!("{h4:#018x}=limited").as_str()),
        "{text}"
    );
    assert!(
        members.contains(&format!("{h5:#018x}=full").as_str()),
        "{text}"
    );
    assert!(!text.contains("allow_both_pkeys"), "{text}");
}

/// `partitions.conf`: nothing without P_Key tables; with them, the default partition first
/// (`SELF=full`, ports without a table full members), then one partition per P_Key, members
/// by port GUID with full, limited or both (a port holding the full and the limited key).
#[test]
fn partitions_from_pkey_tables() {
    let mut st = state();
    assert_eq!(write_partitions(&st), None);
    let host = |st: &FabricState, n: u32| st.fabric.node(NodeId(n)).ports[0].guid.0;
    let (h4, h5) = (host(&st, 4), host(&st, 5));
    st.ports
        .entry(PortRef::new(NodeId(4), 1))
        .or_default()
        .pkeys = Some(vec![PKey(0x8001), PKey(0x7fff)]);
    st.ports
        .entry(PortRef::new(NodeId(5), 1))
        .or_default()
        .pkeys = Some(vec![PKey(0x8001), PKey(0x0001), PKey(0x8002)]);
    let text = write_partitions(&st).expect("P_Key tables give a file");
    insta::assert_snapshot!(text);
    let line = |g: u64, m: &str| format!("    {g:#018x}={m}");
    let default = text.split(';').next().unwrap_or_default();
    assert!(default.starts_with("# ") && default.contains("Default=0x7fff :\n"));
    // The SM's own port last: OpenSM lets the last line naming a port decide.
    assert!(default.ends_with(",\n    SELF=full "), "{default}");
    assert!(default.contains(&line(h4, "limited")), "{default}");
    assert!(!default.contains(&format!("{h5:#018x}")), "{default}");
    // Keys no declared partition names: `weft_<key>`, written with the membership bit.
    assert!(
        text.contains(&format!(
            "weft_0001=0x8001 :\n{},\n{} ;",
            line(h4, "full"),
            line(h5, "both")
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("weft_0002=0x8002 :\n{} ;", line(h5, "full"))),
        "{text}"
    );
}

/// Partitions are named as their tenants were declared, with the full key (`alice=0x8001`);
/// a name OpenSM's parser cannot carry is mangled only where it must be: its `#`, `:`, `,`,
/// `=`, `;`, spaces and non-ASCII bytes become `_`, it is cut to the 31 bytes OpenSM keeps,
/// and a name already taken (`Default`, an earlier partition's) gets its key appended.
#[test]
fn partitions_carry_their_declared_names() {
    let mut st = state();
    let key = |n: u16| PKey(0x8000 | n);
    for (node, keys) in [(4, vec![1u16]), (5, vec![2]), (6, vec![3]), (7, vec![4, 5])] {
        let mut table = vec![PKey(0x7fff)];
        table.extend(keys.into_iter().map(key));
        st.ports
            .entry(PortRef::new(NodeId(node), 1))
            .or_default()
            .pkeys = Some(table);
    }
    let names = [
        "alice",
        "team a:b#c,d=e;f",
        "Default",
        "a-very-long-tenant-name-of-forty-bytes.x",
        "équipe",
    ];
    st.partitions = names
        .iter()
        .zip(1u16..)
        .map(|(name, pkey)| weft_fabric::Partition {
            name: (*name).to_owned(),
            pkey,
            members: std::collections::BTreeMap::new(),
            vms: std::collections::BTreeMap::new(),
            class: None,
        })
        .collect();
    let text = write_partitions(&st).unwrap();
    let headers: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && l.ends_with(" :"))
        .collect();
    assert_eq!(
        headers,
        [
            "Default=0x7fff :",
            "alice=0x8001 :",
            "team_a_b_c_d_e_f=0x8002 :",
            "Default_0003=0x8003 :",
            "a-very-long-tenant-name-of-fort=0x8004 :",
            "_quipe=0x8005 :",
        ],
        "{text}"
    );
}

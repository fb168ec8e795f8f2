//! The simulated fabric answers as a switch does: reads, writes, caps, faults.

use super::*;
use crate::smp::DrPath;
use crate::transport::TransportExt;
use proptest::prelude::*;
use weft_fabric::{FabricBuilder, Guid, Lid, NodeSpec, PortNum};

/// Two switches cabled twice, a host on each.
fn fabric() -> (FabricState, PortRef) {
    let mut b = FabricBuilder::new("t");
    let s1 = b
        .add_node(NodeSpec::new("s1", NodeKind::Switch, Guid(0x10), 4))
        .unwrap();
    let s2 = b
        .add_node(NodeSpec::new("s2", NodeKind::Switch, Guid(0x20), 4))
        .unwrap();
    let h1 = b
        .add_node(NodeSpec::new("h1", NodeKind::Hca, Guid(0x30), 1))
        .unwrap();
    let h2 = b
        .add_node(NodeSpec::new("h2", NodeKind::Hca, Guid(0x40), 2))
        .unwrap();
    b.add_link(PortRef::new(s1, 1), PortRef::new(s2, 1))
        .unwrap();
    b.add_link(PortRef::new(s1, 2), PortRef::new(s2, 2))
        .unwrap();
    b.add_link(PortRef::new(h1, 1), PortRef::new(s1, 3))
        .unwrap();
    b.add_link(PortRef::new(h2, 1), PortRef::new(s2, 3))
        .unwrap();
    (FabricState::new(b.finish()), PortRef::new(h1, 1))
}

#[test]
fn routes_lead_where_the_cables_go() {
    let (st, sm) = fabric();
    let mut sim = SimFabric::new(&st, sm).unwrap();
    let info = |sim: &mut SimFabric, p: &[u8]| {
        NodeInfo::decode(
            &sim.get(&Target {
                path: DrPath(p.to_vec()),
                attr: Attr::NodeInfo,
                modifier: 0,
            })
            .unwrap(),
        )
    };
    assert_eq!(info(&mut sim, &[]).node_guid, 0x30);
    assert_eq!(info(&mut sim, &[1]).node_guid, 0x10);
    let far = info(&mut sim, &[1, 2]);
    assert_eq!((far.node_guid, far.local_port), (0x20, 2));
    assert_eq!(info(&mut sim, &[1, 2, 3]).node_guid, 0x40);
    // Through a port with no cable, or onward from a host: nowhere.
    for p in [&[1, 4][..], &[1, 2, 3, 1], &[2]] {
        let r = sim.get(&Target {
            path: DrPath(p.to_vec()),
            attr: Attr::NodeInfo,
            modifier: 0,
        });
        assert!(matches!(r, Err(SmpError::NoRoute { .. })), "{p:?}: {r:?}");
    }
}

#[test]
fn the_sm_sits_on_the_port_named_else_the_first_live_host_port() {
    let (st, sm) = fabric();
    let f = &st.fabric;
    let h2 = f.find("h2").unwrap();
    assert_eq!(default_sm_port(f), Some(sm), "h1's port 1");
    assert_eq!(named_sm_port(f, "h2/1"), Ok(PortRef::new(h2, 1)));
    assert_eq!(named_sm_port(f, "h2"), Err(SmPortError::Syntax));
    assert_eq!(named_sm_port(f, "h2/x"), Err(SmPortError::Syntax));
    assert_eq!(
        named_sm_port(f, "h9/1"),
        Err(SmPortError::NoNode("h9".to_owned()))
    );
    // h1 down: h2's live port 1 (not its unlinked port 2); h2's link down too: none.
    let with = |down: &[&str], links_down: &[&str]| {
        let mut b = FabricBuilder::new("t");
        for n in f.nodes() {
            b.add_node(n.spec.clone()).unwrap();
        }
        for l in f.links() {
            let id = b.add_link(l.a, l.b).unwrap();
            if links_down.contains(&f.node(l.a.node).name()) {
                b.set_link_down(id);
            }
        }
        for d in down {
            b.set_node_down(f.find(d).unwrap());
        }
        b.finish()
    };
    assert_eq!(
        default_sm_port(&with(&["h1"], &[])),
        Some(PortRef::new(h2, 1))
    );
    assert_eq!(default_sm_port(&with(&["h1"], &["h2"])), None);
}

/// The PortInfo and SwitchInfo a new fabric answers with, byte by byte at their IBA
/// offsets (what the smp encoders must write).
#[test]
fn port_and_switch_info_sit_at_their_iba_offsets() {
    let (mut st, sm) = fabric();
    let (s1, h1) = (st.fabric.find("s1").unwrap(), st.fabric.find("h1").unwrap());
    st.lids.lmc = 1;
    st.lids
        .base
        .entry(s1)
        .or_default()
        .insert(PortNum(0), Lid(1));
    st.lids
        .base
        .entry(h1)
        .or_default()
        .insert(PortNum(1), Lid(0x0204));
    st.switches.entry(s1).or_default().lft.ports = vec![0xff, 0, 3];
    let mut sim = SimFabric::new(&st, sm).unwrap();
    let mut get = |path: &[u8], attr, modifier| {
        sim.get(&Target {
            path: DrPath(path.to_vec()),
            attr,
            modifier,
        })
        .unwrap()
    };
    // Port number, VLCap VL0–7, arbitration caps 8 and 8; then the state.
    let port = |p: u8, state: u8, phys: u8| {
        let mut want = [0u8; PAYLOAD];
        want[28] = p;
        want[37] = 4 << 4;
        want[39] = 8;
        want[40] = 8;
        want[32] = state;
        want[33] = phys << 4;
        want
    };
    let mut s1_own = port(0, 4, 5);
    s1_own[17] = 1;
    s1_own[20] = 0x40; // IsMulticastFDBTopSupported
    assert_eq!(
        get(&[1], Attr::PortInfo, 0),
        s1_own,
        "a switch's port 0, no LMC"
    );
    assert_eq!(
        get(&[1], Attr::PortInfo, 3),
        port(3, 4, 5),
        "linked: Active, LinkUp"
    );
    assert_eq!(
        get(&[1], Attr::PortInfo, 4),
        port(4, 1, 2),
        "no cable: Down, Polling"
    );
    let mut h1_port = port(1, 4, 5);
    h1_port[16..18].copy_from_slice(&[2, 4]);
    h1_port[34] = 1 << 3;
    assert_eq!(get(&[], Attr::PortInfo, 0), h1_port, "an HCA's LID and LMC");
    let mut switch = [0u8; PAYLOAD];
    switch[..2].copy_from_slice(&DEFAULT_FDB_CAP.to_be_bytes());
    switch[4..6].copy_from_slice(&DEFAULT_MCAST_CAP.to_be_bytes());
    switch[7] = 2;
    switch[15] = 64;
    switch[18..20].copy_from_slice(&MCAST_TOP_NONE.to_be_bytes());
    assert_eq!(
        get(&[1], Attr::SwitchInfo, 0),
        switch,
        "caps and LinearFDBTop"
    );
}

/// MFT blocks at each position a 4-port switch has (one: ports 0–15), read back as set;
/// a position or block past the switch's, reserved modifier bits, and a MulticastFDBTop
/// past its cap refused; the table the switch forwards by ends at MulticastFDBTop.
#[test]
fn mft_blocks_and_multicast_fdb_top() {
    let (st, sm) = fabric();
    let mut sim = SimFabric::new(&st, sm).unwrap();
    let at = |attr, modifier| Target {
        path: DrPath(vec![1]),
        attr,
        modifier,
    };
    let mut masks = [0u16; smp::MFT_BLOCK];
    masks[1] = 0b1010; // MLID 0xC021: ports 1 and 3
    let block = smp::encode_mft(&masks);
    let t = at(Attr::Mft, smp::mft_modifier(1, 0));
    assert_eq!(sim.set(&t, &block).unwrap(), block);
    assert_eq!(sim.get(&t).unwrap(), block);
    let status = |r: Result<Payload, SmpError>| match r {
        Err(SmpError::Status { status, .. }) => Some(status),
        _ => None,
    };
    for m in [
        smp::mft_modifier(1, 1),
        smp::mft_modifier(32, 0),
        1 | 1 << 9,
    ] {
        assert_eq!(
            status(sim.get(&at(Attr::Mft, m))),
            Some(STATUS_INVALID),
            "{m:#x}"
        );
    }
    // Above MulticastFDBTop (none yet) the switch forwards nothing; raised, it does.
    let s1 = 0x10;
    assert!(!sim.tables().mfts.contains_key(&s1));
    let (info, mut raw) = sim.switch_info(&DrPath(vec![1])).unwrap();
    assert_eq!(
        (info.multicast_fdb_cap, info.multicast_fdb_top),
        (DEFAULT_MCAST_CAP, MCAST_TOP_NONE)
    );
    for (top, ok) in [(0xc000 + DEFAULT_MCAST_CAP, false), (0xc021, true)] {
        SwitchInfo {
            multicast_fdb_top: top,
            ..info
        }
        .encode_into(&mut raw);
        let r = sim.set(&at(Attr::SwitchInfo, 0), &raw);
        assert_eq!(r.is_ok(), ok, "{top:#x}: {r:?}");
    }
    let mut want = Mft::default();
    want.set(
        Mlid::new(0xc021).unwrap(),
        weft_fabric::PortMask::of([PortNum(1), PortNum(3)]),
    );
    assert_eq!(sim.tables().mfts.get(&s1), Some(&want));
}

proptest! {
    /// Any SMP (route, attribute, modifier, payload), Get or Set, is answered or refused
    /// with a typed error; never a panic.
    #[test]
    fn any_smp_is_answered_or_refused(
        smps in proptest::collection::vec(
            (proptest::collection::vec(0u8..6, 0..5), 0usize..8, any::<u32>(),
             proptest::collection::vec(any::<u8>(), PAYLOAD), any::<bool>()),
            1..40)
    ) {
        let (st, sm) = fabric();
        let mut sim = SimFabric::new(&st, sm).unwrap();
        for (path, a, modifier, data, set) in smps {
            let t = Target { path: DrPath(path), attr: Attr::ALL[a], modifier };
            let mut p = [0u8; PAYLOAD];
            p.copy_from_slice(&data);
            let _ = if set { sim.set(&t, &p) } else { sim.get(&t) };
        }
    }
}

/// Discovery reads each node's NodeInfo once per link, not once per link end: a cable between
/// two switches found from one end is not followed back from the other. Two switches of 4
/// ports cabled twice, a host on each: 1 NodeInfo of the SM's own node, 1 per live link (4),
/// a PortInfo per switch port and port 0 (2 × 5) and the PortInfo of each end port entered (2).
#[test]
fn discovery_follows_each_link_once() {
    let (st, sm) = fabric();
    let mut sim = SimFabric::new(&st, sm).unwrap();
    let d = crate::discover(&mut sim).unwrap();
    assert_eq!((d.view.nodes.len(), d.view.links.len()), (4, 4));
    assert_eq!(d.smps, 1 + 4 + 2 * 5 + 2);
}

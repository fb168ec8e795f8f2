//! Tests of the inputs the ibnetdiscover reader accepts: real and ibsim output, every rate,
//! one-sided links, name maps, LIDs, directives and port GUIDs.

use super::tests::{ok, opts, peer_of, warning_codes, SAMPLE};
use super::*;
use weft_fabric::{Lid, LinkState, NodeKind, PortNum, PortRef, Speed, Width};

#[test]
fn reads_real_ibnetdiscover_output() {
    let d = ok(SAMPLE);
    assert!(d.warnings.is_empty(), "{:?}", warning_codes(&d));
    let f = &d.fabric;
    assert_eq!(f.nodes().len(), 3);
    assert_eq!(f.links().len(), 2);
    let sw = f.node(f.find("MF0;sw1:MSB7800/U1").unwrap());
    assert_eq!(sw.kind(), NodeKind::Switch);
    assert_eq!(sw.guid(), Guid(0x7cfe_9003_00bd_d8f0));
    assert_eq!(sw.spec.port_count, 36);
    assert_eq!(sw.spec.vendor_id, 0x2c9);
    assert_eq!(sw.spec.device_id, 0xcf08);
    assert_eq!(
        sw.spec.system_guid, None,
        "sysimgguid equal to the node GUID"
    );
    assert_eq!(sw.spec.model, None);
    let ca = f.node(f.find("cn001 HCA-1").unwrap());
    assert_eq!(ca.kind(), NodeKind::Hca);
    assert_eq!(ca.guid(), Guid(0x0002_c903_00a1_b2c0));
    assert_eq!(
        ca.port(PortNum(1)).unwrap().guid,
        Guid(0x0002_c903_00a1_b2c1)
    );
    assert_eq!(ca.spec.device_id, 0x1017);
    assert_eq!(
        peer_of(&d, "cn001 HCA-1", 1),
        Some(("MF0;sw1:MSB7800/U1".to_owned(), 1))
    );
    assert_eq!(
        peer_of(&d, "MF0;sw1:MSB7800/U1", 19),
        Some(("MF0;spine1:MSB7800/U1".to_owned(), 1))
    );
    for l in f.links() {
        assert_eq!((l.width, l.speed), (Some(Width::X4), Some(Speed::EDR)));
        assert_eq!(l.state, LinkState::Up);
    }
    let lid = |name: &str, port: u8| {
        d.lids
            .base
            .get(&f.find(name).unwrap())
            .and_then(|p| p.get(&PortNum(port)))
            .copied()
    };
    assert_eq!(lid("MF0;sw1:MSB7800/U1", 0), Some(Lid(1)));
    assert_eq!(lid("MF0;spine1:MSB7800/U1", 0), Some(Lid(2)));
    assert_eq!(lid("cn001 HCA-1", 1), Some(Lid(5)));
    assert_eq!(d.lids.lmc, 0);
}

#[test]
fn counts_guids_like_ibsim() {
    // Switches from 0x200000 (+1), CAs from 0x100000 (+ports+1), each reset by a guid line.
    let d = ok("\
Switch\t8 \"S1\"
[1]\t\"H1\"[1]

Switch 8 \"S2\"
[1]\t\"H2\"[2]

switchguid=0x5000
Switch 8 \"S3\"

Switch 8 \"S4\"

Hca\t2 \"H1\"
[1]\t\"S1\"[1]

Ca\t2 \"H2\"
[2]\t\"S2\"[1]

hcaguids=0x9000
Ca\t1 \"H3\"

Ca\t3 \"H4\"

caguid=0x20
Ca\t1 \"H5\"

switchguid+0x10
Switch 4 \"S5\"

rtguid=0x777
Rt\t1 \"R1\"
");
    let guid = |name: &str| d.fabric.node(d.fabric.find(name).unwrap()).guid().0;
    assert_eq!(guid("S1"), 0x20_0000);
    assert_eq!(guid("S2"), 0x20_0001);
    assert_eq!(guid("S3"), 0x5000);
    assert_eq!(guid("S4"), 0x5001);
    assert_eq!(guid("S5"), 0x5010, "relative to the last absolute base");
    assert_eq!(guid("H1"), 0x10_0000);
    assert_eq!(guid("H2"), 0x10_0003);
    assert_eq!(guid("H3"), 0x9000);
    assert_eq!(guid("H4"), 0x9002);
    assert_eq!(guid("H5"), 0x20);
    assert_eq!(guid("R1"), 0x777);
    // Without descriptions, names are the node ids; port GUIDs are node GUID + port.
    let h2 = d.fabric.node(d.fabric.find("H2").unwrap());
    assert_eq!(h2.port(PortNum(2)).unwrap().guid, Guid(0x10_0005));
    assert_eq!(h2.spec.port_guids, None);
    assert!(d.warnings.is_empty(), "{:?}", warning_codes(&d));
}

#[test]
fn reads_the_ibsim_examples() {
    // `/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca`, trimmed of its comments.
    let d = ok("\
# Net configuration file example

Switch\t8 \"Switch1\"
[1]\t\"Hca1\"[1]
[2]\t\"Hca3\"[1]
[3]\t\"Switch2\"[3]
[5]\t\"Switch2\"[5]

Switch 8 \"Switch2\"
[1]\t\"Hca2\"[1]
[2]\t\"Hca4\"[1]
[3]\t\"Switch1\"[3]
[5]\t\"Switch1\"[5]

Hca\t2 \"Hca1\"
[1]\t\"Switch1\"[1]

Hca\t2 \"Hca2\"
[1]\t\"Switch2\"[1]

Hca\t2 \"Hca3\"
[1]\t\"Switch1\"[2]

Hca \t2 \"Hca4\"
[1]\t\"Switch2\"[2]
");
    assert_eq!(d.fabric.nodes().len(), 6);
    assert_eq!(d.fabric.links().len(), 6);
    assert!(d.warnings.is_empty());
    assert_eq!(peer_of(&d, "Switch1", 5), Some(("Switch2".to_owned(), 5)));
}

#[test]
fn remote_port_defaults_to_one_and_options_set_the_rate() {
    let d = ok("\
Switch 8 \"S1\"
[1] \"H1\" w=2 e=2
[2] \"H2\"[1]  w=1
[3] \"H3\"[1]\ts=3

Ca 1 \"H1\"
[1] \"S1\"[1] w=3 e=3

Ca 1 \"H2\"
[1] \"S1\"[2]

Ca 1 \"H3\"
[1] \"S1\"[3]
");
    assert_eq!(peer_of(&d, "S1", 1), Some(("H1".to_owned(), 1)));
    let rate = |name: &str, port: u8| {
        let f = &d.fabric;
        let (_, l) = f.peer(PortRef::new(f.find(name).unwrap(), port)).unwrap();
        (f.link(l).width, f.link(l).speed)
    };
    assert_eq!(rate("S1", 1), (Some(Width::X4), Some(Speed::EDR)));
    assert_eq!(rate("S1", 2), (Some(Width::X1), None));
    assert_eq!(rate("S1", 3), (None, Some(Speed::DDR)));
}

#[test]
fn accepts_crlf_tabs_spaces_and_comments() {
    let text = SAMPLE.replace('\n', "\r\n");
    let d = ok(&text);
    assert_eq!(d.fabric.links().len(), 2);
    let spaced = SAMPLE.replace('\t', "   ");
    let d2 = ok(&spaced);
    assert_eq!(d.fabric, d2.fabric);
    let with_comments = SAMPLE.replace("\n[19]", "\n# a comment inside the record\n[19]");
    assert_eq!(ok(&with_comments).fabric, d.fabric);
}

#[test]
fn reads_every_rate() {
    for (text, width, speed) in [
        ("4xEDR", Width::X4, Speed::EDR),
        ("4xSDR", Width::X4, Speed::SDR),
        ("12xQDR", Width::X12, Speed::QDR),
        ("2xHDR", Width::X2, Speed::HDR),
        ("4xFDR10", Width::X4, Speed::FDR10),
        ("4xFDR", Width::X4, Speed::FDR),
        ("1xNDR", Width::X1, Speed::NDR),
        ("4xXDR", Width::X4, Speed::XDR),
        ("8xDDR", Width::X8, Speed::DDR),
    ] {
        let d = ok(&format!(
            "Switch 8 \"S1\"\n[1] \"H1\"[1] # \"h\" lid 3 {text}\n\n\
             Ca 1 \"H1\"\n[1] \"S1\"[1] # lid 3 lmc 0 \"s\" lid 0 {text}\n"
        ));
        let l = &d.fabric.links()[0];
        assert_eq!((l.width, l.speed), (Some(width), Some(speed)), "{text}");
    }
}

#[test]
fn one_sided_links_are_accepted_with_a_warning() {
    let d = ok("\
Switch 8 \"S1\"
[1] \"H1\"[1]
[2] \"S2\"[3]

Switch 8 \"S2\"

Ca 1 \"H1\"
");
    assert_eq!(d.fabric.links().len(), 2);
    assert_eq!(
        warning_codes(&d),
        vec![Code::OneSidedLink, Code::OneSidedLink]
    );
}

#[test]
fn duplicate_descriptions_are_made_unique() {
    let d = ok("\
switchguid=0x10
Switch 8 \"S1\" # \"leaf\"

switchguid=0x20
Switch 8 \"S2\" # \"leaf\"

Ca 1 \"H1\" # \"S1\"

Ca 1 \"H2\" # \"\"
");
    let names: Vec<&str> = d.fabric.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(
        names,
        vec!["leaf", "leaf (0x0000000000000020)", "S1", "H2"],
        "empty descriptions fall back to the node id"
    );
    assert_eq!(warning_codes(&d), vec![Code::DuplicateName]);
}

#[test]
fn name_map_names_win() {
    let map = parse_node_name_map(
        "# node name map\n\
         0x7cfe900300bdd8f0 \"leaf-1\"\n\
         \n\
         0x2c90300a1b2c0\t\"cn001\"   # the first host\n",
    )
    .unwrap();
    assert_eq!(map.len(), 2);
    let d = parse(
        SAMPLE,
        &ParseOptions {
            name_map: map,
            ..opts()
        },
    )
    .unwrap();
    let names: Vec<&str> = d.fabric.nodes().iter().map(|n| n.name()).collect();
    assert_eq!(names, vec!["leaf-1", "MF0;spine1:MSB7800/U1", "cn001"]);
}

#[test]
fn lids_and_lmc_are_recorded() {
    let d = ok("\
Switch 8 \"S1\" # \"s\" enhanced port 0 lid 7 lmc 0
[1] \"H1\"[1] # \"h\" lid 9 4xEDR
[2] \"H1\"[2] # \"h\" lid 13 4xEDR
[3] \"H2\"[1] # \"h2\" lid 21 4xEDR

Ca 2 \"H1\" # \"h\"
[1] \"S1\"[1] # lid 9 lmc 2 \"s\" lid 7 4xEDR
[2] \"S1\"[2] # lid 13 lmc 2 \"s\" lid 7 4xEDR

Ca 1 \"H2\" # \"h2\"
");
    let f = &d.fabric;
    assert_eq!(d.lids.lmc, 2);
    assert_eq!(f.lmc, 2);
    let h1 = f.find("h").unwrap();
    let h2 = f.find("h2").unwrap();
    assert_eq!(d.lids.base[&h1][&PortNum(1)], Lid(9));
    assert_eq!(d.lids.base[&h1][&PortNum(2)], Lid(13));
    assert_eq!(
        d.lids.base[&h2][&PortNum(1)],
        Lid(21),
        "from the switch's annotation when the node does not list the port"
    );
    assert_eq!(d.lids.base[&f.find("s").unwrap()][&PortNum(0)], Lid(7));
}

#[test]
fn directives_are_ignored_with_a_warning() {
    let d = ok("\
do echo hello
pdebug=1
width=3
speed=1
extspeed=0
Switch 8 \"S1\"
");
    assert_eq!(d.warnings.len(), 5);
    assert!(d
        .warnings
        .iter()
        .all(|w| w.code() == Code::IgnoredDirective && !w.is_error()));
}

#[test]
fn explicit_port_guids_are_kept() {
    let d = ok("\
Switch 8 \"S1\"
[1] \"H1\"[2](abc)

caguid=0x100
Ca 2 \"H1\"
[2](abc) \"S1\"[1]
");
    let h1 = d.fabric.node(d.fabric.find("H1").unwrap());
    assert_eq!(h1.spec.port_guids, Some(vec![Guid(0x101), Guid(0xabc)]));
}

/// Node GUIDs and port GUIDs are separate name spaces, as in OpenSM (issue 25): ibsim gives a
/// CA's port its node GUID + 1, here the next CA's node GUID; the reader called that an
/// internal error. Each lookup resolves its own space.
#[test]
fn a_port_guid_equal_to_the_next_nodes_node_guid_is_accepted() {
    let d = ok("\
switchguid=0x100
Switch 4 \"S1\"
[1] \"H1\"[1]
[2] \"H2\"[1]
[3] \"H3\"[2]

caguid=0x200
Ca 1 \"H1\"
[1] \"S1\"[1]

caguid=0x201
Ca 1 \"H2\"
[1] \"S1\"[2]

Ca 2 \"H3\"
[2](203) \"S1\"[3]
");
    let f = &d.fabric;
    let (h1, h2, h3) = (
        f.find("H1").unwrap(),
        f.find("H2").unwrap(),
        f.find("H3").unwrap(),
    );
    assert_eq!(f.find_guid(Guid(0x201)), Some(h2));
    assert_eq!(f.find_port_guid(Guid(0x201)), Some((h1, PortNum(1))));
    assert_eq!(f.find_port_guid(Guid(0x202)), Some((h2, PortNum(1))));
    // H3 counts on from H2 (0x201 + 2); its port 2 carries its node GUID, as on QLogic
    // adapters, and port 1 its node GUID + 1.
    assert_eq!(f.node(h3).guid(), Guid(0x203));
    assert_eq!(f.find_port_guid(Guid(0x203)), Some((h3, PortNum(2))));
    assert_eq!(f.find_port_guid(Guid(0x204)), Some((h3, PortNum(1))));
    // An end node's node GUID alone names no port.
    assert_eq!(f.find_port_guid(Guid(0x200)), None);
    assert_eq!(
        f.find_port_guid(Guid(0x100)),
        Some((f.find("S1").unwrap(), PortNum(0)))
    );
}

//! Tests of the ibnetdiscover reader and writer: accepted inputs, one rendered snapshot per kind
//! of error, the writer's output and refusals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use weft_fabric::{
    FabricBuilder, Lid, LinkState, NodeKind, NodeSpec, PortNum, PortRef, Speed, Width,
};

pub(super) fn opts() -> ParseOptions {
    ParseOptions {
        source_name: "test.ibnet".to_owned(),
        ..ParseOptions::default()
    }
}

pub(super) fn render(d: &dyn miette::Diagnostic) -> String {
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .with_width(80)
        .render_report(&mut out, d)
        .expect("rendering into a string");
    out
}

pub(super) fn ok(text: &str) -> Discovered {
    match parse(text, &opts()) {
        Ok(d) => d,
        Err(e) => {
            let all: Vec<String> = e.diagnostics().iter().map(|d| render(d)).collect();
            panic!("expected the text to parse, got:\n{}", all.join("\n"))
        }
    }
}

pub(super) fn errors(text: &str) -> ParseErrors {
    match parse(text, &opts()) {
        Ok(d) => panic!(
            "expected errors, got a fabric with {} nodes",
            d.fabric.nodes().len()
        ),
        Err(e) => e,
    }
}

fn codes(text: &str) -> Vec<Code> {
    errors(text)
        .diagnostics()
        .iter()
        .map(|d| d.code())
        .collect()
}

pub(super) fn warning_codes(d: &Discovered) -> Vec<Code> {
    d.warnings.iter().map(|w| w.code()).collect()
}

/// Snapshots the rendered errors of `text`, with the input as the snapshot's description.
fn check_errors(name: &str, text: &str) {
    let rendered = render(&errors(text));
    insta::with_settings!({ description => text, omit_expression => true }, {
        insta::assert_snapshot!(name, rendered);
    });
}

fn peer_of(d: &Discovered, name: &str, port: u8) -> Option<(String, u8)> {
    let f = &d.fabric;
    let id = f.find(name)?;
    let (there, _) = f.peer(PortRef::new(id, port))?;
    Some((f.node(there.node).name().to_owned(), there.port.0))
}

pub(super) const SAMPLE: &str = "\
#
# Topology file: generated on Tue Mar  5 10:12:01 2024
#
# Initiated from node 0002c90300a1b2c0 port 0002c90300a1b2c1

vendid=0x2c9
devid=0xcf08
sysimgguid=0x7cfe900300bdd8f0
switchguid=0x7cfe900300bdd8f0(7cfe900300bdd8f0)
Switch\t36 \"S-7cfe900300bdd8f0\"\t\t# \"MF0;sw1:MSB7800/U1\" enhanced port 0 lid 1 lmc 0
[1]\t\"H-0002c90300a1b2c0\"[1](2c90300a1b2c1) \t\t# \"cn001 HCA-1\" lid 5 4xEDR
[19]\t\"S-7cfe900300bdd900\"[1]\t\t# \"MF0;spine1:MSB7800/U1\" lid 2 4xEDR

vendid=0x2c9
devid=0xcf08
sysimgguid=0x7cfe900300bdd900
switchguid=0x7cfe900300bdd900(7cfe900300bdd900)
Switch\t36 \"S-7cfe900300bdd900\"\t\t# \"MF0;spine1:MSB7800/U1\" base port 0 lid 2 lmc 0
[1]\t\"S-7cfe900300bdd8f0\"[19]\t\t# \"MF0;sw1:MSB7800/U1\" lid 1 4xEDR

vendid=0x2c9
devid=0x1017
sysimgguid=0x2c90300a1b2c0
caguid=0x2c90300a1b2c0
Ca\t1 \"H-0002c90300a1b2c0\"\t\t# \"cn001 HCA-1\"
[1](2c90300a1b2c1) \t\"S-7cfe900300bdd8f0\"[1]\t\t# lid 5 lmc 0 \"MF0;sw1:MSB7800/U1\" lid 1 4xEDR
";

// ---------------------------------------------------------------------------------------------
// Accepted inputs.

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

#[test]
fn duplicate_port_guid() {
    // H1 port 1 is 0x201 by counting, and H2 says so for its port 1; H3's port counts onto the
    // switch's GUID; H4 has one GUID on both its ports.
    let text = "\
switchguid=0x300
Switch 8 \"S1\"
[1] \"H1\"[1]
[2] \"H2\"[1]
[3] \"H3\"[1]
[4] \"H4\"[1]
[5] \"H4\"[2]

caguid=0x200
Ca 1 \"H1\"
[1] \"S1\"[1]

caguid=0x400
Ca 1 \"H2\"
[1](201) \"S1\"[2]

caguid=0x2ff
Ca 1 \"H3\"
[1] \"S1\"[3]

caguid=0x500
Ca 2 \"H4\"
[1](777) \"S1\"[4]
[2](777) \"S1\"[5]
";
    assert_eq!(
        codes(text),
        vec![
            Code::DuplicatePortGuid,
            Code::DuplicatePortGuid,
            Code::DuplicatePortGuid
        ]
    );
    check_errors("duplicate_port_guid", text);
}

#[test]
fn bad_guid() {
    // GUID 0 for a router (routers count from 0 without `rtguid=`) and for a port, and port
    // GUIDs counted past 2^64.
    let text = "\
switchguid=0x9
Switch 8 \"S1\"
[1] \"H1\"[1]
[2] \"H2\"[1]
[3] \"R1\"[1]

caguid=0x10
Ca 2 \"H1\"
[1] \"S1\"[1]
[2](0) \"S1\"[4]

caguid=0xfffffffffffffffe
Ca 2 \"H2\"
[1] \"S1\"[2]

Rt 1 \"R1\"
[1] \"S1\"[3]
";
    assert_eq!(codes(text), vec![Code::BadGuid; 3]);
    check_errors("bad_guid", text);
}

/// A system image GUID of 0 is "none", as NodeInfo reports it: the node's own GUID.
#[test]
fn system_image_guid_zero_is_none() {
    let d = ok("\
sysimgguid=0x0
switchguid=0x5
Switch 2 \"S1\"
");
    let s = d.fabric.node(d.fabric.find("S1").unwrap());
    assert_eq!(s.spec.system_guid, None);
}

#[test]
fn never_panics_on_garbage() {
    for text in [
        "",
        "\n\n\r\n",
        "[",
        "[1",
        "[99999999999999999999] \"x\"",
        "Switch",
        "Switch ",
        "Switch 1",
        "Switch 1 \"",
        "Switch 1 \"\"",
        "Switch 1 \"a\" #",
        "Switch 1 \"a\" # \"",
        "Switch 1 \"a\" # lid",
        "Switch 1 \"a\" # lid 99999999999999999999999",
        "Switch 1 \"a\"\n[1]",
        "Switch 1 \"a\"\n[1](",
        "Switch 1 \"a\"\n[1](zz) \"a\"[1]",
        "Switch 1 \"a\"\n[1] \"a\"[",
        "Switch 1 \"a\"\n[1] \"a\"[1](",
        "Switch 1 \"a\"\n[1] \"a\"[1] =",
        "Switch 1 \"a\"\n[1] \"a\"[1] w=",
        "Switch 1 \"é\" # \"ü\" lid 1 4xé",
        "Switch 1 \"a\"\n[1] \"a\"[1] # 4x 99999999999999999999xEDR x4 4xEDRé",
        "switchguid=",
        "switchguid=0x(",
        "switchguid=0xffffffffffffffff\nSwitch 1 \"a\"\nSwitch 1 \"b\"",
        "caguid=0xffffffffffffffff\nCa 255 \"a\"\nCa 255 \"b\"",
        "vendid=0x1ffffffff",
        "é\u{0}\u{7f}",
    ] {
        let _ = parse(text, &opts());
        let _ = parse_node_name_map(text);
    }
}

// ---------------------------------------------------------------------------------------------
// Errors, one snapshot per kind.

#[test]
fn port_wired_twice() {
    let text = "\
Switch\t8 \"S1\"\t\t# \"sw1\"
[1]\t\"H1\"[1]\t\t# \"cn1\" lid 0 4xEDR
[1]\t\"H2\"[1]\t\t# \"cn2\" lid 0 4xEDR

Ca\t1 \"H1\"\t\t# \"cn1\"
[1]\t\"S1\"[1]

Ca\t1 \"H2\"\t\t# \"cn2\"
";
    assert_eq!(codes(text), vec![Code::PortWiredTwice]);
    check_errors("port_wired_twice", text);
}

#[test]
fn port_claimed_by_two_one_sided_links() {
    let text = "\
Switch\t8 \"S1\"
[1]\t\"S2\"[4]

Switch\t8 \"S2\"

Switch\t8 \"S3\"
[2]\t\"S2\"[4]
";
    assert_eq!(codes(text), vec![Code::PortWiredTwice]);
    check_errors("port_claimed_twice", text);
}

#[test]
fn link_ends_disagree() {
    let text = "\
Switch\t8 \"A\"
[3]\t\"B\"[5]

Switch\t8 \"B\"
[5]\t\"C\"[1]

Switch\t8 \"C\"
[1]\t\"B\"[5]
";
    assert_eq!(codes(text), vec![Code::LinkEndsDisagree]);
    check_errors("link_ends_disagree", text);
}

#[test]
fn unknown_node() {
    let text = "\
Switch\t36 \"S-7cfe900300bdd8f0\"\t\t# \"sw1\" enhanced port 0 lid 1 lmc 0
[1]\t\"H-0002c90300a1b2c0\"[1](2c90300a1b2c1) \t\t# \"cn001 HCA-1\" lid 5 4xEDR
";
    assert_eq!(codes(text), vec![Code::UnknownNode]);
    check_errors("unknown_node", text);
}

#[test]
fn port_out_of_range() {
    let text = "\
Switch\t8 \"S1\"
[9]\t\"H1\"[1]
[2]\t\"H1\"[3]

Ca\t2 \"H1\"
[0]\t\"S1\"[1]
";
    assert_eq!(
        codes(text),
        vec![
            Code::PortOutOfRange,
            Code::PortOutOfRange,
            Code::PortOutOfRange
        ]
    );
    check_errors("port_out_of_range", text);
}

#[test]
fn duplicate_node_id() {
    let text = "\
Switch\t8 \"S1\"\t\t# \"leaf1\"

Switch\t8 \"S1\"\t\t# \"leaf2\"
";
    assert_eq!(codes(text), vec![Code::DuplicateNodeId]);
    check_errors("duplicate_node_id", text);
}

#[test]
fn duplicate_guid() {
    let text = "\
switchguid=0x7cfe900300bdd8f0(7cfe900300bdd8f0)
Switch\t36 \"S-7cfe900300bdd8f0\"\t\t# \"sw1\"

switchguid=0x7cfe900300bdd8f0(7cfe900300bdd8f0)
Switch\t36 \"S-7cfe900300bdd8f1\"\t\t# \"sw2\"

Switch\t8 \"S3\"

switchguid=0x7cfe900300bdd8f1
Switch\t8 \"S4\"
";
    assert_eq!(codes(text), vec![Code::DuplicateGuid, Code::DuplicateGuid]);
    check_errors("duplicate_guid", text);
}

#[test]
fn malformed_lines() {
    let text = "\
Switch \"S1\"
Ca\t2 H1
Swtich\t8 \"S2\"
Switch\t8 \"S3\" extra

Switch\t8 \"S4\"
[1 \"S3\"[1]
[2]\tS3[1]
[3]\t\"S3\"[1] x=3
[4]\t\"S3\"[1] # \"unterminated
vendid 0x2c9
";
    assert_eq!(
        codes(text),
        vec![
            Code::MalformedHeader,
            Code::MalformedHeader,
            Code::UnknownLine,
            Code::MalformedHeader,
            Code::MalformedPort,
            Code::MalformedPort,
            Code::MalformedPort,
            Code::MalformedPort,
            Code::MalformedAssignment,
        ]
    );
    check_errors("malformed_lines", text);
}

#[test]
fn include_is_not_supported() {
    let text = "\
include \"spines.net\"
Switch\t8 \"S1\"
";
    assert_eq!(codes(text), vec![Code::IncludeUnsupported]);
    check_errors("include", text);
}

#[test]
fn bad_numbers() {
    let text = "\
vendid=0xzz
Switch\t300 \"S1\"

Switch\t8 \"S2\"\t\t# \"s2\" enhanced port 0 lid 70000 lmc 9
[a]\t\"S2\"[1]
[1]\t\"S2\"[2] w=99
";
    assert_eq!(
        codes(text),
        vec![
            Code::BadNumber,
            Code::BadNumber,
            Code::BadLid,
            Code::BadLmc,
            Code::BadNumber,
            Code::BadNumber,
        ]
    );
    check_errors("bad_numbers", text);
}

#[test]
fn truncated_file() {
    // The sample cut in the middle of its last line, without the spine's record.
    let cut = SAMPLE
        .find("[1](2c90300a1b2c1) \t\"S-7cfe900300bd")
        .unwrap()
        + 32;
    let head = SAMPLE
        .find("vendid=0x2c9\ndevid=0xcf08\nsysimgguid=0x7cfe900300bdd900")
        .unwrap();
    let tail = SAMPLE.find("vendid=0x2c9\ndevid=0x1017").unwrap();
    let text = format!("{}{}", &SAMPLE[..head], &SAMPLE[tail..cut]);
    assert_eq!(codes(&text), vec![Code::UnknownNode, Code::MalformedPort]);
    check_errors("truncated_file", &text);
}

#[test]
fn bad_name_map() {
    let text = "\
# guid name
0x0002c903000e0b52 cn001
zzz \"cn002\"
0x0002c903000e0b60 \"cn003\"
0x0002c903000e0b60 \"cn004\"
0x0002c903000e0b70 \"cn005
0x0 \"cn006\"
";
    let e = parse_node_name_map(text)
        .unwrap_err()
        .with_source_name("nodes.map");
    let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
    assert_eq!(
        codes,
        vec![
            Code::MalformedNameMap,
            Code::MalformedNameMap,
            Code::DuplicateNameMapEntry,
            Code::MalformedNameMap,
            Code::MalformedNameMap,
        ]
    );
    insta::with_settings!({ description => text, omit_expression => true }, {
        insta::assert_snapshot!("bad_name_map", render(&e));
    });
}

#[test]
fn ambiguous_remote_port() {
    let text = "\
Switch\t8 \"S1\"
[1]\t\"H1\" [2]

Ca\t2 \"H1\"
[2]\t\"S1\"[1]
";
    let c = codes(text);
    assert_eq!(c.first(), Some(&Code::AmbiguousRemotePort));
    check_errors("ambiguous_remote_port", text);
}

#[test]
fn ends_disagree_on_port_guid() {
    let text = "\
Switch\t8 \"S1\"\t\t# \"sw1\"
[1]\t\"H1\"[1](100002) \t\t# \"h1\" lid 3 4xEDR

caguid=0x100000
Ca\t2 \"H1\"\t\t# \"h1\"
[1](100001) \t\"S1\"[1]\t\t# lid 3 lmc 0 \"sw1\" lid 1 4xHDR
";
    assert_eq!(codes(text), vec![Code::PortGuidMismatch]);
    check_errors("port_guid_mismatch", text);
}

#[test]
fn stray_ports_aliases_and_self_links() {
    let text = "\
[1]\t\"S1\"[1]
Switch\t8 \"S1\"
[1]\t\"S1\"[1]
@[2]\t\"alias\"
[3]\t\"S1@x\"[1]
";
    assert_eq!(
        codes(text),
        vec![
            Code::PortOutsideNode,
            Code::SelfLink,
            Code::AliasUnsupported,
            Code::AliasUnsupported,
        ]
    );
    check_errors("stray_ports_aliases_self_links", text);
}

#[test]
fn warnings_render() {
    let d = ok("\
do echo hi
Switch\t8 \"S1\"\t\t# \"leaf\"
[1]\t\"S2\"[1]
Switch\t8 \"S2\"\t\t# \"leaf\"
  # indented comment
[2]\t\"S1\"[2]
[2]\t\"S1\"[2]

Switch\t8 \"S3\"\t\t# \"x\"
[1]\t\"H1\"[1]\t\t# \"h\" lid 4 4xFOO

Ca\t1 \"H1\"
[1]\t\"S3\"[1]\t\t# lid 4 lmc 1
Ca\t1 \"H2\"
[1]\t\"S3\"[2]\t\t# lid 6 lmc 0
");
    let rendered: Vec<String> = d.warnings.iter().map(|w| render(w)).collect();
    insta::assert_snapshot!("warnings", rendered.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Writer.

fn small_fabric() -> (weft_fabric::Fabric, LidAssignment) {
    let mut b = FabricBuilder::new("small");
    let mut sw = NodeSpec::new(
        "MF0;sw1:MSB7800/U1",
        NodeKind::Switch,
        Guid(0x7cfe_9003_00bd_d8f0),
        8,
    );
    sw.vendor_id = 0x2c9;
    sw.device_id = 0xcf08;
    let sw = b.add_node(sw).unwrap();
    let mut h1 = NodeSpec::new("cn001 HCA-1", NodeKind::Hca, Guid(0x0002_c903_00a1_b2c0), 2);
    h1.system_guid = Some(Guid(0x0002_c903_00a1_b2c3));
    let h1 = b.add_node(h1).unwrap();
    let h2 = b
        .add_node(NodeSpec::new(
            "cn002",
            NodeKind::Hca,
            Guid(0x0002_c903_00a1_b2d0),
            1,
        ))
        .unwrap();
    let r = b
        .add_node(NodeSpec::new(
            "gw",
            NodeKind::Router,
            Guid(0x0002_c903_00a1_b2e0),
            1,
        ))
        .unwrap();
    let l1 = b
        .add_link(PortRef::new(sw, 1), PortRef::new(h1, 1))
        .unwrap();
    b.set_link_rate(l1, Some(Speed::HDR), Some(Width::X2));
    b.add_link(PortRef::new(h1, 2), PortRef::new(sw, 5))
        .unwrap();
    let down = b
        .add_link(PortRef::new(sw, 2), PortRef::new(h2, 1))
        .unwrap();
    b.set_link_down(down);
    let l4 = b.add_link(PortRef::new(r, 1), PortRef::new(sw, 8)).unwrap();
    b.set_link_rate(l4, Some(Speed::EDR), Some(Width::X1));
    let fabric = b.finish();
    let mut lids = LidAssignment::default();
    lids.base.entry(sw).or_default().insert(PortNum(0), Lid(1));
    lids.base.entry(h1).or_default().insert(PortNum(1), Lid(5));
    lids.base.entry(h1).or_default().insert(PortNum(2), Lid(6));
    (fabric, lids)
}

#[test]
fn writer_output() {
    let (fabric, lids) = small_fabric();
    let text = write(&fabric, Some(&lids)).unwrap();
    insta::assert_snapshot!("writer_output", text);
    let d = parse(
        &text,
        &ParseOptions {
            fabric_name: "small".to_owned(),
            ..opts()
        },
    )
    .unwrap();
    // The router's port is cabled and has no LID while others have one.
    assert_eq!(warning_codes(&d), vec![Code::UnassignedLid]);
    let gw = d.fabric.find("gw").unwrap();
    assert_eq!(d.unassigned, vec![PortRef::new(gw, 1)]);
    assert_eq!(d.lids, lids);
    assert_eq!(d.fabric.nodes().len(), 4);
    assert_eq!(d.fabric.links().len(), 3, "the down link is left out");
    for (a, b) in fabric.nodes().iter().zip(d.fabric.nodes()) {
        assert_eq!(a.spec, b.spec);
    }
}

#[test]
fn writer_without_lids_writes_lid_0() {
    let (fabric, _) = small_fabric();
    let text = write(&fabric, None).unwrap();
    assert!(text.contains("enhanced port 0 lid 0 lmc 0"));
    let d = ok(&text);
    assert!(d.lids.base.is_empty());
}

#[test]
fn writer_refuses_unwritable_names() {
    for (name, reason) in [
        ("a=b", "it contains `=`"),
        ("a\"b", "it contains `\"`"),
        ("rack#1", "it contains `#`"),
        ("", "it is empty"),
        (
            "tab\there",
            "it contains U+0009, which is not printable ASCII",
        ),
        ("nœud", "it contains U+0153, which is not printable ASCII"),
    ] {
        let mut b = FabricBuilder::new("f");
        b.add_node(NodeSpec::new(name, NodeKind::Switch, Guid(1), 8))
            .unwrap();
        let err = write(&b.finish(), None).unwrap_err();
        assert_eq!(
            err,
            WriteError::UnwritableName {
                name: name.to_owned(),
                reason: reason.to_owned()
            }
        );
    }
    let mut b = FabricBuilder::new("f");
    b.add_node(NodeSpec::new("x".repeat(64), NodeKind::Hca, Guid(1), 1))
        .unwrap();
    let err = write(&b.finish(), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "node name `{}` cannot be written as a node description: it is 64 bytes long and \
             ibsim keeps 63",
            "x".repeat(64)
        )
    );
    let mut b = FabricBuilder::new("f");
    b.add_node(NodeSpec::new("empty", NodeKind::Hca, Guid(1), 0))
        .unwrap();
    assert_eq!(
        write(&b.finish(), None),
        Err(WriteError::NoPorts {
            name: "empty".to_owned()
        })
    );
}

/// A file broken the same way in every record: the port lines of an unreadable header are
/// skipped (no cascade of "port line outside a node record"), and each code shows ten
/// diagnostics and one "… and N more like this" with the exact count.
#[test]
fn repeated_errors_are_capped_per_code() {
    let mut text = String::new();
    for i in 0..30 {
        text.push_str(&format!(
            "Switch\tx36 \"S-00000000000001{i:02x}\" # \"sw{i}\"\n[1] \"H-00000000000002{i:02x}\"[1]\n\n"
        ));
        text.push_str(&format!(
            "Ca\t1 \"H-00000000000002{i:02x}\" # \"h{i}\"\n[1](2{i:02x}) \"S-00000000000001{i:02x}\"[1]\n\n"
        ));
    }
    let e = errors(&text);
    let all: Vec<(Code, String)> = e
        .diagnostics()
        .iter()
        .map(|d| (d.code(), d.message().to_owned()))
        .collect();
    assert!(
        !all.iter().any(|(c, _)| *c == Code::PortOutsideNode),
        "port lines of a broken header are not errors of their own: {all:?}"
    );
    let bad: Vec<&String> = all
        .iter()
        .filter(|(c, _)| *c == Code::BadNumber)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(bad.len(), 11, "{bad:?}");
    assert_eq!(bad[10], "… and 20 more like this (weft::ibnet::bad_number)");
    assert!(all.len() <= 22, "{} diagnostics", all.len());
}

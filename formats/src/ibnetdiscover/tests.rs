//! Tests of the ibnetdiscover reader and writer: accepted inputs, one rendered snapshot per kind
//! of error, the writer's output and refusals.

use super::*;
use weft_fabric::{FabricBuilder, Lid, NodeKind, NodeSpec, PortNum, PortRef, Speed, Width};

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

pub(super) fn peer_of(d: &Discovered, name: &str, port: u8) -> Option<(String, u8)> {
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
// Accepted inputs that snapshot their errors (the others are in `accept_tests.rs`).

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

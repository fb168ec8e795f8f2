//! Tests of tolerant reading: noise lines skipped with one warning each (a rendered snapshot
//! per class) and lines that only look like noise still refused, CRLF, a byte-order mark and
//! no final newline, grouped output, ports without LIDs, rate disagreements, dumps cut short
//! (`partial`), strict reading, a dump that describes no node (refused in every format and
//! mode, saying what it holds), the errors of the two reports, format detection, and a
//! property: noise inserted anywhere leaves the topology alone.

use super::tests::{errors, ok, opts, render, warning_codes, SAMPLE};
use super::*;
use proptest::prelude::*;
use weft_fabric::{PortNum, PortRef, Speed, Width};

const PORTS: &str = include_str!("../../tests/data/ibsim-leaf-spine.ports");
const LINKINFO: &str = include_str!("../../tests/data/ibsim-leaf-spine.iblinkinfo");
const LINKINFO_NO_SM: &str = include_str!("../../tests/data/ibsim-leaf-spine-nosm.iblinkinfo");
const TOPOLOGY: &str = include_str!("../../tests/data/ibsim-leaf-spine.ibnetdiscover");
const GROUPED: &str = include_str!("../../tests/data/ibsim-leaf-spine-grouped.ibnetdiscover");

/// Noise lines of every class, as the tools print them.
const NOISE: &[(Code, &str)] = &[
    (
        Code::TerminalLog,
        "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2024.01.02 10:11:12 =~=~=~=~=~=~=~=~=~=~=~=",
    ),
    (
        Code::TerminalLog,
        "Script started on 2024-01-02 10:11:12+01:00 [TERM=\"xterm\" TTY=\"/dev/pts/3\"]",
    ),
    (
        Code::TerminalLog,
        "Script done on 2024-01-02 10:12:40+01:00 [COMMAND_EXIT_CODE=\"0\"]",
    ),
    (Code::ShellPrompt, "root@mgmt01:~# ibnetdiscover"),
    (
        Code::ShellPrompt,
        "[admin@head-node ~]$ ibnetdiscover -g > fabric.txt",
    ),
    (
        Code::ShellPrompt,
        "user@login2:/scratch/ib$ sudo ibnetdiscover",
    ),
    (Code::ShellPrompt, "user@mac ~ % ibnetdiscover -p"),
    (Code::ShellPrompt, "bash-4.2# ibnetdiscover"),
    (Code::ShellPrompt, "$ ibnetdiscover"),
    (Code::ShellPrompt, "root@mgmt01:~#"),
    (
        Code::ShellPrompt,
        "sat11-0101-0902-02ufm [ mgmt-ha-active ] (config) # ",
    ),
    (
        Code::ShellPrompt,
        "switch-5a2b3c [standalone: master] > show interfaces ib status",
    ),
    (Code::ShellPrompt, "switch # show version"),
    (
        Code::ToolStderr,
        "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status \
         110; Connection timed out",
    ),
    (
        Code::ToolStderr,
        "../libibnetdisc/query_smp.c:186; umad (DR path slid 0; dlid 0; 0,1,31 Attr 0x15:0) \
         bad status 110; Connection timed out",
    ),
    (
        Code::ToolStderr,
        "ibwarn: [3446] sim_connect: attached as client 0 at node \"S1\"",
    ),
    (
        Code::ToolStderr,
        "ibwarn: [12345] mad_rpc_open_port: can't open UMAD port ((null):0)",
    ),
    (
        Code::ToolStderr,
        "ibpanic: [12345] main: discover failed: Connection timed out",
    ),
    (
        Code::ToolStderr,
        "ibnetdiscover: iberror: failed: discover failed",
    ),
    (
        Code::ToolStderr,
        "ibnetdiscover: iberror: [pid 4242] main: failed: discover failed",
    ),
    (Code::GroupedHeader, "Non-Chassis Nodes"),
    (Code::GroupedHeader, "Chassis 1 (guid 0x2c9020040b4d8)"),
    (Code::GroupedHeader, "Chassis 12"),
    (Code::GroupedHeader, "Hostname: xsigo-vp780"),
];

/// `text` with `line` inserted before its line `at` (0-based; past the end appends it), and
/// the byte offset where it starts.
fn insert(text: &str, at: usize, line: &str) -> (String, usize) {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i == at {
            break;
        }
        offset += l.len();
    }
    let mut out = text.to_owned();
    let mut line = format!("{line}\n");
    if offset == out.len() && !out.is_empty() && !out.ends_with('\n') {
        line.insert(0, '\n');
        offset += 1;
    }
    out.insert_str(offset, &line);
    (out, offset)
}

fn parse_with(text: &str, f: impl FnOnce(&mut ParseOptions)) -> Result<Discovered, ParseErrors> {
    let mut o = opts();
    f(&mut o);
    parse(text, &o)
}

// ---------------------------------------------------------------------------------------------
// Noise.

#[test]
fn every_noise_line_is_skipped_with_one_warning_on_it() {
    let base = ok(SAMPLE);
    let lines = SAMPLE.lines().count();
    // The top, inside a switch's record (between the header and its ports, between two
    // ports), between records, inside an end node's record, and the end.
    let switch_header = SAMPLE
        .lines()
        .position(|l| l.starts_with("Switch"))
        .unwrap();
    let ca_port = SAMPLE.lines().position(|l| l.starts_with("[1](")).unwrap();
    for (code, line) in NOISE {
        for at in [0, switch_header + 1, switch_header + 2, 5, ca_port, lines] {
            for indent in ["", "  "] {
                let noisy_line = format!("{indent}{line}");
                let (text, offset) = insert(SAMPLE, at, &noisy_line);
                let d = ok(&text);
                assert_eq!(d.fabric, base.fabric, "{line} at line {at}");
                assert_eq!(d.lids, base.lids);
                assert_eq!(warning_codes(&d), vec![*code], "{line} at line {at}");
                let w = &d.warnings[0];
                assert_eq!(w.span().offset(), offset + indent.len(), "{line}");
                assert_eq!(w.span().len(), line.trim_end().len(), "{line}");
            }
        }
    }
}

/// One rendered warning per noise line of `code`, each in a small dump.
fn rendered_noise(code: Code) -> String {
    let mut out = Vec::new();
    for (c, line) in NOISE.iter().filter(|(c, _)| *c == code) {
        let text = format!("Switch\t8 \"S1\"\t\t# \"sw1\"\n{line}\n[1]\t\"H1\"[1]\n\nCa\t1 \"H1\"\n[1]\t\"S1\"[1]\n");
        let d = ok(&text);
        assert_eq!(warning_codes(&d), vec![*c]);
        out.push(render(&d.warnings[0]));
    }
    out.join("\n")
}

#[test]
fn terminal_log_headers_render() {
    insta::assert_snapshot!("noise_terminal_log", rendered_noise(Code::TerminalLog));
}

#[test]
fn shell_prompts_render() {
    insta::assert_snapshot!("noise_shell_prompt", rendered_noise(Code::ShellPrompt));
}

#[test]
fn captured_standard_error_renders() {
    insta::assert_snapshot!("noise_tool_stderr", rendered_noise(Code::ToolStderr));
}

#[test]
fn grouped_output_headers_render() {
    insta::assert_snapshot!("noise_grouped_header", rendered_noise(Code::GroupedHeader));
}

#[test]
fn lines_that_only_look_like_noise_are_refused() {
    for (line, code) in [
        ("hello world", Code::UnknownLine),
        ("= PuTTY log", Code::UnknownLine),
        ("Chassis x", Code::UnknownLine),
        ("Chassis 1 (guid zz)", Code::UnknownLine),
        ("Chassis 1 extra", Code::UnknownLine),
        ("Non-Chassis nodes", Code::UnknownLine),
        ("root@ host:~# ls", Code::UnknownLine),
        ("root host:~# ls", Code::UnknownLine),
        ("query_smp.c:195 no semicolon", Code::UnknownLine),
        ("query_smp.h:195; a header, not a C file", Code::UnknownLine),
        ("ibwarn:no space", Code::UnknownLine),
        ("prog with spaces: iberror: x", Code::UnknownLine),
        ("$5 for a cable", Code::UnknownLine),
        ("$ 5", Code::UnknownLine),
        ("sh-x# ls", Code::UnknownLine),
        ("bash-5.1$ls", Code::UnknownLine),
        ("[user host]$ ls", Code::PortOutsideNode),
        ("switch >> ls", Code::UnknownLine),
        ("switch #ls", Code::UnknownLine),
        ("switch [ bad!state ] #", Code::UnknownLine),
        ("switch (config) x #", Code::UnknownLine),
        ("switch (enable) #", Code::UnknownLine),
        ("123 # ls", Code::UnknownLine),
    ] {
        let text = format!("{line}\nSwitch\t8 \"S1\"\n");
        let e = errors(&text);
        let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
        assert_eq!(codes, vec![code], "{line}");
    }
}

#[test]
fn crlf_a_byte_order_mark_and_no_final_newline_read_right() {
    let base = ok(SAMPLE);
    let crlf = SAMPLE.replace('\n', "\r\n");
    let unended = SAMPLE.trim_end_matches('\n');
    let bom = format!("\u{feff}{SAMPLE}");
    let all = format!("\u{feff}{}", crlf.trim_end_matches("\r\n"));
    for text in [&crlf, unended, &bom, &all] {
        let d = ok(text);
        assert_eq!(d.fabric, base.fabric);
        assert_eq!(d.lids, base.lids);
        assert!(d.warnings.is_empty(), "{:?}", warning_codes(&d));
    }
    // A noise line in a CRLF file: its span leaves the `\r` out.
    let (text, offset) = insert(&crlf, 0, "ibwarn: [1] x: y\r");
    let d = ok(&text);
    assert_eq!(warning_codes(&d), vec![Code::ToolStderr]);
    assert_eq!(d.warnings[0].span().offset(), offset);
    assert_eq!(d.warnings[0].span().len(), "ibwarn: [1] x: y".len());
    assert_eq!(d.fabric, base.fabric);
}

#[test]
fn grouped_output_reads_as_the_plain_output() {
    // ibsim's fabric has no chassis: grouped output only adds `Non-Chassis Nodes`.
    let plain = ok(TOPOLOGY);
    let grouped = ok(GROUPED);
    assert_eq!(grouped.fabric, plain.fabric);
    assert_eq!(grouped.lids, plain.lids);
    assert_eq!(warning_codes(&grouped), vec![Code::GroupedHeader]);
    // A chassis, as rdma-core's `ibnetdiscover -g` prints one: a chassis header, spine and
    // line sections as comments, chassis comments after the GUID lines, and external port
    // numbers (`[ext 1]`) after the ports of a line board.
    let chassis = "\
#
# Topology file: generated on Tue Mar  5 10:12:01 2024
#
# Initiated from node 0002c903000e0b50 port 0002c903000e0b51

Chassis 1 (guid 0x2c9020040b4db)

# Spine Nodes
vendid=0x2c9
devid=0xbd36
sysimgguid=0x2c9020040b4db\t\t# Chassis 1 (ISR9288)
switchguid=0x2c9020040b4d8(2c9020040b4d8)\t# ISR9288/ISR9096 Voltaire sFB-12 Spine 1 Chip 1
Switch\t24 \"S-0002c9020040b4d8\"\t\t# \"ISR9288 Voltaire sFB-12\" enhanced port 0 lid 1 lmc 0
[1]\t\"S-0002c9020040b4e8\"[19]\t\t# \"ISR9288 Voltaire sLB-24\" lid 2 4xSDR

# Line Nodes
vendid=0x2c9
devid=0xb924
sysimgguid=0x2c9020040b4db\t\t# Chassis 1 (ISR9288)
switchguid=0x2c9020040b4e8(2c9020040b4e8)\t# ISR9288/ISR9096 Voltaire sLB-24 Line 1 Chip 1
Switch\t24 \"S-0002c9020040b4e8\"\t\t# \"ISR9288 Voltaire sLB-24\" base port 0 lid 2 lmc 0
[19]\t\"S-0002c9020040b4d8\"[1]\t\t# \"ISR9288 Voltaire sFB-12\" lid 1 4xSDR
[1][ext 1]\t\"H-0002c903000e0b50\"[1](2c903000e0b51) \t\t# \"cn001 HCA-1\" lid 3 4xSDR

# Chassis Switches

# Chassis CAs

Non-Chassis Nodes

vendid=0x2c9
devid=0x6282
sysimgguid=0x2c903000e0b53
caguid=0x2c903000e0b50
Ca\t2 \"H-0002c903000e0b50\"\t\t# \"cn001 HCA-1\"
[1](2c903000e0b51) \t\"S-0002c9020040b4e8\"[1][ext 1]\t\t# lid 3 lmc 0 \"ISR9288 Voltaire sLB-24\" lid 2 4xSDR
";
    let d = ok(chassis);
    assert_eq!(
        warning_codes(&d),
        vec![Code::GroupedHeader, Code::GroupedHeader]
    );
    let plain: String = chassis
        .lines()
        .filter(|l| !l.starts_with("Chassis") && !l.starts_with("Non-Chassis"))
        .map(|l| l.replace("[ext 1]", "") + "\n")
        .collect();
    let p = ok(&plain);
    assert!(p.warnings.is_empty(), "{:?}", warning_codes(&p));
    assert_eq!(d.fabric, p.fabric);
    assert_eq!(d.lids, p.lids);
    assert_eq!(d.fabric.links().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// LIDs not yet assigned.

const UNASSIGNED: &str = "\
Switch\t8 \"S1\"\t\t# \"leaf1\" enhanced port 0 lid 1 lmc 0
[1]\t\"H1\"[1](11) \t\t# \"cn1\" lid 5 4xEDR
[2]\t\"H2\"[1](21) \t\t# \"cn2\" lid 65535 4xEDR
[3]\t\"S2\"[1]\t\t# \"leaf2\" lid 0 4xEDR

Switch\t8 \"S2\"\t\t# \"leaf2\" enhanced port 0 lid 0 lmc 0
[1]\t\"S1\"[3]\t\t# \"leaf1\" lid 1 4xEDR
[2]\t\"H3\"[1](31) \t\t# \"cn3\" lid 0 4xEDR

caguid=0x10
Ca\t1 \"H1\"\t\t# \"cn1\"
[1](11) \t\"S1\"[1]\t\t# lid 5 lmc 0 \"leaf1\" lid 1 4xEDR

caguid=0x20
Ca\t1 \"H2\"\t\t# \"cn2\"
[1](21) \t\"S1\"[2]\t\t# lid 65535 lmc 0 \"leaf1\" lid 1 4xEDR

caguid=0x30
Ca\t1 \"H3\"\t\t# \"cn3\"
[1](31) \t\"S2\"[2]\t\t# lid 0 lmc 0 \"leaf2\" lid 0 4xEDR
";

#[test]
fn ports_at_lid_0_or_65535_are_unassigned_and_listed() {
    let d = ok(UNASSIGNED);
    assert_eq!(warning_codes(&d), vec![Code::UnassignedLid]);
    let f = &d.fabric;
    let id = |n: &str| f.find(n).unwrap();
    assert_eq!(
        d.unassigned,
        vec![
            PortRef::new(id("leaf2"), 0),
            PortRef::new(id("cn2"), 1),
            PortRef::new(id("cn3"), 1),
        ]
    );
    assert_eq!(
        d.lids.get(id("leaf1"), PortNum(0)),
        Some(weft_fabric::Lid(1))
    );
    assert_eq!(d.lids.get(id("cn1"), PortNum(1)), Some(weft_fabric::Lid(5)));
    for p in &d.unassigned {
        assert_eq!(d.lids.get(p.node, p.port), None);
    }
    // Located at the first `lid 65535` or `lid 0`.
    let at = UNASSIGNED.find("lid 65535").unwrap();
    assert_eq!(d.warnings[0].span().offset(), at);
    insta::assert_snapshot!("unassigned_lids", render(&d.warnings[0]));
    // A file without any LID has nothing to say about them.
    let none = UNASSIGNED
        .replace("lid 1 ", "lid 0 ")
        .replace("lid 5 ", "lid 0 ");
    let d = ok(&none);
    assert!(d.warnings.is_empty(), "{:?}", warning_codes(&d));
    assert!(d.unassigned.is_empty() && d.lids.base.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Rates.

#[test]
fn a_rate_disagreement_is_a_warning_and_the_link_takes_the_slower() {
    for (a, b, width, speed) in [
        ("4xHDR", "4xEDR", Width::X4, Speed::EDR),
        ("4xHDR", "2xNDR", Width::X2, Speed::HDR),
        ("1xEDR", "4xEDR", Width::X1, Speed::EDR),
        ("4xFDR10", "4xFDR", Width::X4, Speed::FDR10),
    ] {
        let text = format!(
            "Switch\t8 \"S1\"\t\t# \"sw1\"\n[1]\t\"H1\"[1]\t\t# \"h1\" lid 3 {a}\n\n\
             Ca\t1 \"H1\"\t\t# \"h1\"\n[1]\t\"S1\"[1]\t\t# lid 3 lmc 0 \"sw1\" lid 1 {b}\n"
        );
        let d = ok(&text);
        assert_eq!(warning_codes(&d), vec![Code::RateMismatch], "{a} {b}");
        let l = &d.fabric.links()[0];
        assert_eq!((l.width, l.speed), (Some(width), Some(speed)), "{a} {b}");
        if a == "4xHDR" && b == "2xNDR" {
            insta::assert_snapshot!("rate_mismatch", render(&d.warnings[0]));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Dumps cut short.

const CUT_SHORT: &str = "\
Switch\t8 \"S1\"\t\t# \"leaf1\"
[1]\t\"H1\"[1]\t\t# \"cn1\" lid 0 4xEDR
[2]\t\"H2\"[1]\t\t# \"cn2\" lid 0 4xEDR
[3]\t\"S9\"[7]\t\t# \"spine9\" lid 0 4xEDR

Ca\t1 \"H1\"\t\t# \"cn1\"
[1]\t\"S1\"[1]

Ca\t1 \"H2\"\t\t# \"cn2\"
[1]\t\"S1\"[2]
src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,3 Attr 0x11:0) bad status 110; Connection timed out
";

#[test]
fn a_node_without_a_record_is_an_error_unless_partial() {
    let e = errors(CUT_SHORT);
    let d = &e.diagnostics()[0];
    assert_eq!(d.code(), Code::UnknownNode);
    assert!(d.is_error());
    assert!(
        d.help_text().unwrap().contains("`--partial`"),
        "{:?}",
        d.help_text()
    );
    let d = parse_with(CUT_SHORT, |o| o.partial = true).unwrap();
    assert_eq!(warning_codes(&d), vec![Code::UnknownNode, Code::ToolStderr]);
    assert!(!d.warnings[0].is_error());
    let f = &d.fabric;
    assert_eq!(f.nodes().len(), 3, "S9 is left out");
    assert_eq!(f.links().len(), 2, "the link to S9 is dropped");
    let leaf = f.node(f.find("leaf1").unwrap());
    assert_eq!(leaf.port(PortNum(3)).unwrap().link, None);
    insta::assert_snapshot!("partial", render(&d.warnings[0]));
}

#[test]
fn reports_cut_short_are_partial_too() {
    // cn004's own line is missing: the switch's line names it with its type, LID, port, port
    // GUID and description, so it is made up from that line, with a warning.
    let full = ok(PORTS);
    let cut: String = PORTS
        .lines()
        .filter(|l| !l.starts_with("CA     7"))
        .map(|l| format!("{l}\n"))
        .collect();
    let d = ok(&cut);
    assert_eq!(
        warning_codes(&d),
        vec![
            Code::PortCountGuessed,
            Code::PeerOnlyNode,
            Code::NodeGuidGuessed
        ]
    );
    let (f, g) = (&d.fabric, &full.fabric);
    assert_eq!(f.links().len(), g.links().len());
    let (cn, full_cn) = (
        f.node(f.find("cn004 HCA-1").unwrap()),
        g.node(g.find("cn004 HCA-1").unwrap()),
    );
    assert_eq!(cn.spec, full_cn.spec);
    assert_eq!(cn.ports.len(), full_cn.ports.len());
    assert_eq!(
        d.lids.base.get(&f.find("cn004 HCA-1").unwrap()),
        full.lids.base.get(&g.find("cn004 HCA-1").unwrap()),
        "its LID comes from the switch's line"
    );
    let cut: String = LINKINFO.lines().skip(2).map(|l| format!("{l}\n")).collect();
    assert!(parse(&cut, &opts()).is_err());
    let d = parse_with(&cut, |o| o.partial = true).unwrap();
    assert!(d.fabric.find("cn004 HCA-1").is_none());
    assert_eq!(d.fabric.links().len(), 6);
}

// ---------------------------------------------------------------------------------------------
// A dump that describes no node.

/// What a discovery that could not open the HCA port leaves when its standard error is
/// captured with its output.
const FAILED_DISCOVERY: &str = "\
ibwarn: [12345] mad_rpc_open_port: can't open UMAD port (NULL:0)
src/ibnetdisc.c:811; ibnd_discover_fabric: Failed to open MAD port
[root@mgmt01 ~]# ibnetdiscover
";

/// `text` read in `format` (`None`: detected), partial or not, strict or not: refused with
/// exactly one `no_nodes` error, the only error unless strict reading made the noise
/// warnings errors too.
fn no_nodes(text: &str, format: Option<InputFormat>) -> IbnetDiagnostic {
    let mut found = Vec::new();
    for (partial, strict) in [(false, false), (true, false), (false, true), (true, true)] {
        let e = parse_with(text, |o| {
            o.format = format;
            o.partial = partial;
            o.strict = strict;
        })
        .map(|d| d.fabric.nodes().len())
        .expect_err(&format!("{text:?} as {format:?}"));
        let (no, others): (Vec<_>, Vec<_>) = e
            .diagnostics()
            .iter()
            .partition(|d| d.code() == Code::NoNodes);
        assert_eq!(no.len(), 1, "{text:?} as {format:?}: {:?}", e.diagnostics());
        assert!(no[0].is_error());
        if !strict {
            assert!(others.is_empty(), "{text:?} as {format:?}: {others:?}");
        }
        assert!(
            others
                .iter()
                .all(|d| d.help_text().is_some_and(|h| h.contains("`--strict`"))),
            "{text:?}: {others:?}"
        );
        found.push(no[0].clone());
    }
    // The same error whatever the mode.
    for d in &found {
        assert_eq!(d.message(), found[0].message());
    }
    found.swap_remove(0)
}

#[test]
fn a_dump_without_nodes_is_an_error_in_every_format_and_mode() {
    let formats = [
        None,
        Some(InputFormat::Topology),
        Some(InputFormat::PortsReport),
        Some(InputFormat::LinkInfo),
    ];
    let crlf = FAILED_DISCOVERY.replace('\n', "\r\n");
    for text in [
        "",
        "\n",
        "  \n\t\n\n",
        "\u{feff}",
        FAILED_DISCOVERY,
        crlf.as_str(),
        "[root@mgmt01 ~]# ibnetdiscover > fabric.txt",
        "#\n# Topology file: generated on Tue Jan  2 10:11:12 2024\n#\n",
    ] {
        for format in formats {
            no_nodes(text, format);
        }
    }
    // Lines a reader takes without making a node: settings of a record whose header never
    // comes; an `iblinkinfo` node header without port lines.
    no_nodes("vendid=0x2c9\ndevid=0xcf09\n", None);
    no_nodes("CA: cn001 HCA-1:\n", None);
    // A node is enough.
    assert_eq!(ok("Switch\t8 \"S1\"\n").fabric.nodes().len(), 1);
}

#[test]
fn a_dump_without_nodes_says_what_it_holds() {
    let message = |text: &str| no_nodes(text, None).message().to_owned();
    assert_eq!(message(""), "the dump is empty: it describes no node");
    assert_eq!(
        message("\u{feff}"),
        "the dump is empty: it describes no node"
    );
    assert_eq!(
        message("\n"),
        "the dump describes no node: its only line is blank"
    );
    assert_eq!(
        message(" \n\t\n\n"),
        "the dump describes no node: its 3 lines are blank"
    );
    assert_eq!(
        message(FAILED_DISCOVERY),
        "the dump describes no node: its 3 lines are noise: 2 messages captured from standard \
         error (`ibwarn: [12345] mad_rpc_open_port: can't open UMAD port (NULL:0)`, \
         `src/ibnetdisc.c:811; ibnd_discover_fabric: Failed to open MAD port`) and a shell \
         prompt (`[root@mgmt01 ~]# ibnetdiscover`)"
    );
    assert_eq!(
        message("[root@mgmt01 ~]# ibnetdiscover > fabric.txt"),
        "the dump describes no node: its only line is noise: a shell prompt (`[root@mgmt01 ~]# \
         ibnetdiscover > fabric.txt`)"
    );
    // More than two lines of a kind: the first two and `…`; long lines cut; blank lines last.
    let many = format!(
        "\n{}\n# x\nibwarn: [1] a\nibwarn: [2] b\nibwarn: [3] {}\n",
        "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2024.01.02 10:11:12 =~=~=~=~=~=~=~=~=~=~=~=",
        "c".repeat(200)
    );
    assert_eq!(
        message(&many),
        format!(
            "the dump describes no node: its 6 lines are a terminal-log line (`=~=~=~=~=~=~=~=~=~=~=~= \
             PuTTY log 2024.01.02 10:11:12 =~=~=~=~=~=~=~=~=~=~=~=`), a comment (`# x`), 3 \
             messages captured from standard error (`ibwarn: [1] a`, `ibwarn: [2] b`, …) and a \
             blank line"
        )
    );
    let long = format!("ibwarn: {}", "c".repeat(200));
    assert_eq!(
        message(&long),
        format!(
            "the dump describes no node: its only line is noise: a message captured from \
             standard error (`ibwarn: {}…`)",
            "c".repeat(72)
        )
    );
    assert_eq!(
        message("vendid=0x2c9\ndevid=0xcf09\n"),
        "the dump describes no node: its 2 lines are 2 lines outside a node record \
         (`vendid=0x2c9`, `devid=0xcf09`)"
    );
    assert_eq!(
        message("CA: cn001 HCA-1:\n"),
        "the dump describes no node: its only line is a node header without port lines (`CA: \
         cn001 HCA-1:`)"
    );
    let d = no_nodes(FAILED_DISCOVERY, None);
    assert_eq!(
        (d.span().offset(), d.span().len()),
        (0, FAILED_DISCOVERY.lines().next().unwrap().len()),
        "on the first line"
    );
    let help = d.help_text().unwrap();
    assert!(help.starts_with("discovery probably failed"), "{help}");
    insta::assert_snapshot!(
        "no_nodes",
        format!(
            "{}\n{}",
            render(&parse(FAILED_DISCOVERY, &opts()).unwrap_err()),
            render(&parse("", &opts()).unwrap_err())
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Strict reading.

#[test]
fn strict_reading_makes_every_warning_an_error() {
    let (text, _) = insert(SAMPLE, 0, "root@mgmt01:~# ibnetdiscover");
    assert!(parse_with(SAMPLE, |o| o.strict = true).is_ok());
    let e = parse_with(&text, |o| o.strict = true).unwrap_err();
    let d = &e.diagnostics()[0];
    assert_eq!((d.code(), d.is_error()), (Code::ShellPrompt, true));
    assert!(d.help_text().unwrap().contains("`--strict`"));
    // Warnings of every phase: a report's guesses, a node name made unique, LIDs missing.
    for text in [PORTS, UNASSIGNED] {
        let e = parse_with(text, |o| o.strict = true).unwrap_err();
        let lenient = parse(text, &opts()).unwrap();
        let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
        assert_eq!(codes, warning_codes(&lenient));
        assert!(e.diagnostics().iter().all(IbnetDiagnostic::is_error));
    }
}

// ---------------------------------------------------------------------------------------------
// The reports.

#[test]
fn the_format_is_detected() {
    let cases = [
        (SAMPLE, InputFormat::Topology),
        (TOPOLOGY, InputFormat::Topology),
        (GROUPED, InputFormat::Topology),
        (PORTS, InputFormat::PortsReport),
        (LINKINFO, InputFormat::LinkInfo),
        ("", InputFormat::Topology),
        (
            "0x0000000000100006 \"  cn003\" 0 2[  ] ==( …",
            InputFormat::LinkInfo,
        ),
    ];
    for (text, format) in cases {
        assert_eq!(detect_format(text), format);
        // Noise and comments before the first line do not change it.
        let noisy = format!("root@h:~# x\n# a comment\nibwarn: [1] f: m\n\n{text}");
        assert_eq!(detect_format(&noisy), format);
    }
    // Forced: a ports report read as a topology is refused line by line.
    let e = parse_with(PORTS, |o| o.format = Some(InputFormat::Topology)).unwrap_err();
    assert!(e
        .diagnostics()
        .iter()
        .all(|d| d.code() == Code::UnknownLine));
}

#[test]
fn iblinkinfo_before_an_sm_finds_peers_by_name() {
    let d = ok(LINKINFO_NO_SM);
    assert!(d.lids.base.is_empty());
    assert_eq!(d.fabric.links().len(), 7);
    // Two nodes with one name and no LIDs: the peer cannot be told.
    let twice = LINKINFO_NO_SM.replace("CA: cn002 HCA-1:", "CA: cn001 HCA-1:");
    let e = parse(&twice, &opts()).unwrap_err();
    let codes: Vec<Code> = e.diagnostics().iter().map(|d| d.code()).collect();
    assert!(codes.contains(&Code::AmbiguousPeer), "{codes:?}");
}

#[test]
fn report_errors_render() {
    let ports = "\
SW     1  8 0x0000000000200000 4x SDR                                    'leaf1'
XX     1  7 0x0000000000200000 4x SDR                                    'leaf1'
SW     1  x 0x0000000000200000 4x SDR                                    'leaf1'
SW     1  6 0x00000000zz 4x SDR                                    'leaf1'
SW     1  5 0x0000000000200000 4x SDR - SW 3 1 0x0000000000200001 leaf1 - spine1
SW     1  4 0x0000000000200000 4x SDR 'garbage
SW 70000  3 0x0000000000200000 4x SDR                                    'leaf1'
SW     1  2 0x0000000000200000 9x QQQ                                    'leaf1'
";
    let e = parse_with(ports, |o| o.format = Some(InputFormat::PortsReport)).unwrap_err();
    let linkinfo = "\
      0x0000000000100008      7    1[  ] ==( 4X 2.5 Gbps Active/  LinkUp)==>       3    4[  ] \"spine1\" ( )
Switch: 0x0000000000200001 spine1:
           3    1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>       1    5 \"leaf1\" ( )
           3    2[  ] (( 4X           2.5 Gbps Active/  LinkUp))       1    6[  ] \"leaf1\" ( )
           3    3[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>       6    2[  ] spine1 ( )
0x0000000000200001 \"                        spine1\"      0    4[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
";
    let e2 = parse_with(linkinfo, |o| o.format = Some(InputFormat::LinkInfo)).unwrap_err();
    insta::assert_snapshot!("report_errors", format!("{}\n{}", render(&e), render(&e2)));
}

// ---------------------------------------------------------------------------------------------
// Property: noise anywhere leaves the topology alone.

/// A noise line of class `class` (0 to 3) made from random parts.
fn noise_line(class: u8, n: u32, word: &str, host: &str) -> (Code, String) {
    match class % 4 {
        0 => (
            Code::TerminalLog,
            if n.is_multiple_of(2) {
                format!(
                    "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2024.{:02}.{:02} {:02}:{:02}:{:02} \
                     =~=~=~=~=~=~=~=~=~=~=~=",
                    n % 12 + 1,
                    n % 28 + 1,
                    n % 24,
                    n % 60,
                    n % 59
                )
            } else {
                format!("Script started on 2024-01-02 10:11:{:02}+01:00", n % 60)
            },
        ),
        1 => (
            Code::ShellPrompt,
            match n % 3 {
                0 => format!("{word}@{host}:~# ibnetdiscover"),
                1 => format!("[{word}@{host} ib]$ ibnetdiscover -p > {word}.txt"),
                _ => format!("{word}@{host}:/tmp/{word}$"),
            },
        ),
        2 => (
            Code::ToolStderr,
            match n % 3 {
                0 => format!(
                    "src/query_smp.c:{}; umad (DR path slid 0; dlid 0; 0,{} Attr 0x11:0) bad \
                     status 110; Connection timed out",
                    n % 400,
                    n % 36
                ),
                1 => format!("ibwarn: [{n}] {word}: {host} failed"),
                _ => format!("ibnetdiscover: iberror: [pid {n}] main: failed: {word}"),
            },
        ),
        _ => (
            Code::GroupedHeader,
            match n % 3 {
                0 => format!("Chassis {}", n % 100),
                1 => format!("Chassis {} (guid 0x{:x})", n % 100, u64::from(n) + 1),
                _ => "Non-Chassis Nodes".to_owned(),
            },
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn noise_anywhere_leaves_the_topology_alone(
        format in 0usize..3,
        inserts in proptest::collection::vec(
            (any::<u16>(), any::<u8>(), any::<u32>(), "[a-z][a-z0-9_]{0,7}", "[a-z][a-z0-9-]{0,9}"),
            1..8,
        ),
    ) {
        let base_text = [SAMPLE, PORTS, LINKINFO][format];
        let base = ok(base_text);
        let mut text = base_text.to_owned();
        let mut want: Vec<Code> = Vec::new();
        let mut lines: Vec<String> = Vec::new();
        for (at, class, n, word, host) in &inserts {
            let (code, line) = noise_line(*class, *n, word, host);
            let count = text.lines().count() + 1;
            text = insert(&text, usize::from(*at) % count, &line).0;
            want.push(code);
            lines.push(line);
        }
        let d = ok(&text);
        prop_assert_eq!(&d.fabric, &base.fabric);
        prop_assert_eq!(&d.lids, &base.lids);
        let noise = |c: &Code| {
            matches!(c, Code::TerminalLog | Code::ShellPrompt | Code::ToolStderr | Code::GroupedHeader)
        };
        let mut got: Vec<Code> = warning_codes(&d).into_iter().filter(noise).collect();
        let others: Vec<Code> = warning_codes(&d).into_iter().filter(|c| !noise(c)).collect();
        prop_assert_eq!(others, warning_codes(&base));
        got.sort();
        want.sort();
        prop_assert_eq!(got, want);
        // Each warning covers a whole inserted line.
        for w in d.warnings.iter().filter(|w| noise(&w.code())) {
            let (at, len) = (w.span().offset(), w.span().len());
            let before = text.get(..at).unwrap();
            prop_assert!(before.is_empty() || before.ends_with('\n'));
            let line = text.get(at..at + len).unwrap();
            prop_assert!(lines.iter().any(|l| l == line), "{line}");
        }
    }
}

#[test]
fn made_up_node_guids_that_collide_are_refused() {
    // Port 1 of `a` (0x11) and port 2 of `b` (0x12) both give node GUID 0x10.
    let ports = "\
CA     5  1 0x0000000000000011 4x EDR - SW     1  1 0x0000000000200000 ( 'a' - 'sw' )
CA     6  2 0x0000000000000012 4x EDR - SW     1  2 0x0000000000200000 ( 'b' - 'sw' )
SW     1  1 0x0000000000200000 4x EDR - CA     5  1 0x0000000000000011 ( 'sw' - 'a' )
SW     1  2 0x0000000000200000 4x EDR - CA     6  2 0x0000000000000012 ( 'sw' - 'b' )
";
    let e = parse(ports, &opts()).unwrap_err();
    assert_eq!(e.diagnostics()[0].code(), Code::DuplicateGuid);
    // The two ports of one adapter (one description) are one node.
    let one = ports.replace("'b'", "'a'");
    let d = ok(&one);
    assert_eq!(d.fabric.nodes().len(), 2);
    assert_eq!(
        d.fabric.node(d.fabric.find("a").unwrap()).spec.port_count,
        2
    );
    // In `iblinkinfo` every header is a node of its own, whatever its name.
    let linkinfo = "\
CA: a:
      0x0000000000000011      5    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>       1    1[  ] \"sw\" ( )
CA: a:
      0x0000000000000012      6    2[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>       1    2[  ] \"sw\" ( )
Switch: 0x0000000000200000 sw:
           1    1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>       5    1[  ] \"a\" ( )
           1    2[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>       6    2[  ] \"a\" ( )
";
    let e = parse(linkinfo, &opts()).unwrap_err();
    assert_eq!(e.diagnostics()[0].code(), Code::DuplicateGuid);
    insta::assert_snapshot!("made_up_guids_collide", render(&e));
}

/// Tokens the reports are made of, and some that break them.
const REPORT_TOKENS: &[&str] = &[
    "SW",
    "CA",
    "RT",
    "??",
    "0",
    "1",
    "7",
    "65535",
    "99999999999",
    "0x0000000000200000",
    "0x0000000000000011",
    "0x",
    "0xzz",
    "4x",
    "4X",
    "EDR",
    "???",
    "-",
    "(",
    ")",
    "( '",
    "' )",
    "'a'",
    "' - '",
    "'",
    "\"",
    "\"a\"",
    "Switch:",
    "CA:",
    "Router:",
    "a:",
    "1[",
    "2[  ]",
    "3[ 5]",
    "]",
    "==(",
    ")==>",
    "==( 4X 25.78125 Gbps Active/  LinkUp)==>",
    "Down/",
    "25.78125",
    "Gbps",
    "(FDR10)",
    "[  ] \"\" ( )",
    "\"Port not available\"",
    "é",
    "\t",
    "  ",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_report_readers_never_panic(
        lines in proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(REPORT_TOKENS), 0..14),
            0..12,
        ),
    ) {
        let text: String = lines.iter().map(|l| l.join(" ") + "\n").collect();
        for format in [InputFormat::PortsReport, InputFormat::LinkInfo, InputFormat::Topology] {
            let _ = parse_with(&text, |o| o.format = Some(format));
        }
        let _ = detect_format(&text);
    }
}

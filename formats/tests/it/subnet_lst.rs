//! ibdm's `subnet.lst` read as a topology: what OpenSM 3.3.23 wrote as `opensm-subnet.lst`
//! over ibsim running `tests/data/ibsim-leaf-spine.net` reads to the same nodes, GUIDs,
//! cables, rates and LIDs as ibnetdiscover's dump of the same simulated fabric; mutated
//! copies never panic the reader; known formats that are no topology are refused by name;
//! and what the readers say names only GUIDs that are in the input (loopback cables, port
//! counts and LIDs `weft check` refuses, a report's made-up end nodes).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::collections::BTreeSet;
use weft_fabric::rng::SplitMix64;
use weft_fabric::{Fabric, Guid, NodeKind};
use weft_formats::ibnetdiscover::{self, Code, Discovered, InputFormat, ParseErrors, ParseOptions};

const TOPOLOGY: &str = include_str!("../data/ibsim-leaf-spine.ibnetdiscover");
const SUBNET: &str = include_str!("../data/ibsim-leaf-spine.subnet.lst");

fn read(text: &str) -> Result<Discovered, ParseErrors> {
    ibnetdiscover::parse(text, &ParseOptions::default())
}

fn ok(text: &str) -> Discovered {
    read(text).unwrap_or_else(|e| panic!("{e}: {:#?}", e.diagnostics()))
}

/// A node: GUID, kind, name, port count, port GUIDs, system image GUID.
type NodeShape = (Guid, NodeKind, String, u8, Vec<Guid>, Option<Guid>);
/// A cable: both ends by node GUID and port, and the rate.
type CableShape = ((Guid, u8), (Guid, u8), String);

fn nodes(f: &Fabric) -> BTreeSet<NodeShape> {
    f.nodes()
        .iter()
        .map(|n| {
            let guids = n.ports.iter().map(|p| p.guid).collect();
            let kind = n.kind();
            (
                n.guid(),
                kind,
                n.name().to_owned(),
                n.spec.port_count,
                guids,
                n.spec.system_guid,
            )
        })
        .collect()
}

fn cables(f: &Fabric) -> BTreeSet<CableShape> {
    f.links()
        .iter()
        .map(|l| {
            let end = |p: weft_fabric::PortRef| (f.node(p.node).guid(), p.port.0);
            let (a, b) = (end(l.a), end(l.b));
            (a.min(b), a.max(b), format!("{:?}{:?}", l.width, l.speed))
        })
        .collect()
}

/// LIDs by (node GUID, port).
fn lids(d: &Discovered) -> BTreeSet<(Guid, u8, u16)> {
    d.lids
        .base
        .iter()
        .flat_map(|(id, ports)| {
            ports
                .iter()
                .map(|(p, l)| (d.fabric.node(*id).guid(), p.0, l.0))
        })
        .collect()
}

#[test]
fn opensm_subnet_lst_reads_as_ibnetdiscover_does() {
    let want = ok(TOPOLOGY);
    let got = ok(SUBNET);
    assert_eq!(got.format, InputFormat::SubnetLst);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    assert_eq!(got.fabric.nodes().len(), 6);
    assert_eq!(got.fabric.links().len(), 7);
    assert_eq!(nodes(&got.fabric), nodes(&want.fabric));
    assert_eq!(cables(&got.fabric), cables(&want.fabric));
    assert_eq!(lids(&got), lids(&want));
    assert_eq!(lids(&got).len(), 7, "two switches and five HCA ports");
}

/// 16-digit hex runs in `text`: the GUIDs it names.
fn guids_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 16)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Every GUID any diagnostic names (message, labels, help) is one of the input's, by value
/// (the input may write it with more leading zeros).
fn assert_guids_from_input(text: &str, diags: &[ibnetdiscover::IbnetDiagnostic]) {
    let input: BTreeSet<u64> = text
        .split(|c: char| !c.is_ascii_hexdigit())
        .filter_map(|w| u64::from_str_radix(w, 16).ok())
        .collect();
    for d in diags {
        let said = format!("{} {} {:?}", d.message(), d.label(), d.help_text());
        let secondary = format!("{d:?}");
        for g in guids_in(&said).union(&guids_in(&secondary)) {
            let v = u64::from_str_radix(g, 16).unwrap();
            assert!(input.contains(&v), "`{g}` is not in the input: {said}");
        }
    }
}

#[test]
fn mutated_subnet_lst_never_panics_and_names_only_its_guids() {
    let mut rng = SplitMix64(0x5eed_0001);
    let lines: Vec<&str> = SUBNET.lines().collect();
    let mut refused = 0;
    for case in 0..3000 {
        let mut text: Vec<u8> = SUBNET.as_bytes().to_vec();
        for _ in 0..=rng.below(4) {
            let len = text.len() as u64;
            let at = rng.below(len.max(1)) as usize;
            match rng.below(6) {
                0 => {
                    let n = (rng.below(40) as usize).min(text.len() - at);
                    text.drain(at..at + n);
                }
                1 => text.insert(at, b"{} :0x-FG \t\n"[rng.below(12) as usize]),
                2 => {
                    if let Some(b) = text.get_mut(at) {
                        *b = b"0123456789abcdefABCDEF{}: "[rng.below(26) as usize];
                    }
                }
                3 => text.truncate(at),
                4 => {
                    let l = lines[rng.below(lines.len() as u64) as usize];
                    text.splice(at..at, l.bytes().chain([b'\n']));
                }
                _ => {
                    let l = lines[rng.below(lines.len() as u64) as usize];
                    let cut = rng.below(l.len() as u64) as usize;
                    text.extend_from_slice(l.get(..cut).unwrap_or(l).as_bytes());
                }
            }
        }
        let Ok(text) = String::from_utf8(text) else {
            continue;
        };
        match read(&text) {
            Ok(d) => assert_guids_from_input(&text, &d.warnings),
            Err(e) => {
                refused += 1;
                assert!(!e.diagnostics().is_empty(), "case {case}: no diagnostic");
                assert_guids_from_input(&text, e.diagnostics());
            }
        }
    }
    assert!(refused > 1000, "only {refused} of 3000 mutations refused");
}

#[test]
fn known_formats_that_are_no_topology_are_refused_by_name() {
    for (text, named) in [
        (
            "Unicast lids [0x0-0x7] of switch Lid 1 guid 0x0000000000200000 (leaf1):\n",
            "LFT dump",
        ),
        (
            "dump_ucast_routes: Switch 0x0000000000200002\nLID    : Port : Hops : Optimal\n",
            "`opensm.fdbs`",
        ),
        ("0x0000000000100001 0x0002 0x0002\n", "`guid2lid`"),
        (
            "Switch 0x0000000000200000, base LID 1, \"leaf1\"\n",
            "`opensm-sl2vl.dump`",
        ),
        (
            "Switch: guid 0x0000000000200000\n0x0001: 00 ff\n",
            "`opensm-lid-matrix.dump`",
        ),
        (
            "Switch\t: 0x0002c90200482d08 ports 24 \"sw\" base port 0 lid 2 lmc 0\n",
            "`ibswitches`",
        ),
        ("MTS2400 S-1\nP1 -> MT23108 H-1 P1\n", "ibdm topology file"),
        ("{\n  \"format\": \"weft-fabric\"\n}\n", "JSON"),
        ("fabric lab {\n}\n", "a weft program"),
        (
            "StartDevice,StartPort,EndDevice,EndPort\nsw1,1,h1,1\n",
            "cabling spreadsheet",
        ),
    ] {
        let e = read(text).err().unwrap_or_else(|| panic!("read: {text}"));
        let [d] = e.diagnostics() else {
            panic!("{text}: {:#?}", e.diagnostics());
        };
        assert_eq!(d.code(), Code::ForeignFormat, "{text}");
        assert!(d.message().contains(named), "{text}: {}", d.message());
        assert!(d.message().ends_with("not a topology"), "{}", d.message());
    }
}

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/../tests/fixtures/real/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn a_loopback_cable_is_a_warning_naming_it() {
    let text = fixture("ufm-small-lab.ibnetdiscover");
    let d = ok(&text);
    let loops: Vec<&str> = d
        .warnings
        .iter()
        .filter(|w| w.code() == Code::Loopback)
        .map(|w| w.message())
        .collect();
    assert!(!loops.is_empty());
    assert!(
        loops.iter().any(|m| m.contains("port 25 of")
            && m.contains("SX6036")
            && m.ends_with("its own port 26")),
        "{loops:#?}"
    );
    // The same cables from the other end are not warned about twice.
    let links = d
        .fabric
        .links()
        .iter()
        .filter(|l| l.a.node == l.b.node)
        .count();
    assert_eq!(loops.len(), links.min(10));
}

/// One switch (`ports` ports, `lid 1`) and two HCAs at `lids`.
fn two_hcas(ports: u32, lmc: u8, lids: [u16; 2]) -> String {
    let [a, b] = lids;
    format!(
        "Switch {ports} \"S-0000000000000010\" # \"sw\" enhanced port 0 lid 1 lmc 0\n\
         [1] \"H-0000000000000020\"[1](21) # \"h1\" lid {a} 4xEDR\n\
         [2] \"H-0000000000000030\"[1](31) # \"h2\" lid {b} 4xEDR\n\n\
         Ca 1 \"H-0000000000000020\" # \"h1\"\n\
         [1](21) \"S-0000000000000010\"[1] # lid {a} lmc {lmc} 4xEDR\n\n\
         Ca 1 \"H-0000000000000030\" # \"h2\"\n\
         [1](31) \"S-0000000000000010\"[2] # lid {b} lmc {lmc} 4xEDR\n"
    )
}

fn refused(text: &str) -> Vec<(Code, String, usize)> {
    let e = read(text).err().unwrap_or_else(|| panic!("read: {text}"));
    e.diagnostics()
        .iter()
        .map(|d| {
            let line = text.get(..d.span().offset()).unwrap_or("").lines().count();
            (d.code(), d.message().to_owned(), line.max(1))
        })
        .collect()
}

#[test]
fn what_weft_check_refuses_is_refused_at_its_line() {
    ok(&two_hcas(254, 0, [2, 3]));
    // At the header; the HCAs' lines then name a switch that was not read.
    let e = refused(&two_hcas(255, 0, [2, 3]));
    assert_eq!(e[0].0, Code::BadNumber);
    assert!(e[0].1.contains("port count `255`"), "{e:?}");
    assert_eq!(e[0].2, 1);
    // Two HCAs at one LID: refused at the second's own line (and the switch's line sees it).
    let e = refused(&two_hcas(36, 0, [2, 2]));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, Code::DuplicateLid);
    assert!(e[0].1.starts_with("LID 2 is given to"), "{e:?}");
    // The switch's LID taken by an HCA.
    let e = refused(&two_hcas(36, 0, [2, 1]));
    assert_eq!(e[0].0, Code::DuplicateLid, "{e:?}");
    // Under LMC 2, LIDs 4 and 6 overlap (4–7 and 6–9); 4 and 8 do not.
    ok(&two_hcas(36, 2, [4, 8]));
    let e = refused(&two_hcas(36, 2, [4, 6]));
    assert_eq!(e[0].0, Code::DuplicateLid, "{e:?}");
}

#[test]
fn a_ports_report_names_end_nodes_by_the_port_guids_it_prints() {
    let text = fixture("treydock-ports-test2.txt");
    let e = read(&text).expect_err("the excerpt's two ends disagree");
    assert!(e
        .diagnostics()
        .iter()
        .any(|d| d.code() == Code::LinkEndsDisagree));
    assert_guids_from_input(&text, e.diagnostics());
    assert!(
        format!("{:?}", e.diagnostics()).contains("CA 0x946dae0300630bfe"),
        "{:#?}",
        e.diagnostics()
    );
}

//! `guid2lid_onto`: OpenSM's cache of a run on ibsim, whose CA port GUIDs ibsim numbered anew,
//! renamed onto the topology's port GUIDs by the `opensm-subnet.lst` of the same run.

use weft_fabric::Guid;

/// A switch and two one-port CAs, as ibnetdiscover prints them: each CA's port GUID is its
/// node GUID, and the two CAs' GUIDs are consecutive.
const DUMP: &str = "\
switchguid=0x0ff08c43215bae48(0ff08c43215bae48)
Switch 8 \"S-0ff08c43215bae48\" # \"leaf\" enhanced port 0 lid 1 lmc 0
[1] \"H-0ff08c4321664e96\"[1](ff08c4321664e96) # \"a HCA-1\" lid 2 4xHDR
[2] \"H-0ff08c4321664e97\"[1](ff08c4321664e97) # \"b HCA-1\" lid 3 4xHDR

caguid=0x0ff08c4321664e96
Ca 1 \"H-0ff08c4321664e96\" # \"a HCA-1\"
[1](ff08c4321664e96) \"S-0ff08c43215bae48\"[1] # lid 2 lmc 0 \"leaf\" lid 1 4xHDR

caguid=0x0ff08c4321664e97
Ca 1 \"H-0ff08c4321664e97\" # \"b HCA-1\"
[1](ff08c4321664e97) \"S-0ff08c43215bae48\"[2] # lid 3 lmc 0 \"leaf\" lid 1 4xHDR
";

/// What OpenSM wrote on ibsim: ibsim made each CA's port GUID its node GUID + 1, so CA `a`'s
/// new port GUID (…e97) is the dump's GUID of CA `b`'s port.
const LIST: &str = "\
{ SW Ports:08 SystemGUID:0ff08c43215bae48 NodeGUID:0ff08c43215bae48 PortGUID:0ff08c43215bae48 VenID:0002C9 DevID:D2F0 Rev:000000A1 {leaf} LID:0001 PN:01 } { CA Ports:01 SystemGUID:0ff08c4321664e96 NodeGUID:0ff08c4321664e96 PortGUID:0ff08c4321664e97 VenID:0002C9 DevID:101B Rev:000000A1 {a HCA-1} LID:0002 PN:01 } PHY=4x LOG=ACT SPD=50
{ SW Ports:08 SystemGUID:0ff08c43215bae48 NodeGUID:0ff08c43215bae48 PortGUID:0ff08c43215bae48 VenID:0002C9 DevID:D2F0 Rev:000000A1 {leaf} LID:0001 PN:02 } { CA Ports:01 SystemGUID:0ff08c4321664e97 NodeGUID:0ff08c4321664e97 PortGUID:0ff08c4321664e98 VenID:0002C9 DevID:101B Rev:000000A1 {b HCA-1} LID:0003 PN:01 } PHY=4x LOG=ACT SPD=50
";

#[test]
fn ibsim_port_guids_go_back_to_the_topology_s_by_node_and_port() {
    let (program, _) = weft_compiler::import_ibnetdiscover_with(
        DUMP,
        "dump",
        weft_compiler::diagnostic::SourceId(0),
        None,
        "dump",
        weft_compiler::ImportOptions {
            partial: false,
            strict: false,
        },
        &[],
    )
    .unwrap();
    let c = weft_compiler::check("dump.weft", &program, &weft_compiler::NoFiles);
    let fabric = c.elaborated.unwrap().fabric;
    assert!(fabric.find_port_guid(Guid(0x0ff0_8c43_2166_4e96)).is_some());
    assert!(
        fabric.find_guid(Guid(0x0ff0_8c43_2166_4e96)).is_some(),
        "node guid"
    );
    let g2l = "0x0ff08c43215bae48 0x0001 0x0001\n\n0x0ff08c4321664e97 0x0002 0x0002\n\n0x0ff08c4321664e98 0x0003 0x0003\n0x0ff08c43210000ff 0x0009 0x0009\n";
    let (onto, renamed) = weft_bench::guid2lid_onto(g2l, LIST, &fabric);
    assert_eq!(renamed, 2, "{onto}");
    assert_eq!(
        onto,
        "0x0ff08c43215bae48 0x0001 0x0001\n\n0x0ff08c4321664e96 0x0002 0x0002\n\n0x0ff08c4321664e97 0x0003 0x0003\n0x0ff08c43210000ff 0x0009 0x0009\n"
    );
}

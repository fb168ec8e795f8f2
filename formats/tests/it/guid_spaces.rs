//! Node GUIDs and port GUIDs are separate name spaces, as in OpenSM (issue 25): the builder
//! and the ibnetdiscover reader, fed GUIDs from a tiny set so that every kind of collision is
//! common, follow the rules exactly and never reach an internal error. The same checks run
//! under cargo-fuzz (`fuzz/fuzz_targets/guid_spaces.rs`).

#![expect(
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail by panicking and index what they built"
)]

#[path = "../support/guid_spaces.rs"]
mod checks;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn the_builder_follows_the_guid_rules(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        checks::builder(&data);
    }

    #[test]
    fn the_reader_follows_the_guid_rules(data in proptest::collection::vec(any::<u8>(), 0..80)) {
        checks::reader(&data);
    }
}

/// The case of the issue: ibsim counts a CA's port GUID on from its node GUID, here the next
/// CA's node GUID.
#[test]
fn ibsims_counted_port_guid_is_the_next_nodes_node_guid() {
    let text = "switchguid=0x1\nSwitch 2 \"S-0\"\n[1] \"H-1\"[1]\n[2] \"H-2\"[1]\n\n\
                caguid=0x2\nCa 1 \"H-1\"\n[1] \"S-0\"[1]\n\ncaguid=0x3\nCa 1 \"H-2\"\n[1] \"S-0\"[2]\n\n";
    let d = weft_formats::ibnetdiscover::parse(text, &Default::default()).unwrap();
    checks::check_lookups(&d.fabric);
    assert_eq!(d.fabric.nodes().len(), 3);
}

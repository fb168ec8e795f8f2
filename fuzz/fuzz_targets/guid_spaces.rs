//! Node and port GUIDs from a tiny set (every kind of collision common) → the fabric builder
//! against the rules, and ibsim-style net files → the ibnetdiscover reader: each answer the
//! rules give, never an internal error. The checks are `formats/tests/support/guid_spaces.rs`,
//! which `cargo test` runs as a property test too.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../formats/tests/support/guid_spaces.rs"]
mod guid_spaces;

fuzz_target!(|data: &[u8]| {
    guid_spaces::builder(data);
    guid_spaces::reader(data);
});

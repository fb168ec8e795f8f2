//! Any text → the reader of a path-SL file (`.psl`) against lab-16's fabric: never a panic.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = weft_formats::opensm::parse_path_sl(text, &common::lab16().fabric);
    }
});

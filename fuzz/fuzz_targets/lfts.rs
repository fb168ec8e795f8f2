//! Any text → the reader of an LFT dump (`opensm-lfts.dump` / `dump_lfts`) against lab-16's fabric: never a panic.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = weft_formats::opensm::parse_lfts(text, &common::lab16().fabric);
    }
});

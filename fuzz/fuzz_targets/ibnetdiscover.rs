//! Any text → the ibnetdiscover reader (and, when it reads, the writer and reader again):
//! never a panic, and what the writer writes reads back to the same fabric.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_formats::ibnetdiscover::{parse, write, ParseOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = ParseOptions::default();
    if let Ok(found) = parse(text, &opts) {
        if let Ok(out) = write(&found.fabric, None) {
            let again = parse(&out, &opts).map(|d| d.fabric);
            assert!(again.is_ok(), "the writer's output does not read back");
        }
    }
});

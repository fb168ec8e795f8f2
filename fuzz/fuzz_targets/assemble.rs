//! Any bytes → an ibnetdiscover topology and OpenSM dumps (LFTs, SL2VL, `.psl`, `guid2lid`,
//! MFTs, `saquery` multicast records), split at NUL bytes, assembled into a state: never a panic; an assembled state is valid, and
//! the verifier runs on it.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use weft_formats::ibnetdiscover::{parse, ParseOptions};
use weft_formats::opensm::{assemble, Dumps};

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let topology = parts.next().unwrap_or("");
    let lfts = parts.next().unwrap_or("");
    let dumps = Dumps {
        lfts,
        sl2vl: non_empty(parts.next()),
        path_sl: non_empty(parts.next()),
        guid2lid: non_empty(parts.next()),
        mfts: non_empty(parts.next()),
        mcmembers: non_empty(parts.next()),
    };
    let Ok(found) = parse(topology, &ParseOptions::default()) else {
        return;
    };
    if let Ok((st, _)) = assemble(found.fabric, found.lids, &dumps) {
        common::verify(&st);
    }
});

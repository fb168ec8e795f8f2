//! Writes the 666-switch SuperPOD-class tree of issue 27 as an `ibnetdiscover` dump (a SHARP
//! aggregation node on every switch, a host-less management sub-tree, 13 missing uplinks,
//! 4 341 CAs; `weft_tests::dump::SuperPod::ISSUE_27`), to time `weft import` and `weft check`
//! on it with the real binary:
//!
//! ```text
//! cargo run --release -p weft-bench --bin superpod > superpod.ibnetdiscover
//! time weft import superpod.ibnetdiscover -o superpod.weft
//! time weft check superpod.weft
//! ```
//!
//! An optional argument seeds which uplinks are missing (default 27).

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

fn main() {
    let seed = match std::env::args().nth(1).map(|a| a.parse::<u64>()) {
        None => 27,
        Some(Ok(s)) => s,
        Some(Err(_)) => {
            eprintln!("usage: superpod [SEED]");
            std::process::exit(2)
        }
    };
    let p = weft_tests::dump::SuperPod {
        seed,
        ..weft_tests::dump::SuperPod::ISSUE_27
    };
    print!("{}", weft_tests::dump::superpod(&p));
}

//! Writes the random irregular fabric of the `layered` benchmark as a `.weft` program, so
//! OpenSM's engines can be timed on the same fabric:
//!
//! ```text
//! cargo run --release -p weft-bench --bin irregular -- 1000 > irregular-1000.weft
//! cargo run --release -p weft-bench --bin vs_opensm -- --engines lash,dfsssp irregular-1000.weft
//! ```
//!
//! Arguments: the switch count (default 1000), the cables' reach (default 40: see
//! `weft_bench::irregular`) and a seed (default 1).

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark binary: it prints its figures and stops at the first failure"
)]

fn main() {
    let mut args = std::env::args().skip(1);
    let mut number = |default: u64| args.next().map_or(Some(default), |a| a.parse::<u64>().ok());
    let (Some(switches), Some(reach), Some(seed)) = (number(1000), number(40), number(1)) else {
        eprintln!("usage: irregular [SWITCHES] [REACH] [SEED]");
        std::process::exit(2)
    };
    print!(
        "{}",
        weft_bench::irregular(switches as usize, reach as usize, seed)
    );
}

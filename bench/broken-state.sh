#!/bin/sh
# weft verify on a state where every LFT entry is port 1 (default: the 11 664-node tree):
# time, peak RSS and report size. Options and method: bench/src/bin/broken_state.rs.
#
#   bench/broken-state.sh                       # examples/cluster-11664.weft, 3 runs
#   bench/broken-state.sh --runs 5 examples/cluster-5832.weft
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft -p weft-bench --bin weft --bin broken_state
exec target/release/broken_state "$@"

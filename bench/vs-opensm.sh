#!/bin/sh
# weft against OpenSM (ftree, updn, minhop, dfsssp on ibsim), side by side on this machine:
# routing time and quality metrics. Options and method: bench/src/bin/vs_opensm.rs.
#
#   bench/vs-opensm.sh                                    # examples/cluster-648.weft
#   bench/vs-opensm.sh examples/cluster-11664.weft --engines ftree --json /tmp/vs.json
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft-bench --bin vs_opensm
exec target/release/vs_opensm "$@"

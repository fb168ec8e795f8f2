#!/bin/sh
# Issue 45's table on this machine: LIDs + routing against OpenSM's ftree (ibsim), weft check,
# build and plan, medians of runs. Options and method: bench/src/bin/speed.rs.
#
#   bench/speed.sh                        # the 11 664- and 45 056-node sizes (several minutes)
#   bench/speed.sh --sizes small --count --baseline bench/baseline/small.json   # CI's gate
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft -p weft-bench --bin weft --bin vs_opensm --bin speed
exec target/release/speed "$@"

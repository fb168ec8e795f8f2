#!/bin/sh
# Deploying a fabric over MADs on ibsim: weft apply --target mad against OpenSM's file engine
# distributing the same tables. Method: bench/src/bin/deploy_vs_opensm.rs.
#
#   bench/deploy-vs-opensm.sh                     # 648, 5 832 and 11 664 nodes, one run each
#   bench/deploy-vs-opensm.sh --runs 3 examples/cluster-648.weft
#   bench/deploy-vs-opensm.sh --windows 1,4,16,64 examples/cluster-648.weft
#                                                 # mad's batched rate at each window
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft --bin weft
cargo build --release -q -p weft-bench --bin deploy_vs_opensm
exec target/release/deploy_vs_opensm "$@"

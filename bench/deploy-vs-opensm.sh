#!/bin/sh
# Deploying a fabric over MADs on ibsim: weft apply --target mad against OpenSM's file engine
# distributing the same tables. Method: bench/src/bin/deploy_vs_opensm.rs.
#
#   bench/deploy-vs-opensm.sh                     # examples/cluster-648.weft, 3 runs
#   bench/deploy-vs-opensm.sh --runs 5 examples/cluster-5832.weft
#   bench/deploy-vs-opensm.sh --windows 1,4,16,64   # mad's batched rate at each window
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft --bin weft
cargo build --release -q -p weft-bench --bin deploy_vs_opensm
exec target/release/deploy_vs_opensm "$@"

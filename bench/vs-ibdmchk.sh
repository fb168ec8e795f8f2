#!/bin/sh
# weft's verifier against ibdmchk (ibutils) on the same OpenSM dump files: OpenSM routes the
# fabric on ibsim once, then both check its dumps. Options and method: bench/src/bin/vs_ibdmchk.rs.
#
#   bench/vs-ibdmchk.sh                          # examples/cluster-5832.weft, OpenSM ftree
#   bench/vs-ibdmchk.sh --runs 5 --keep /tmp/d examples/cluster-648.weft
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft -p weft-bench --bin weft --bin vs_ibdmchk
exec target/release/vs_ibdmchk "$@"

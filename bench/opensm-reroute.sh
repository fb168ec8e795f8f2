#!/bin/sh
# OpenSM's way, measured: the real OpenSM (3.3.23) on ibsim re-routes a link failure (ibsim's
# `Unlink`, trap 128) and changes engine (ftree → updn, one root; OpenSM restarted, the same
# LIDs); per change, the LFT blocks it wrote (its log's `Writing FT block` lines) and those that
# differ, every mix of its writes checked as one step by weft's transition verifier
# (loop-free, deadlock-free, connected, with witnesses) and its writes one at a time in its
# order; beside `weft plan` for the same change. Method: bench/src/bin/opensm_reroute/main.rs;
# numbers: docs/plan.md, "OpenSM's way, measured".
#
#   bench/opensm-reroute.sh                                  # examples/cluster-648.weft
#   bench/opensm-reroute.sh examples/cluster-11664.weft --json /tmp/reroute.json
#   bench/opensm-reroute.sh --link leaf7.p[30] --root spine4 --scopes all
#
# One run on cluster-648 (2 cores, 45 s): OpenSM's ftree refuses the degraded tree and falls
# back to minhop, writing 74 blocks (65 differ) on all 54 switches; a mix of them has a
# forwarding loop (spine7 → leaf12 → spine7 toward cn079); with switch traffic its own order
# passes a credit loop after the 57th SMP (`--unsafe-states 100 --scopes all`: 17 of its 65
# states). weft plan: 14 LFT SMPs (lower bound 14), every step proven. On cluster-11664
# (20 min): 16 599 blocks against weft's 202, a forwarding loop in a mix; ftree → updn: a
# forwarding loop after OpenSM's 3rd SMP.
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p weft --bin weft
cargo build --release -q -p weft-bench --bin opensm_reroute
exec target/release/opensm_reroute "$@"

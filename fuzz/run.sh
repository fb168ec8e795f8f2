#!/bin/sh
# Runs weft's fuzz targets, each for SECONDS (default 600), two at a time, and prints each
# target's last libFuzzer status line ("Done N runs in S second(s)") or the crash it found.
#
#   fuzz/run.sh                         # every target, 10 minutes each
#   fuzz/run.sh 60 state_json lfts      # these targets, one minute each
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly compiler; on a stable toolchain
# RUSTC_BOOTSTRAP=1 enables the sanitizer flags cargo-fuzz passes. Seeds are in fuzz/seeds/T;
# the growing corpus in fuzz/corpus/T and crashes in fuzz/artifacts/T are not committed.
set -eu
cd "$(dirname "$0")"
secs="${1:-600}"
[ "$#" -gt 0 ] && shift
targets="${*:-state_json certificate lfts sl2vl path_sl guid2lid assemble ibnetdiscover guid_spaces weft_source plan_file journal}"
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O
mkdir -p logs
run() {
    t="$1"
    mkdir -p "corpus/$t"
    cargo fuzz run -O "$t" "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -rss_limit_mb=4096 \
        >"logs/$t.log" 2>&1 || echo "$t: FAILED (fuzz/logs/$t.log)"
    printf '%s: %s\n' "$t" "$(grep -E '^Done|SUMMARY|panicked' "logs/$t.log" | tail -1)"
}
set -- $targets
while [ "$#" -gt 0 ]; do
    a="$1"; shift
    if [ "$#" -gt 0 ]; then
        b="$1"; shift
        run "$a" & run "$b"; wait
    else
        run "$a"
    fi
done

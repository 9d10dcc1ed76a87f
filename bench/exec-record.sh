#!/usr/bin/env bash
# What recording every program a job executes costs, on a real suite: commander.js's
# `node --test` (1 373 tests, many of which start `node` again), run in a job's world with
# and without recording (sandbox/examples/record_cost.rs), alternating, medians and ratio.
#
# Usage: bench/exec-record.sh <commander.js checkout> [runs]   (target: ratio <= 1.05)
# Needs root or unprivileged user namespaces, and node on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: bench/exec-record.sh <commander.js checkout> [runs]}
runs=${2:-3}
work=$(mktemp -d /var/tmp/exec-record.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/commander"
cargo build -q --release -p proofgraph-sandbox --example record_cost
echo "== node $(node --version), $(nproc) cores, $runs runs each"
target/release/examples/record_cost "$runs" "$work/commander" node --test tests/

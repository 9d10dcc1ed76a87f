#!/bin/sh
# Runs the API's unit tests and writes libtest's JSON events to
# test-results/api.json (the format is unstable in libtest, hence
# RUSTC_BOOTSTRAP for the test harness's -Z flag on a stable toolchain).
set -eu
mkdir -p test-results
RUSTC_BOOTSTRAP=1 cargo test --quiet --lib -- -Z unstable-options --format json --report-time > test-results/api.json

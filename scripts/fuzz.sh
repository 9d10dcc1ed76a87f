#!/usr/bin/env bash
# The long, coverage-guided fuzz run (docs/fuzzing.md): builds fuzz/ with libFuzzer and
# SanitizerCoverage on stable Rust, seeds each target from fixtures/ (and the shared
# compatibility corpus when PROOFGRAPH_SHARED names the shared folder), runs the targets
# one at a time for SECONDS each, and prints the executions, corpus and crashes of each.
# A crash's input is left in target/fuzz/run/artifacts/<target>/; keep it under
# fixtures/fuzz/<target>/ (a regression test) once it is fixed.
#
# usage: scripts/fuzz.sh [SECONDS per target, default 60] [TARGET...]
# Extra libFuzzer flags: FUZZ_FLAGS="-use_value_profile=1" scripts/fuzz.sh 600 config
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config report envelope pem store receipt)

# The compatibility fixtures (fixtures/compat/) are seeds as part of fixtures/; the shared
# corpus of real files is added when PROOFGRAPH_SHARED names the shared folder.
compat=()
if [ -n "${PROOFGRAPH_SHARED:-}" ]; then
  [ -d "$PROOFGRAPH_SHARED/compat/changeloop" ] ||
    { echo "PROOFGRAPH_SHARED is $PROOFGRAPH_SHARED, which holds no compat/changeloop" >&2; exit 2; }
  compat=(PROOFGRAPH_FUZZ_COMPAT="$PROOFGRAPH_SHARED/compat/changeloop")
fi

# Coverage instrumentation through stable -C flags (what cargo-fuzz passes, minus the
# nightly-only -Zsanitizer): 8-bit counters and a PC table for libFuzzer's feedback,
# comparison tracing so it learns the constants inputs are compared with.
export CARGO_TARGET_DIR="$root/target/fuzz"
export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing"
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros, which run on
# the host without libFuzzer's runtime.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --locked --manifest-path fuzz/Cargo.toml --bins --target "$host"
bin="$CARGO_TARGET_DIR/$host/release"

run="$CARGO_TARGET_DIR/run"
rm -rf "$run/seeds"
mkdir -p "$run"
for t in "${targets[@]}"; do
  env PROOFGRAPH_FUZZ_SEEDS="$run/seeds" PROOFGRAPH_FUZZ_REPO="$root" "${compat[@]}" \
    "$bin/$t" >"$run/$t.seeds.log" 2>&1 || { cat "$run/$t.seeds.log" >&2; exit 2; }
done

printf '%-9s %12s %9s %8s %6s %8s %7s\n' target executions exec/s seconds cov corpus crashes
status=0
for t in "${targets[@]}"; do
  mkdir -p "$run/corpus/$t" "$run/artifacts/$t"
  log="$run/$t.log"
  touch "$run/$t.start"
  start=$(date +%s)
  # shellcheck disable=SC2086 # FUZZ_FLAGS is a list of flags
  "$bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -dict="$run/seeds/$t.dict" -artifact_prefix="$run/artifacts/$t/" \
    -print_final_stats=1 ${FUZZ_FLAGS:-} "$run/corpus/$t" "$run/seeds/$t" >"$log" 2>&1 || status=1
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(find "$run/corpus/$t" -type f | wc -l)
  crashes=$(find "$run/artifacts/$t" -type f -newer "$run/$t.start" | wc -l)
  printf '%-9s %12s %9s %8s %6s %8s %7s\n' "$t" "${execs:-?}" "${rate:-?}" "$elapsed" "${cov:-?}" "$corpus" "$crashes"
  [ "$crashes" -eq 0 ] || status=1
done
[ $status -eq 0 ] || echo "failures: see $run/<target>.log and $run/artifacts/" >&2
exit $status

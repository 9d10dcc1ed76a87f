#!/usr/bin/env bash
# (a) A no-op `proofgraph prove` against a fully cached `turbo run build`.
#
# One generated git repository serves both tools: PACKAGES packages of FILES
# tracked files each (default 50 x 400 = 20 000), an npm workspace with
# turbo.json (`build`, `outputs: []`, each package's build script `exit 0`),
# and an OpenSpec change `bench` with one trivial `command` provider per
# package. Both are run once to fill their caches, then timed with
# everything cached: proofgraph must run zero providers (summary.ran == 0)
# and turbo must say FULL TURBO, which is checked before and after timing.
#
# LAYOUT=inputs (default): the workspace is one repository; provider pkgNN is
#   `command: [sh, -c, "exit 0"]` with `inputs: ["pkgNN/**"]`.
# LAYOUT=literal: the same with the literal directory `inputs: ["pkgNN"]`
#   (a prefix comparison instead of a glob; for the profile in BENCHMARKS.md).
# LAYOUT=repositories: proofgraph.yaml declares one repository per package
#   (`pkgNN: {path: pkgNN}`); provider pkgNN has `repository: pkgNN`, so its
#   inputs are its package's files and it runs in its package's directory
#   (as turbo runs a package's script in the package).
#
# Then the same again with `proofgraph watch` running (prove then reads the
# watcher's snapshot; the watcher's own count of answered queries is checked).
#
# Timing: ROUNDS hyperfine rounds (default 2, the order of the two commands
# swapped in the second), each WARMUP warmups and RUNS runs per command;
# medians and extremes over all rounds' runs.
#
# Usage: bench/noop-vs-turbo.sh   (env: PACKAGES FILES RUNS WARMUP ROUNDS LAYOUT KEEP PROOFGRAPH PROOFGRAPH_REV QUIET_LOAD QUIET_MAX)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=${PACKAGES:-50}
FILES=${FILES:-400}
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-5}
LAYOUT=${LAYOUT:-inputs}
TARGET=0.2

bench_init noop
TURBO=$(ls "$BENCH_DIR"/node_modules/@turbo/*/bin/turbo 2>/dev/null | head -n1 || true)
[[ -x "$TURBO" ]] || die "turbo is not installed: run \`npm ci --prefix bench\`"
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 TURBO_NO_UPDATE_NOTIFIER=1 NO_UPDATE_NOTIFIER=1
W="$BENCH_TMP/monorepo"

print_facts "no-op prove vs turbo (FULL TURBO): $PACKAGES packages x $FILES files, layout=$LAYOUT" \
    "turbo:       $("$TURBO" --version) (native binary $TURBO, called directly: no Node shim)" \
    "node/npm:    $(node --version) / $(npm --version)"

echo "generating the workspace in $W ..." >&2
gen_monorepo "$W" "$PACKAGES" "$FILES"
cat >"$W/openspec/changes/bench/evidence.yaml" <<'EOF'
version: 2
claims:
  - {id: packages-build, scenario: Every package builds, capabilities: [static-analysis]}
EOF
{
    echo "version: 1"
    echo "providers:"
    for ((p = 1; p <= PACKAGES; p++)); do
        name=$(printf 'pkg%02d' "$p")
        if [[ "$LAYOUT" == inputs ]]; then
            echo "  build-$name: {adapter: command, capability: static-analysis, command: [sh, -c, \"exit 0\"], inputs: [\"$name/**\"]}"
        elif [[ "$LAYOUT" == literal ]]; then
            echo "  build-$name: {adapter: command, capability: static-analysis, command: [sh, -c, \"exit 0\"], inputs: [$name]}"
        else
            echo "  build-$name: {adapter: command, capability: static-analysis, command: [sh, -c, \"exit 0\"], repository: $name}"
        fi
    done
} >"$W/openspec/changes/bench/execution.yaml"
if [[ "$LAYOUT" == repositories ]]; then
    {
        echo "version: 1"
        echo "repositories:"
        for ((p = 1; p <= PACKAGES; p++)); do
            name=$(printf 'pkg%02d' "$p")
            echo "  $name: {path: $name}"
        done
    } >"$W/proofgraph.yaml"
elif [[ "$LAYOUT" != inputs && "$LAYOUT" != literal ]]; then
    die "LAYOUT is inputs, literal or repositories, not $LAYOUT"
fi
git_commit_all "$W"
git -C "$W" repack -adq
tracked=$(git -C "$W" ls-files | wc -l)
echo "tracked files: $tracked (of which $((PACKAGES * FILES)) in packages)"

# Fill both caches.
"$PG" -C "$W" prove bench --json >"$BENCH_TMP/first.json" 2>"$BENCH_TMP/first.err" ||
    { cat "$BENCH_TMP/first.err" >&2; die "the first prove failed"; }
[[ $(json_get "$BENCH_TMP/first.json" 'd.summary.ran') == "$PACKAGES" ]] || die "the first prove did not run every provider"
(cd "$W" && "$TURBO" run build --no-update-notifier >"$BENCH_TMP/turbo-first.log" 2>&1) ||
    { cat "$BENCH_TMP/turbo-first.log" >&2; die "the first turbo run failed"; }

check_cached() {
    "$PG" -C "$W" prove bench --json >"$BENCH_TMP/noop.json" 2>/dev/null || die "the cached prove failed"
    local ran reused
    ran=$(json_get "$BENCH_TMP/noop.json" 'd.summary.ran')
    reused=$(json_get "$BENCH_TMP/noop.json" 'd.summary.reused')
    [[ "$ran" == 0 && "$reused" == "$PACKAGES" ]] || die "the cached prove ran $ran providers (reused $reused)"
    echo "$1: proofgraph summary.ran=$ran reused=$reused; turbo: $(cd "$W" && "$TURBO" run build --no-update-notifier 2>&1 | grep -Eo 'Cached: +[0-9]+ cached, [0-9]+ total|FULL TURBO' | tr '\n' ' ')"
    (cd "$W" && "$TURBO" run build --no-update-notifier 2>&1 | grep -q 'FULL TURBO') || die "turbo is not FULL TURBO"
}
check_cached "before timing"
echo

wait_quiet
PGN="proofgraph prove bench (all cached)"
PEER="turbo run build (FULL TURBO)"
measure "$PGN" "$PG -C $W prove bench --json"
measure "$PEER" "$TURBO --cwd $W run build --no-update-notifier"
run_rounds "$BENCH_TMP/noop"
check_cached "after timing"
echo
summarize "$TARGET" "$PEER" "$PGN"
echo

# The same with `proofgraph watch` running: prove asks it for the snapshot
# instead of an lstat per tracked file. Its log must show that it answered
# every prove (and refused none) for the figures to count.
echo "=== with \`proofgraph watch\` running"
"$PG" -C "$W" watch --json >"$BENCH_TMP/watch.json" 2>"$BENCH_TMP/watch.err" &
WATCH_PID=$!
for _ in $(seq 200); do [[ -S "$W/.proofgraph/watch.sock" ]] && break; sleep 0.05; done
[[ -S "$W/.proofgraph/watch.sock" ]] || { cat "$BENCH_TMP/watch.err" >&2; die "the watcher did not start"; }
check_cached "before timing (watched)"
wait_quiet
PGW="proofgraph prove bench (all cached, watch running)"
measure "$PGW" "$PG -C $W prove bench --json"
measure "$PEER" "$TURBO --cwd $W run build --no-update-notifier"
run_rounds "$BENCH_TMP/noop-watch"
check_cached "after timing (watched)"
kill -TERM "$WATCH_PID"
wait "$WATCH_PID" || die "the watcher did not stop cleanly"
answered=$(json_get "$BENCH_TMP/watch.json" 'd.served.answered')
refused=$(json_get "$BENCH_TMP/watch.json" 'd.served.refused')
expected=$(((${WARMUP} + ${RUNS}) * ${ROUNDS:-2}))
echo "watcher: answered $answered queries, refused $refused (timed and warmup proves: $expected)"
[[ "$refused" == 0 && "$answered" -ge "$expected" ]] || die "the watcher did not answer every prove"
echo
summarize "$TARGET" "$PEER" "$PGW"

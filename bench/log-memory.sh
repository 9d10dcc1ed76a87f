#!/usr/bin/env bash
# Peak memory of `prove` when a job writes a 3 GB log: the sandbox streams the job's output
# to disk through its redactor, and the receipt keeps the log's head and tail with the
# whole's size and SHA-256 (logs.keepBytes), so nothing holds the log whole. Target: peak
# RSS under 256 MB (docs/execution.md, BENCHMARKS.md).
#
# One provider, `sh -c 'yes "<a test runner's line>" | head -c $BYTES; echo token=$API_TOKEN;
# exit 1'`, with API_TOKEN an `envFrom` secret (so every byte goes through the redactor and
# the log ends with a secret to redact), run by `prove --no-cache --heartbeat 1` (the
# heartbeat reads the growing log too) under `/usr/bin/time -v`. `time -v` reports the
# largest resident set of proofgraph and each process it waited for (the sandbox's init,
# the job's shell), not their sum; the job's `yes` and `head` are a few MB each.
#
# Usage: bench/log-memory.sh     (env: BYTES (default 3000000000), KEEP, PROOFGRAPH,
#        PROOFGRAPH_REV, BEFORE=/path/to/old/proofgraph BEFORE_BYTES (default 500000000))
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BYTES=${BYTES:-3000000000}
BEFORE_BYTES=${BEFORE_BYTES:-500000000}
TARGET_KB=$((256 * 1024))
need git "apt-get install -y git"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is required: apt-get install -y time"

build_proofgraph
BENCH_TMP=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/pg-bench-log-memory.XXXXXX")
if [[ "${KEEP:-0}" == 1 ]]; then
    echo "KEEP=1: generated files stay in $BENCH_TMP" >&2
else
    trap 'bench_cleanup' EXIT
fi
mkdir -p "$BENCH_TMP/home" "$BENCH_TMP/bin"
export HOME="$BENCH_TMP/home" XDG_CONFIG_HOME="$BENCH_TMP/home/.config" XDG_DATA_HOME="$BENCH_TMP/home/.local/share"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@bench.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@bench.invalid
cp "$PG_SRC" "$BENCH_TMP/bin/proofgraph"
PG="$BENCH_TMP/bin/proofgraph"
echo "=== prove of one job that writes a $BYTES-byte log; peak RSS (target < 256 MB)"
echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine:     nproc=$(nproc), kernel $(uname -r) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "tmp fs:      $(findmnt -no FSTYPE --target "$BENCH_TMP" 2>/dev/null | head -n1) ($BENCH_TMP)"
echo "proofgraph:  $PG_REV ($PG_SRC, $("$PG" --version 2>/dev/null || echo '?'))"
echo "before:      ${BEFORE:-(none given)}"
echo

# workspace DIR BYTES: the change `bench`, whose one provider writes BYTES bytes and fails.
workspace() {
    local dir=$1 bytes=$2
    mkdir -p "$dir/openspec/changes/bench"
    openspec_skeleton "$dir"
    echo "# bench" >"$dir/openspec/changes/bench/proposal.md"
    printf 'version: 2\nclaims:\n  - {id: logs, scenario: it logs, capabilities: [integration]}\n' \
        >"$dir/openspec/changes/bench/evidence.yaml"
    cat >"$dir/openspec/changes/bench/execution.yaml" <<EOF
version: 1
providers:
  loud:
    adapter: command
    capability: integration
    command: [sh, -c, "yes ' ✓ src/module_42/feature.test.ts > handles case 1234 (3 ms)' | head -c $bytes; echo token=\$API_TOKEN; exit 1"]
    envFrom: [API_TOKEN]
    timeoutMs: 1800000
EOF
    git_commit_all "$dir"
}

# measure BINARY DIR BYTES LABEL: one prove under /usr/bin/time -v; prints the figures.
measure_prove() {
    local bin=$1 dir=$2 bytes=$3 label=$4 out=$BENCH_TMP/$4.json timing=$BENCH_TMP/$4.time
    workspace "$dir" "$bytes"
    wait_quiet
    API_TOKEN=sk_live_bench_0123456789abcdef /usr/bin/time -v "$bin" -C "$dir" prove bench --json --no-cache --heartbeat 1 \
        >"$out" 2>"$timing" || true
    local rss_kb wall
    rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$timing")
    wall=$(awk -F': ' '/Elapsed \(wall clock\) time/ {print $2}' "$timing")
    local secs
    secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    echo "$label: $bytes bytes written; peak RSS $((rss_kb / 1024)) MB ($rss_kb kB); wall $wall ($(awk -v b="$bytes" -v s="$secs" 'BEGIN { printf "%.2f", b / s / 1e9 }') GB/s end to end)"
    if grep -q '"log_tail"' "$out"; then
        echo "  the end of the log prove shows: $(node -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1]));const p=d.providers.find(p=>p.provider==="loud");console.log(JSON.stringify(p.log_tail.slice(-2)))' "$out" 2>/dev/null || echo '?')"
    fi
    if grep -q '"log"' "$out"; then
        local sha kept
        sha=$(node -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1]));console.log(d.providers.find(p=>p.provider==="loud").log||"")' "$out" 2>/dev/null || true)
        if [[ -n "$sha" && -f "$dir/.proofgraph/cas/${sha:0:2}/${sha:2}" ]]; then
            kept=$(stat -c %s "$dir/.proofgraph/cas/${sha:0:2}/${sha:2}")
            echo "  log kept in the store: $kept bytes ($sha)"
            if grep -q "sk_live_bench" "$dir/.proofgraph/cas/${sha:0:2}/${sha:2}"; then
                echo "  ERROR: the secret is in the kept log"
            fi
        fi
    fi
    if ((rss_kb < TARGET_KB)); then
        echo "  target < 256 MB: met"
    else
        echo "  target < 256 MB: NOT met"
    fi
}

measure_prove "$PG" "$BENCH_TMP/after" "$BYTES" after
if [[ -n "${BEFORE:-}" ]]; then
    cp "$BEFORE" "$BENCH_TMP/bin/proofgraph-before"
    echo
    echo "before, with $BEFORE_BYTES bytes (it reads the whole log into memory, so 3 GB would need several GB):"
    measure_prove "$BENCH_TMP/bin/proofgraph-before" "$BENCH_TMP/before" "$BEFORE_BYTES" before
fi

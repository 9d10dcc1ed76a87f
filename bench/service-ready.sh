#!/usr/bin/env bash
# Service start-to-ready overhead: how much later than the service itself
# could serve does its first user start?
#
# A change with one `command` provider (`user`) that needs one service
# (`web`: the Node server of fixtures/playwright, which waits LISTEN_DELAY_MS
# before listening). Per `prove --no-cache`, with the run's namespaces:
#   spawned    the service process's start (Node's performance.timeOrigin)
#   listening  the service is listening (its own report)
#   probe_ok   the probe's first (successful) request reaches the service
#   user       the user's command starts (`date +%s%N`, its first action)
# and prints, per LISTEN_DELAY_MS, medians (and max) of
#   own start      listening − spawned     the service's own startup
#   probe lag      probe_ok − listening    the probe's backoff between polls
#   after probe    user − probe_ok         reporting the probe, scheduling and
#                                          spawning the user (target < 50 ms)
#   overhead       user − listening        all that proofgraph adds
#
# Usage: bench/service-ready.sh
#   env: PROOFGRAPH (binary; default target/release/proofgraph), RUNS (7),
#        DELAYS ("0 100 500 2000"), ISOLATION (namespaces | none), KEEP=1
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
RUNS=${RUNS:-7}
DELAYS=${DELAYS:-"0 100 500 2000"}
ISOLATION=${ISOLATION:-namespaces}

die() { echo "error: $*" >&2; exit 1; }
command -v node >/dev/null 2>&1 || die "node is required: apt-get install -y nodejs npm"
command -v git >/dev/null 2>&1 || die "git is required: apt-get install -y git"
src=${PROOFGRAPH:-$REPO_DIR/target/release/proofgraph}
[[ -x "$src" ]] || die "no proofgraph binary at $src: run \`cargo build --release\` (or set PROOFGRAPH)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/pg-service-ready.XXXXXX")
cleanup() {
    local rc=$?
    if [[ "${KEEP:-0}" == 1 ]]; then
        echo "KEEP=1: files stay in $TMP" >&2
    else
        chmod -R u+w "$TMP" 2>/dev/null || true
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
mkdir -p "$TMP/bin" "$TMP/home" "$TMP/ws/e2e" "$TMP/ws/openspec/specs" "$TMP/ws/openspec/changes/ready"
cp "$src" "$TMP/bin/proofgraph"
export HOME="$TMP/home" XDG_CONFIG_HOME="$TMP/home/.config" XDG_DATA_HOME="$TMP/home/.local/share"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@bench.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@bench.invalid

ws="$TMP/ws"
cp "$REPO_DIR/fixtures/playwright/server.js" "$ws/e2e/server.js"
echo "schema: spec-driven" > "$ws/openspec/config.yaml"
cat > "$ws/openspec/changes/ready/evidence.yaml" <<'EOF'
version: 2
claims:
  - {id: served, scenario: The service answers, capabilities: [integration]}
EOF
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
git -C "$ws" init -q -b main

isolation_args=()
[[ "$ISOLATION" == none ]] && isolation_args=(--isolation none)

echo "proofgraph $("$TMP/bin/proofgraph" --version 2>/dev/null || echo '?') ($src)"
echo "$(nproc) cores, $(uname -sr), isolation=$ISOLATION, $RUNS runs per delay, port $port"
printf '%-10s %-16s %-16s %-16s %-16s\n' "delay ms" "own start" "probe lag" "after probe" "overhead"
printf '%-10s %-16s %-16s %-16s %-16s\n' "" "median (max)" "median (max)" "median (max)" "median (max)"
for delay in $DELAYS; do
    cat > "$ws/openspec/changes/ready/execution.yaml" <<EOF
version: 1
providers:
  user:
    adapter: command
    capability: integration
    service: web
    command: [sh, -c, 'date +%s%N >> "\$USER_LOG"']
    env: {USER_LOG: "$TMP/user.log"}
services:
  web:
    command: [node, e2e/server.js, --port, "$port"]
    env: {READY_LOG: "$TMP/ready.log", LISTEN_DELAY_MS: "$delay"}
    readiness:
      url: "http://127.0.0.1:$port/health"
      expectBody: "run=\${PROOFGRAPH_RUN_ID}"
      timeoutMs: 30000
EOF
    git -C "$ws" add -A && git -C "$ws" commit -q -m "delay $delay"
    : > "$TMP/samples.jsonl"
    for _ in $(seq "$RUNS"); do
        rm -f "$TMP/ready.log" "$TMP/user.log"
        if ! (cd "$ws" && timeout 120 "$TMP/bin/proofgraph" prove ready --no-cache --json "${isolation_args[@]}" > "$TMP/out.json" 2> "$TMP/err.log"); then
            cat "$TMP/err.log" >&2
            die "prove failed or hung (delay $delay); see above"
        fi
        node -e '
          const fs = require("fs");
          const [ready, user] = process.argv.slice(1);
          const lines = fs.readFileSync(ready, "utf8").trim().split("\n").map(JSON.parse);
          const up = lines.find((l) => l.listening_ms !== undefined);
          const ok = lines.find((l) => l.path === "/health");
          const userMs = Number(fs.readFileSync(user, "utf8").trim().split("\n")[0]) / 1e6;
          console.log(JSON.stringify({
            own: up.listening_ms - up.spawned_ms,
            lag: ok.request_ms - up.listening_ms,
            after: userMs - ok.request_ms,
            overhead: userMs - up.listening_ms,
          }));
        ' "$TMP/ready.log" "$TMP/user.log" >> "$TMP/samples.jsonl"
    done
    node -e '
      const fs = require("fs");
      const [file, delay] = process.argv.slice(1);
      const rows = fs.readFileSync(file, "utf8").trim().split("\n").map(JSON.parse);
      const cell = (k) => {
        const v = rows.map((r) => r[k]).sort((a, b) => a - b);
        const m = v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
        return `${m.toFixed(1)} (${v[v.length - 1].toFixed(1)})`;
      };
      console.log([delay.padEnd(10), ...["own", "lag", "after", "overhead"].map((k) => cell(k).padEnd(16))].join(" ").trimEnd());
    ' "$TMP/samples.jsonl" "$delay"
done

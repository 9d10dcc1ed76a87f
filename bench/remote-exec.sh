#!/usr/bin/env bash
# Remote execution against the local run (issue 26), each ratio measured in one run:
#
#   (a) SLEEPERS providers (default 40), each `sleep 2`, `prove --no-cache --executor remote`
#       with WORKERS `proofgraph worker`s (default 4) of CAPACITY leases each (default 4),
#       against `prove --no-cache --jobs 2` here. Target: <= 0.2x.
#   (b) TRIVIAL providers (default 200), each `exit 0`, remote against local: what one remote
#       action costs, reported as milliseconds per action ((remote - local) / TRIVIAL).
#
# The engine is BuildGrid (tools/buildgrid/.venv, as the tests install it) with execution on
# a PostgreSQL of its own (an initdb instance in the benchmark's temporary directory, on a
# loopback port, run as `postgres` when the benchmark runs as root), as
# tests/it/engine_support.rs starts it. The workers run on this machine: with 2 cores the
# sleepers measure scheduling and transfer, not compute, which is what a farm adds.
#
# Each prove is checked before it counts: every provider ran and passed, and with
# `--executor remote` every receipt says it ran remotely.
#
# Usage: bench/remote-exec.sh   (env: SLEEPERS TRIVIAL WORKERS CAPACITY RUNS KEEP PROOFGRAPH PROOFGRAPH_REV)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SLEEPERS=${SLEEPERS:-40}
TRIVIAL=${TRIVIAL:-200}
WORKERS=${WORKERS:-4}
CAPACITY=${CAPACITY:-4}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-0}
ROUNDS=${ROUNDS:-1}
TARGET=0.2

bench_init remote-exec
REPO_ROOT=$(cd "$BENCH_DIR/.." && pwd)
BGD="$REPO_ROOT/tools/buildgrid/.venv/bin/bgd"
[[ -x "$BGD" ]] || die "BuildGrid is not installed: run ./scripts/test.sh (it installs tools/buildgrid/.venv)"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[[ -x "$PGBIN/initdb" ]] || die "PostgreSQL is not installed: apt-get install -y postgresql"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

PIDS=()
bench_extra_cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
    sleep 1
    for pid in "${PIDS[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}

start_engine() {
    local db="$BENCH_TMP/db" port
    mkdir -p "$db"
    # The database runs as `postgres` under root: it must reach its directory.
    if [[ $(id -u) == 0 ]]; then chmod o+x "$BENCH_TMP"; chown postgres: "$db"; fi
    as_pg "$PGBIN/initdb" -D "$db/data" --auth=trust --username=postgres --no-sync >/dev/null
    port=$(free_port)
    setsid bash -c "$(declare -f as_pg); as_pg '$PGBIN/postgres' -D '$db/data' -p $port -k '$db' -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200" >"$BENCH_TMP/postgres.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
    local url="postgresql+psycopg2://postgres@127.0.0.1:$port/postgres"
    "$BGD" migrate apply "$url" >"$BENCH_TMP/migrate.log" 2>&1 || { cat "$BENCH_TMP/migrate.log"; die "bgd migrate apply failed"; }
    ENGINE_PORT=$(free_port)
    # The tests' configuration, word for word (tests/it/engine_support.rs, `config`).
    sed -n '/r#"description: proofgraph.s test engine/,/^"#,$/p' "$REPO_ROOT/tests/it/engine_support.rs" | sed -e '$d' -e 's/^ *r#"//' |
        sed -e "s|{port}|$ENGINE_PORT|" -e "s|{store}|$BENCH_TMP/cas|" -e "s|{database}|$url|" \
            -e "s|{KEEPALIVE_SECS}|6|" -e "s|{INSTANCE}|main|" >"$BENCH_TMP/engine.yml"
    setsid "$BGD" server start "$BENCH_TMP/engine.yml" >"$BENCH_TMP/engine.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 600); do
        "$BGD" capabilities --remote "http://127.0.0.1:$ENGINE_PORT" --instance-name main >/dev/null 2>&1 && return
        sleep 0.5
    done
    cat "$BENCH_TMP/engine.log"; die "the engine never answered GetCapabilities"
}

start_workers() {
    local k
    for ((k = 1; k <= WORKERS; k++)); do
        setsid "$PG" worker --server "grpc://127.0.0.1:$ENGINE_PORT" --instance main \
            --bot-id "bench-$k" --capacity "$CAPACITY" >/dev/null 2>"$BENCH_TMP/worker-$k.log" &
        PIDS+=($!)
    done
    for ((k = 1; k <= WORKERS; k++)); do
        for _ in $(seq 300); do grep -q "session " "$BENCH_TMP/worker-$k.log" && break; sleep 0.1; done
        grep -q "session " "$BENCH_TMP/worker-$k.log" || { cat "$BENCH_TMP/worker-$k.log"; die "worker $k never got a session"; }
    done
}

# workspace DIR N COMMAND: a change `bench` of N command providers running COMMAND (with
# a distinct comment each, so none share an execution), and the executor configured.
workspace() {
    local W=$1 n=$2 cmd=$3 k
    mkdir -p "$W/openspec/changes/bench"
    openspec_skeleton "$W"
    printf '# Benchmark change\n' >"$W/openspec/changes/bench/proposal.md"
    printf '.proofgraph/\n' >"$W/.gitignore"
    printf 'version: 1\nexecutor:\n  remote: grpc://127.0.0.1:%s/main\n  remoteJobs: %s\n' "$ENGINE_PORT" "$((WORKERS * CAPACITY))" >>"$W/proofgraph.yaml"
    cat >"$W/openspec/changes/bench/evidence.yaml" <<'YAML'
version: 2
claims:
  - {id: all-pass, scenario: Every command passes, capabilities: [static-analysis]}
YAML
    {
        echo "version: 1"
        echo "providers:"
        for ((k = 1; k <= n; k++)); do
            printf '  p%03d: {adapter: command, capability: static-analysis, command: [sh, -c, "%s # %d"]}\n' "$k" "$cmd" "$k"
        done
    } >"$W/openspec/changes/bench/execution.yaml"
    git_commit_all "$W"
}

# check DIR N EXECUTOR: one prove, checked.
check() {
    local W=$1 n=$2 ex=$3
    local out="$BENCH_TMP/check-$ex-$n.json"
    "$PG" -C "$W" prove bench --no-cache --jobs 2 --executor "$ex" --json >"$out" 2>"$out.err" ||
        { cat "$out.err" >&2; head -c 3000 "$out" >&2; die "prove --executor $ex failed"; }
    local ran remote before=$ACTIONS_DONE
    ran=$(json_get "$out" 'd.summary.ran')
    [[ "$ran" == "$n" ]] || die "prove --executor $ex ran $ran providers, not $n"
    ACTIONS_DONE=$(cat "$BENCH_TMP"/worker-*.log | grep -c ': done, exit code 0' || true)
    remote=$((ACTIONS_DONE - before))
    echo "prove --executor $ex: ran=$ran, actions the workers ran to the end: $remote"
    if [[ "$ex" == remote && "$remote" != "$n" ]]; then die "only $remote of $n ran remotely"; fi
}

print_facts "remote execution: $WORKERS workers x $CAPACITY against local --jobs 2" \
    "BuildGrid:   $("$BGD" --help >/dev/null 2>&1 && "$REPO_ROOT/tools/buildgrid/.venv/bin/pip" show buildgrid 2>/dev/null | sed -n 's/^Version: //p')" \
    "PostgreSQL:  $("$PGBIN/postgres" --version)"
start_engine
start_workers
ACTIONS_DONE=0
S="$BENCH_TMP/sleepers" T="$BENCH_TMP/trivial"
workspace "$S" "$SLEEPERS" "sleep 2"
workspace "$T" "$TRIVIAL" "exit 0"
check "$S" "$SLEEPERS" remote
check "$S" "$SLEEPERS" local
check "$T" "$TRIVIAL" remote
check "$T" "$TRIVIAL" local
wait_quiet
measure "sleepers remote ($WORKERS x $CAPACITY)" "$PG -C $S prove bench --no-cache --executor remote --json"
measure "sleepers local --jobs 2" "$PG -C $S prove bench --no-cache --jobs 2 --json"
measure "trivial remote ($WORKERS x $CAPACITY)" "$PG -C $T prove bench --no-cache --executor remote --json"
measure "trivial local --jobs 2" "$PG -C $T prove bench --no-cache --jobs 2 --json"
run_rounds "$BENCH_TMP/all"
summarize "$TARGET" "sleepers local --jobs 2" "sleepers remote ($WORKERS x $CAPACITY)"
node -e '
const fs = require("fs");
const files = process.argv.slice(3), n = Number(process.argv[1]), name = process.argv[2];
const med = (xs) => { const s = [...xs].sort((a, b) => a - b), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const all = files.map((f) => JSON.parse(fs.readFileSync(f, "utf8")).results);
const times = (c) => all.flatMap((r) => r.find((x) => x.command === c).times);
const remote = med(times(name)), local = med(times("trivial local --jobs 2"));
console.log(`trivial: remote ${remote.toFixed(2)} s, local ${local.toFixed(2)} s for ${n} (${(remote / local).toFixed(1)}x); per remote action ${(remote * 1000 / n).toFixed(1)} ms of wall time, ${((remote - local) * 1000 / n).toFixed(1)} ms more than local`);
' "$TRIVIAL" "trivial remote ($WORKERS x $CAPACITY)" "${ROUND_FILES[@]}"

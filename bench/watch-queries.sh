#!/usr/bin/env bash
# What a query to `proofgraph watch` costs, for two or more proofgraph
# binaries side by side: a no-op prove, the prove after something read every
# tracked file (as every prove that runs providers does when it fills its
# sandboxes, or a `grep -r`), and the prove after the index changed (a full
# snapshot).
#
# One generated workspace (PACKAGES x FILES tracked files, the no-op change of
# noop-vs-turbo.sh: one `command` provider per package, `inputs:
# ["pkgNN/**"]`) is copied once per binary, so that each has its own store and
# its own watcher; all the watchers run at once. Each sample runs every
# binary's prove once, in an order that rotates from sample to sample, so that
# a burst of load from other work does not fall on one binary. Reported per
# binary and case: the median (min, max) of the prove's wall time, and of the
# watcher's own time for the query (from its log), with the load average.
#
# Usage: bench/watch-queries.sh NAME=BINARY NAME=BINARY...
#   (env: PACKAGES FILES SAMPLES QUIET_LOAD QUIET_MAX KEEP)
# e.g. bench/watch-queries.sh old=/tmp/old/proofgraph new=target/release/proofgraph
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=${PACKAGES:-50}
FILES=${FILES:-400}
SAMPLES=${SAMPLES:-15}
(($# >= 1)) || die "name at least one binary: NAME=PATH..."

need git "apt-get install -y git"
need node "apt-get install -y nodejs npm"
BENCH_TMP=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/pg-bench-watch.XXXXXX")
if [[ "${KEEP:-0}" == 1 ]]; then
    echo "KEEP=1: generated files stay in $BENCH_TMP" >&2
else
    trap 'bench_cleanup' EXIT
fi
mkdir -p "$BENCH_TMP/home" "$BENCH_TMP/bin"
export HOME="$BENCH_TMP/home"
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" XDG_CACHE_HOME="$HOME/.cache"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@bench.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@bench.invalid
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z

NAMES=()
declare -A BIN WS WPID
for arg in "$@"; do
    name=${arg%%=*}
    path=${arg#*=}
    [[ -x "$path" ]] || die "$name: no binary at $path"
    cp "$path" "$BENCH_TMP/bin/proofgraph-$name"
    NAMES+=("$name")
    BIN[$name]="$BENCH_TMP/bin/proofgraph-$name"
done

echo "=== watcher queries: $PACKAGES packages x $FILES files, $SAMPLES samples per case"
echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine:     nproc=$(nproc), kernel $(uname -r), open files soft/hard $(ulimit -Sn)/$(ulimit -Hn)"
for name in "${NAMES[@]}"; do echo "$name:$(printf '%*s' $((11 - ${#name})) '')${BIN[$name]} ($("${BIN[$name]}" --version))"; done

W="$BENCH_TMP/monorepo"
echo "generating the workspace ..." >&2
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
        pkg=$(printf 'pkg%02d' "$p")
        echo "  build-$pkg: {adapter: command, capability: static-analysis, command: [sh, -c, \"exit 0\"], inputs: [\"$pkg/**\"]}"
    done
} >"$W/openspec/changes/bench/execution.yaml"
git_commit_all "$W"
git -C "$W" repack -adq
echo "tracked files: $(git -C "$W" ls-files | wc -l)"

bench_extra_cleanup() {
    local name
    for name in "${NAMES[@]}"; do
        [[ -n "${WPID[$name]:-}" ]] && kill -TERM "${WPID[$name]}" 2>/dev/null
    done
    wait 2>/dev/null
}

for name in "${NAMES[@]}"; do
    WS[$name]="$BENCH_TMP/ws-$name"
    cp -a "$W" "${WS[$name]}"
    # The copies are new inodes: without this, every snapshot of a copy
    # would re-hash every file (its index entries name the original's).
    git -C "${WS[$name]}" update-index -q --refresh
    "${BIN[$name]}" -C "${WS[$name]}" prove bench --json >/dev/null 2>"$BENCH_TMP/first-$name.err" ||
        { cat "$BENCH_TMP/first-$name.err" >&2; die "$name: the first prove failed"; }
    "${BIN[$name]}" -C "${WS[$name]}" watch --json >"$BENCH_TMP/watch-$name.json" 2>"$BENCH_TMP/watch-$name.log" &
    WPID[$name]=$!
done
for name in "${NAMES[@]}"; do
    for _ in $(seq 400); do [[ -S "${WS[$name]}/.proofgraph/watch.sock" ]] && break; sleep 0.05; done
    [[ -S "${WS[$name]}/.proofgraph/watch.sock" ]] || die "$name: the watcher did not start"
done

# prove NAME: one prove in NAME's workspace, checked to reuse every receipt;
# prints its wall time in ms.
prove() {
    local name=$1 start end out
    out="$BENCH_TMP/prove-$name.json"
    start=$EPOCHREALTIME
    "${BIN[$name]}" -C "${WS[$name]}" prove bench --json >"$out" 2>/dev/null || die "$name: the prove failed"
    end=$EPOCHREALTIME
    [[ $(json_get "$out" 'd.summary.ran') == 0 ]] || die "$name: the prove ran providers"
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f\n", (e - s) * 1000 }'
}

# The watcher's own time for its last answer (and the full snapshot in it).
last_answer() {
    grep -o 'answered [^(]*([0-9.]* ms)' "$BENCH_TMP/watch-$1.log" | tail -n1 | grep -o '[0-9.]* ms' | cut -d' ' -f1
}
last_asked() {
    grep -o '[0-9]* asked whether open for writing' "$BENCH_TMP/watch-$1.log" | tail -n1 | cut -d' ' -f1
}
full_count() {
    grep -c 'full snapshot of' "$BENCH_TMP/watch-$1.log" || true
}

# The cases: what happens before each timed prove (untimed).
read_every_file() { (cd "${WS[$1]}" && git ls-files -z | xargs -0 cat >/dev/null); }
touch_index() { touch "${WS[$1]}/.git/index"; }
nothing() { :; }

# run CASE PREPARE: SAMPLES samples, each every binary once (order rotating).
run() {
    local case=$1 prepare=$2 s k n=${#NAMES[@]} name i t a before
    wait_quiet
    local load_start
    load_start=$(cut -d' ' -f1-3 /proc/loadavg)
    for name in "${NAMES[@]}"; do
        : >"$BENCH_TMP/$case-$name.prove"
        : >"$BENCH_TMP/$case-$name.watcher"
        "$prepare" "$name"
        prove "$name" >/dev/null # warmup
    done
    for ((s = 0; s < SAMPLES; s++)); do
        for ((k = 0; k < n; k++)); do
            i=$(((k + s) % n))
            name=${NAMES[i]}
            "$prepare" "$name"
            before=$(full_count "$name")
            t=$(prove "$name")
            a=$(last_answer "$name")
            echo "$t" >>"$BENCH_TMP/$case-$name.prove"
            echo "$a $(last_asked "$name") $(($(full_count "$name") - before))" >>"$BENCH_TMP/$case-$name.watcher"
        done
    done
    echo "--- $case (load $load_start when it started, $(cut -d' ' -f1-3 /proc/loadavg) after)"
    for name in "${NAMES[@]}"; do
        node -e '
const fs = require("fs");
const [prove, watcher, name] = process.argv.slice(1);
const stats = (xs) => {
  xs = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (!xs.length) return "n/a";
  const m = xs.length % 2 ? xs[(xs.length - 1) / 2] : (xs[xs.length / 2 - 1] + xs[xs.length / 2]) / 2;
  return `${m.toFixed(1)} ms (${xs[0].toFixed(1)}-${xs[xs.length - 1].toFixed(1)})`;
};
const p = fs.readFileSync(prove, "utf8").trim().split("\n").map(Number);
const w = fs.readFileSync(watcher, "utf8").trim().split("\n").map((l) => l.split(" "));
const asked = [...new Set(w.map((x) => x[1] || "?"))].join("/");
const fulls = w.reduce((n, x) => n + Number(x[2] || 0), 0);
console.log(`${name.padEnd(8)} prove ${stats(p)}   watcher ${stats(w.map((x) => Number(x[0])))}   asked ${asked}, full snapshots ${fulls} of ${w.length}`);
' "$BENCH_TMP/$case-$name.prove" "$BENCH_TMP/$case-$name.watcher" "$name"
    done
}

echo
run "no-op" nothing
run "after-reading-every-file" read_every_file
run "index-changed" touch_index

for name in "${NAMES[@]}"; do
    kill -TERM "${WPID[$name]}"
    wait "${WPID[$name]}" || die "$name: the watcher did not stop cleanly"
    WPID[$name]=
    echo "$name watcher: answered $(json_get "$BENCH_TMP/watch-$name.json" 'd.served.answered'), refused $(json_get "$BENCH_TMP/watch-$name.json" 'd.served.refused')"
done

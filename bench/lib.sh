# Shared helpers of the benchmark scripts in bench/. Sourced, not run.
#
# Everything generated goes under one temporary directory ($BENCH_TMP, made
# with mktemp under ${BENCH_TMPDIR:-${TMPDIR:-/tmp}}) that is removed on exit
# unless KEEP=1.
# Nothing is written into the repository except bench/node_modules and
# bench/target (both ignored by bench/.gitignore).

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)

die() {
    echo "error: $*" >&2
    exit 1
}

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 is required: $2"
}

# bench_init NAME [sandbox-bench]: build_proofgraph, then the temporary
# directory, an isolated HOME, private copies of the binaries.
bench_init() {
    build_proofgraph "${2:-}"
    need hyperfine "apt-get install -y hyperfine"
    need git "apt-get install -y git"
    need node "apt-get install -y nodejs npm"
    BENCH_TMP=$(mktemp -d "${BENCH_TMPDIR:-${TMPDIR:-/tmp}}/pg-bench-$1.XXXXXX")
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
    cp "$PG_SRC" "$BENCH_TMP/bin/proofgraph"
    PG="$BENCH_TMP/bin/proofgraph"
    if [[ -n "${SB_SRC:-}" ]]; then
        cp "$SB_SRC" "$BENCH_TMP/bin/sandbox-bench"
        SB="$BENCH_TMP/bin/sandbox-bench"
    fi
}

# build_proofgraph [sandbox-bench]: unless PROOFGRAPH names a binary to
# benchmark, builds proofgraph as committed at PROOFGRAPH_REV (default HEAD):
# the commit's tree is exported with `git archive` into bench/target/tree
# (never the working tree, which may be half-edited) and built with
# `cargo build --release --locked` into bench/target/build. With the argument
# `sandbox-bench`, bench/sandbox-bench is copied into that tree (its path
# dependencies `../..` then name the exported proofgraph) and built too.
# Sets PG_SRC, PG_REV and SB_SRC. Runs before bench_init replaces HOME (where
# rustup and cargo live).
build_proofgraph() {
    local tree=$BENCH_DIR/target/tree build=$BENCH_DIR/target/build commit
    if [[ -n "${PROOFGRAPH:-}" ]]; then
        PG_SRC=$PROOFGRAPH
        PG_REV="given by PROOFGRAPH (the repository is at $(git -C "$REPO_DIR" rev-parse --short=12 HEAD))"
        [[ "${1:-}" != sandbox-bench ]] || die "PROOFGRAPH cannot be combined with sandbox-bench; use PROOFGRAPH_REV"
    else
        need cargo "install the Rust toolchain (rustup)"
        commit=$(git -C "$REPO_DIR" rev-parse --verify "${PROOFGRAPH_REV:-HEAD}^{commit}") ||
            die "PROOFGRAPH_REV=${PROOFGRAPH_REV:-HEAD} is not a commit"
        if [[ "$(cat "$tree/.commit" 2>/dev/null)" != "$commit" ]]; then
            rm -rf "$tree"
            mkdir -p "$tree"
            # -m: files get the time of extraction, not of the commit, so cargo sees them
            # as newer than anything an earlier commit's build left in the build directory.
            git -C "$REPO_DIR" archive "$commit" | tar -x -m -C "$tree"
            echo "$commit" >"$tree/.commit"
        fi
        echo "building proofgraph $commit (cargo build --release --locked, in bench/target) ..." >&2
        (cd "$tree" && cargo build --release --locked --quiet --target-dir "$build") || die "proofgraph $commit does not build"
        PG_SRC=$build/release/proofgraph
        PG_REV="$commit ($(git -C "$REPO_DIR" log -1 --format='%cd, %s' --date=format:'%Y-%m-%d %H:%M' "$commit" | cut -c1-90))"
        if [[ "${1:-}" == sandbox-bench ]]; then
            rm -rf "$tree/bench/sandbox-bench"
            mkdir -p "$tree/bench"
            cp -a "$BENCH_DIR/sandbox-bench" "$tree/bench/"
            echo "building bench/sandbox-bench against it ..." >&2
            (cd "$tree/bench/sandbox-bench" && cargo build --release --quiet --target-dir "$build") ||
                die "bench/sandbox-bench does not build against proofgraph $commit"
            SB_SRC=$build/release/sandbox-bench
        fi
    fi
    [[ -x "$PG_SRC" ]] || die "no proofgraph binary at $PG_SRC"
}

bench_cleanup() {
    local rc=$?
    if declare -F bench_extra_cleanup >/dev/null; then bench_extra_cleanup || true; fi
    # Sandboxes may contain read-only directories; make everything writable first.
    chmod -R u+w "$BENCH_TMP" 2>/dev/null || true
    rm -rf "$BENCH_TMP"
    exit "$rc"
}

# print_facts TITLE [extra version lines...]
print_facts() {
    local title=$1
    shift
    echo "=== $title"
    echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "machine:     nproc=$(nproc), kernel $(uname -r) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
    echo "tmp fs:      $(findmnt -no FSTYPE --target "$BENCH_TMP" 2>/dev/null | head -n1) ($BENCH_TMP)"
    echo "proofgraph:  $PG_REV ($PG_SRC, $("$PG" --version 2>/dev/null || echo '?'))"
    echo "hyperfine:   $(hyperfine --version | awk '{print $2}')"
    echo "git:         $(git --version | awk '{print $3}')"
    local line
    for line in "$@"; do echo "$line"; done
    echo
}

# wait_quiet: the machine is shared; wait (up to QUIET_MAX seconds, default
# 300) until the 1-minute load average is below QUIET_LOAD (default 1.5),
# then go on either way and say what the load was.
wait_quiet() {
    local max=${QUIET_MAX:-300} limit=${QUIET_LOAD:-1.5} waited=0 load
    while :; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        if awk -v l="$load" -v m="$limit" 'BEGIN { exit !(l < m) }' || ((waited >= max)); then break; fi
        sleep 10
        waited=$((waited + 10))
    done
    echo "load:        $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) when timing starts, after waiting ${waited}s for < $limit"
}

# The commands of one comparison: measure NAME COMMAND [PREPARE], then
# run_rounds OUT. Each command is argv split on blanks (hyperfine -N, no
# shell); PREPARE (untimed, before every run) likewise.
CMD_NAMES=()
CMD_LINES=()
CMD_PREPS=()
measure() {
    CMD_NAMES+=("$1")
    CMD_LINES+=("$2")
    CMD_PREPS+=("${3:-}")
}

# run_rounds OUT: ROUNDS (default 2) hyperfine invocations of the measured
# commands, each with WARMUP warmup and RUNS timed runs per command; the order
# of the commands rotates from round to round (A B, then B A), so that a burst
# of load from other work does not always fall on the same side. Sets
# ROUND_FILES to the JSON exports and forgets the commands.
run_rounds() {
    local out=$1 n=${#CMD_NAMES[@]} r k i anyprep=0 p
    local -a args
    ROUND_FILES=()
    for p in "${CMD_PREPS[@]}"; do [[ -n "$p" ]] && anyprep=1; done
    for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
        args=()
        for ((k = 0; k < n; k++)); do
            i=$(((k + r - 1) % n))
            if ((anyprep)); then args+=(--prepare "${CMD_PREPS[i]:-true}"); fi
            args+=(-n "${CMD_NAMES[i]}" "${CMD_LINES[i]}")
        done
        echo "--- round $r of ${ROUNDS:-2} ($(cut -d' ' -f1 /proc/loadavg) load)"
        # shellcheck disable=SC2086 # HYPERFINE_ARGS is words (e.g. `-i`: a command whose exit code says something other than failure)
        hyperfine --style basic -N ${HYPERFINE_ARGS:-} --warmup "$WARMUP" --runs "$RUNS" --export-json "$out.$r.json" "${args[@]}"
        ROUND_FILES+=("$out.$r.json")
        echo
    done
    CMD_NAMES=()
    CMD_LINES=()
    CMD_PREPS=()
}

# summarize TARGET PEER_NAME VARIANT_NAME...: the pooled figures and ratios
# of the last run_rounds (see summarize.js).
summarize() {
    node "$BENCH_DIR/summarize.js" "$@" -- "${ROUND_FILES[@]}"
    echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"
}

# json_get FILE EXPR: evaluates a JavaScript expression over the JSON document
# `d` read from FILE.
json_get() {
    node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$1" "$2"
}

# openspec_skeleton DIR: an OpenSpec root (config, specs, archive) in DIR.
openspec_skeleton() {
    mkdir -p "$1/openspec/specs" "$1/openspec/changes/archive"
    echo "schema: spec-driven" >"$1/openspec/config.yaml"
    : >"$1/openspec/specs/.gitkeep"
    : >"$1/openspec/changes/archive/.gitkeep"
}

# git_commit_all DIR: every file's mtime set one hour back (so that no index
# entry is racily clean: both proofgraph and turbo then trust the index's stat
# data, as they would in a repository edited an hour ago), then one commit.
git_commit_all() {
    local dir=$1
    find "$dir" -path "$dir/.git" -prune -o -exec touch -h -d '1 hour ago' {} +
    git -C "$dir" init -q -b main
    git -C "$dir" add -A
    git -C "$dir" commit -q -m "generated by bench/"
}

# gen_package_change DIR PACKAGES: the change `bench` of a gen_monorepo workspace — one
# claim, and one `command` provider per package, named after it, that reads only its
# package (`inputs: [pkgNN/**]`).
gen_package_change() {
    local dir=$1 packages=$2 p name
    printf 'version: 2\nclaims:\n  - {id: packages-build, scenario: Every package builds, capabilities: [static-analysis]}\n' \
        >"$dir/openspec/changes/bench/evidence.yaml"
    {
        echo "version: 1"
        echo "providers:"
        for ((p = 1; p <= packages; p++)); do
            name=$(printf 'pkg%02d' "$p")
            printf '  %s:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, "exit 0"]\n    inputs: ["%s/**"]\n' "$name" "$name"
        done
    } >"$dir/openspec/changes/bench/execution.yaml"
}

# gen_monorepo DIR PACKAGES FILES: PACKAGES packages pkg01..pkgNN of FILES
# tracked files each (a package.json and FILES-1 small JavaScript modules
# spread over eight directories), as an npm workspace with turbo.json, an
# OpenSpec root, a change `bench` whose execution.yaml is left to the caller,
# all in one git repository. Not committed: the caller adds its files and
# calls git_commit_all.
gen_monorepo() {
    local dir=$1 packages=$2 files=$3
    mkdir -p "$dir"
    local p i name d
    for ((p = 1; p <= packages; p++)); do
        name=$(printf 'pkg%02d' "$p")
        for d in 0 1 2 3 4 5 6 7; do mkdir -p "$dir/$name/src/m$d"; done
        printf '{\n  "name": "%s",\n  "version": "1.0.0",\n  "private": true,\n  "scripts": {\n    "build": "exit 0"\n  }\n}\n' \
            "$name" >"$dir/$name/package.json"
        for ((i = 1; i < files; i++)); do
            printf '// %s module %04d\nexport const id = "%s-%04d";\nexport function f%04d(x) {\n  return x * %d + %d;\n}\n' \
                "$name" "$i" "$name" "$i" "$i" "$p" "$i" >"$dir/$name/src/m$((i % 8))/f$(printf %04d "$i").js"
        done
    done
    local pm
    pm=$(npm --version)
    printf '{\n  "name": "bench-monorepo",\n  "private": true,\n  "packageManager": "npm@%s",\n  "workspaces": ["pkg*"]\n}\n' "$pm" >"$dir/package.json"
    printf '{\n  "$schema": "https://turborepo.com/schema.json",\n  "tasks": {\n    "build": { "outputs": [] }\n  }\n}\n' >"$dir/turbo.json"
    printf '.proofgraph/\n.turbo/\nnode_modules/\n' >"$dir/.gitignore"
    (cd "$dir" && npm install --package-lock-only --offline --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) ||
        die "npm could not write the workspace's package-lock.json"
    openspec_skeleton "$dir"
    mkdir -p "$dir/openspec/changes/bench"
    printf '# Benchmark change\n\nGenerated by bench/.\n' >"$dir/openspec/changes/bench/proposal.md"
}

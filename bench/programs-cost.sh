#!/usr/bin/env bash
# What identifying the programs a command starts costs on a no-op `prove`: ten providers
# that run Node.js scripts (`npx --version`, the `#!/usr/bin/env node` shim of npm, and
# `sh -c "node --version && npm --version"`), whose identity now includes /usr/bin/node
# (~100 MB on Debian) and the programs of the shell script. The digests of files outside
# the repositories are remembered by stat data (.proofgraph/programs.json), so the target
# is a no-op no slower than BEFORE, a build that identified argv[0] only.
#
# Usage: BEFORE=/path/to/old/proofgraph bench/programs-cost.sh   (env: PROVIDERS RUNS WARMUP ROUNDS KEEP PROOFGRAPH PROOFGRAPH_REV)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROVIDERS=${PROVIDERS:-10}
RUNS=${RUNS:-20}
WARMUP=${WARMUP:-3}
[[ -x "${BEFORE:-}" ]] || die "BEFORE must name a proofgraph binary built before programs' interpreters were identified (commit 55045c5)"
need npx "apt-get install -y npm"

bench_init programs
cp "$BEFORE" "$BENCH_TMP/bin/proofgraph-before"
OLD="$BENCH_TMP/bin/proofgraph-before"
print_facts "no-op prove of $PROVIDERS providers running Node.js scripts; argv[0] only vs interpreters and -c scripts identified" \
    "before:      $("$OLD" --version) ($BEFORE)" \
    "node:        $(node --version), $(stat -Lc %s "$(command -v node)") bytes"

# workspace DIR: the change `bench`, its providers alternating between the two kinds.
workspace() {
    local dir=$1 i
    mkdir -p "$dir/openspec/changes/bench" "$dir/src"
    openspec_skeleton "$dir"
    echo "# bench" >"$dir/openspec/changes/bench/proposal.md"
    echo "console.log(1)" >"$dir/src/index.js"
    {
        echo "version: 2"
        echo "claims:"
        echo "  - {id: works, scenario: it works, capabilities: [static-analysis]}"
    } >"$dir/openspec/changes/bench/evidence.yaml"
    {
        echo "version: 1"
        echo "providers:"
        for ((i = 1; i <= PROVIDERS; i++)); do
            if ((i % 2)); then
                printf '  p%02d:\n    adapter: command\n    capability: static-analysis\n    command: [npx, --version]\n    inputs: [src/**]\n' "$i"
            else
                printf '  p%02d:\n    adapter: command\n    capability: static-analysis\n    command: [sh, -c, "node --version && npm --version"]\n    inputs: [src/**]\n' "$i"
            fi
        done
    } >"$dir/openspec/changes/bench/execution.yaml"
    git_commit_all "$dir"
}

OLD_W="$BENCH_TMP/before"
NEW_W="$BENCH_TMP/after"
workspace "$OLD_W"
workspace "$NEW_W"
"$OLD" -C "$OLD_W" prove bench --json >/dev/null || die "the first prove (before) failed"
"$PG" -C "$NEW_W" prove bench --json >/dev/null || die "the first prove (after) failed"
"$PG" -C "$NEW_W" prove bench --json | grep -q "\"reused\": $PROVIDERS" || die "the second prove was not a no-op"
echo "after timing: node's digest is remembered: $(grep -c node "$NEW_W/.proofgraph/programs.json" || true) entry"
echo

wait_quiet
measure "no-op prove (argv[0] only)" "$OLD -C $OLD_W prove bench --json"
measure "no-op prove (interpreters)" "$PG -C $NEW_W prove bench --json"
run_rounds "$BENCH_TMP/noop-rounds"
summarize 1.0 "no-op prove (argv[0] only)" "no-op prove (interpreters)"

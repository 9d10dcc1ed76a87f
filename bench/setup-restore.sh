#!/usr/bin/env bash
# Benchmark (a) of the real-projects issue: what a cached setup costs a run that executes
# something. A provider that runs `true` in a repository whose cached setup yields 7 000
# files of `node_modules` (100 packages of 70 files, ~1 KiB each), against the same provider
# in the same repository without a setup. Both are timed as `prove bench --no-cache`: the
# first shows `node_modules` from the store in its sandbox on every run, as an overlay in
# the run's mount namespace (the setup itself ran once, before timing, and is checked not to
# run again and to be mounted), the second has nothing to show. Target: <= 1.2x.
#
# Usage: bench/setup-restore.sh   (env: FILES RUNS WARMUP ROUNDS KEEP PROOFGRAPH PROOFGRAPH_REV QUIET_LOAD QUIET_MAX)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
PACKAGES=${PACKAGES:-100}
PER=${PER:-70}

bench_init setup-restore

# make_repo DIR SETUP: a git repository with the change `bench` (one `command` provider
# running `true`), with a cached setup when SETUP is 1.
make_repo() {
    local dir=$1 setup=$2
    openspec_skeleton "$dir"
    mkdir -p "$dir/openspec/changes/bench"
    printf '# Benchmark change\n' >"$dir/openspec/changes/bench/proposal.md"
    printf 'version: 2\nclaims:\n  - {id: works, scenario: It works, capabilities: [static-analysis]}\n' \
        >"$dir/openspec/changes/bench/evidence.yaml"
    printf 'version: 1\nproviders:\n  noop:\n    adapter: command\n    capability: static-analysis\n    command: ["true"]\n' \
        >"$dir/openspec/changes/bench/execution.yaml"
    printf '{"name": "bench", "version": "1.0.0"}\n' >"$dir/package.json"
    printf 'node_modules/\n' >"$dir/.gitignore"
    if [[ $setup == 1 ]]; then
        cat >"$dir/proofgraph.yaml" <<YAML
version: 1
repositories:
  root:
    path: .
    setup:
      - [sh, -c, 'for p in \$(seq 1 $PACKAGES); do mkdir -p node_modules/pkg\$p/lib; for f in \$(seq 1 $PER); do head -c 1024 /dev/urandom > node_modules/pkg\$p/lib/f\$f.js; done; done; echo ran >> setup-ran.log']
    setupCache: [node_modules]
YAML
    else
        printf 'version: 1\nrepositories:\n  root:\n    path: .\n' >"$dir/proofgraph.yaml"
    fi
    git_commit_all "$dir"
}

print_facts "prove --no-cache of one provider, with a cached setup of $((PACKAGES * PER)) files and without"

WITH="$BENCH_TMP/with"
WITHOUT="$BENCH_TMP/without"
mkdir -p "$WITH" "$WITHOUT"
make_repo "$WITH" 1
make_repo "$WITHOUT" 0
(cd "$WITH" && "$PG" prove bench --json >"$BENCH_TMP/first.json") || die "the first prove with the setup failed"
restored=$(cd "$WITH" && "$PG" prove bench --no-cache 2>&1 >/dev/null | grep -o 'restored [0-9]* files from the setup cache ([a-z]*' || true)
[[ "$restored" == "restored $((PACKAGES * PER)) files from the setup cache (mounted" ]] || die "expected the setup restored from its cache, got: '$restored'"
echo "before timing: the setup ran once and is restored from the cache ($restored)"
(cd "$WITHOUT" && "$PG" prove bench --json >/dev/null) || die "the prove without a setup failed"
echo

wait_quiet
measure "without setup" "$PG -C $WITHOUT prove bench --no-cache --json"
measure "with a cached setup" "$PG -C $WITH prove bench --no-cache --json"
run_rounds "$BENCH_TMP/rounds"
summarize 1.2 "without setup" "with a cached setup"

#!/usr/bin/env bash
# What recording input trees costs (issue 18): `prove --no-cache` of the 50 providers of
# bench/lib.sh's monorepo (every provider runs and writes its receipt) with a build that
# records each receipt's git tree, against BEFORE, a build from before trees were recorded
# (the commit before 77ae2f1). The same for a no-op `prove` (everything reused: nothing is
# recorded, so the target is no difference at all). Target: small.
#
# Usage: BEFORE=/path/to/old/proofgraph bench/trees-cost.sh   (env: PACKAGES FILES RUNS WARMUP ROUNDS KEEP PROOFGRAPH PROOFGRAPH_REV)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=${PACKAGES:-50}
FILES=${FILES:-400}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
[[ -x "${BEFORE:-}" ]] || die "BEFORE must name a proofgraph binary built before input trees were recorded (e.g. commit 3856c51^^)"

bench_init trees
cp "$BEFORE" "$BENCH_TMP/bin/proofgraph-before"
OLD="$BENCH_TMP/bin/proofgraph-before"
print_facts "prove --no-cache, recording input trees vs not; $PACKAGES packages x $FILES files" \
    "before:      $("$OLD" --version) ($BEFORE)"

W="$BENCH_TMP/monorepo"
gen_monorepo "$W" "$PACKAGES" "$FILES"
gen_package_change "$W" "$PACKAGES"
git_commit_all "$W"
# One modified file per package, so each tree needs a blob written too.
for ((p = 1; p <= PACKAGES; p++)); do
    printf '// dirty\n' >>"$W/$(printf 'pkg%02d' "$p")/src/m1/f0001.js"
done
"$PG" -C "$W" prove bench --json >/dev/null || die "the first prove failed"
[[ -n "$(git -C "$W" for-each-ref refs/proofgraph/inputs/)" ]] || die "no input tree was recorded"
echo "before timing: a prove recorded $(git -C "$W" for-each-ref refs/proofgraph/inputs/ | wc -l) input trees"
echo

wait_quiet
measure "prove --no-cache (no trees)" "$OLD -C $W prove bench --no-cache --json"
measure "prove --no-cache (trees)" "$PG -C $W prove bench --no-cache --json"
run_rounds "$BENCH_TMP/run-rounds"
summarize 1.1 "prove --no-cache (no trees)" "prove --no-cache (trees)"
echo
measure "no-op prove (no trees)" "$OLD -C $W prove bench --json"
measure "no-op prove (trees)" "$PG -C $W prove bench --json"
run_rounds "$BENCH_TMP/noop-rounds"
summarize 1.0 "no-op prove (no trees)" "no-op prove (trees)"

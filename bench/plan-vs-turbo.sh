#!/usr/bin/env bash
# Issue 18's benchmark: the verification plan of a diff.
#
# `proofgraph plan bench --base A --head B --json` (refs read from git's objects, no
# checkout) against `turbo run build --affected --dry=json` with TURBO_SCM_BASE=A and
# TURBO_SCM_HEAD=B, on bench/lib.sh's monorepo (PACKAGES packages of FILES files, default
# 50 x 400 = 20 000; one `command` provider per package, `inputs: [pkgNN/**]`) with
# COMMITS commits (default 40) between A and B touching TOUCHED packages (default 5).
# Before timing, both tools must name the same set of affected packages (asserted).
# Target: <= 0.5x turbo's time.
#
# Usage: bench/plan-vs-turbo.sh   (env: PACKAGES FILES COMMITS TOUCHED RUNS WARMUP ROUNDS KEEP PROOFGRAPH PROOFGRAPH_REV QUIET_LOAD QUIET_MAX)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=${PACKAGES:-50}
FILES=${FILES:-400}
COMMITS=${COMMITS:-40}
TOUCHED=${TOUCHED:-5}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}

bench_init plan
TURBO=$(ls "$BENCH_DIR"/node_modules/@turbo/*/bin/turbo 2>/dev/null | head -n1 || true)
[[ -x "$TURBO" ]] || die "turbo is not installed: run \`npm ci --prefix bench\`"
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 TURBO_NO_UPDATE_NOTIFIER=1 NO_UPDATE_NOTIFIER=1

print_facts "plan --base A --head B vs turbo run build --affected --dry=json; $PACKAGES packages x $FILES files, $COMMITS commits touching $TOUCHED packages" \
    "turbo:       $("$TURBO" --version)"

W="$BENCH_TMP/monorepo"
gen_monorepo "$W" "$PACKAGES" "$FILES"
gen_package_change "$W" "$PACKAGES"
git_commit_all "$W"
git -C "$W" tag A

# COMMITS commits, each editing a file of one of TOUCHED packages spread over the range
# (pkg03, pkg13, ... for 5 of 50), round robin; then B.
declare -a touched=()
for ((t = 0; t < TOUCHED; t++)); do
    touched+=("$(printf 'pkg%02d' $((t * PACKAGES / TOUCHED + 3)))")
done
for ((c = 1; c <= COMMITS; c++)); do
    pkg=${touched[$(((c - 1) % TOUCHED))]}
    file=$(printf '%s/src/m%d/f%04d.js' "$pkg" $((c % 8)) $((c * 8 % (FILES - 1) + 1)))
    [[ -f "$W/$file" ]] || file="$pkg/package.json"
    printf '// edit %d\n' "$c" >>"$W/$file"
    git -C "$W" commit -qam "edit $c in $pkg"
done
git -C "$W" tag B
git -C "$W" checkout -q A

# Both tools' affected packages, compared before timing.
expected=$(printf '%s\n' "${touched[@]}" | sort | tr '\n' ' ')
"$PG" -C "$W" plan bench --base A --head B --json >"$BENCH_TMP/plan.json" 2>"$BENCH_TMP/plan.err" && code=0 || code=$?
[[ "$code" == 2 ]] || die "plan exited $code, not 2 (pending): $(tail -3 "$BENCH_TMP/plan.err")"
ours=$(json_get "$BENCH_TMP/plan.json" 'd.providers.filter(p => p.affected).map(p => p.id).sort().join(" ") + " "')
(cd "$W" && TURBO_SCM_BASE=A TURBO_SCM_HEAD=B "$TURBO" run build --affected --dry=json >"$BENCH_TMP/turbo.json" 2>"$BENCH_TMP/turbo.err") ||
    die "turbo --affected failed: $(tail -3 "$BENCH_TMP/turbo.err")"
theirs=$(json_get "$BENCH_TMP/turbo.json" '[...new Set(d.tasks.map(t => t.package))].sort().join(" ") + " "')
[[ "$ours" == "$expected" ]] || die "plan's affected providers [$ours] are not the touched packages [$expected]"
[[ "$theirs" == "$expected" ]] || die "turbo's affected packages [$theirs] are not the touched packages [$expected]"
echo "before timing: both name the $TOUCHED touched packages: $expected"
echo

wait_quiet
# plan exits 2 (the head's requirements are pending): that is its answer, not a failure.
HYPERFINE_ARGS=-i
measure "turbo run build --affected --dry=json" "env TURBO_SCM_BASE=A TURBO_SCM_HEAD=B $TURBO run build --affected --dry=json --cwd $W"
measure "plan --base A --head B" "$PG -C $W plan bench --base A --head B --json"
run_rounds "$BENCH_TMP/plan-rounds"
summarize 0.5 "turbo run build --affected --dry=json" "plan --base A --head B"

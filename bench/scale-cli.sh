#!/usr/bin/env bash
# (f) Linear scale of the whole command line: `validate`, `status`, `plan` and `prove` of N
# claims over N providers, at each N of SIZES (default "2000 20000"), end to end (reading
# YAML, sealing, fingerprints, the store, the run, the output).
#
# The workspace is one git repository (an OpenSpec root) whose change `big` has N claims
# c00001..cN, each requiring `static-analysis`, and N `command` providers p00001..pN, pK
# vouching for cK alone (`claims: [cK]`) with `[sh, -c, "exit 0 # K"]` (distinct argv). It
# lives on $TMPFS_DIR (default /dev/shm) when that is a tmpfs, so the disk does not decide.
#
# Timed once each, in this order (wall time and peak RSS by /usr/bin/time): `validate`,
# `status` before any receipt, `plan`, `prove --jobs 2` (every provider runs), `prove
# --jobs 2` again (every receipt reused: the no-op), `status` after. Each run is checked:
# prove must run (then reuse) all N providers and status must show N passed requirements.
# Printed: each command's time per item (claim + provider) at each size, and the growth
# from the smallest size to the largest against the growth of N (1.0 = linear; a product
# of claims × providers shows as the size ratio itself).
#
# Usage: bench/scale-cli.sh   (env: SIZES JOBS TMPFS_DIR KEEP PROOFGRAPH PROOFGRAPH_REV)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${SIZES:-2000 20000}
JOBS=${JOBS:-2}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}

bench_init scale
need python3 "apt-get install -y python3"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is required: apt-get install -y time"

BASE=$BENCH_TMP
TMPFS_TMP=
if [[ "$(findmnt -no FSTYPE --target "$TMPFS_DIR" 2>/dev/null | head -n1)" == tmpfs ]]; then
    TMPFS_TMP=$(mktemp -d "$TMPFS_DIR/pg-bench-scale.XXXXXX")
    BASE=$TMPFS_TMP
fi
bench_extra_cleanup() {
    if [[ -n "$TMPFS_TMP" ]]; then
        chmod -R u+w "$TMPFS_TMP" 2>/dev/null || true
        rm -rf "$TMPFS_TMP"
    fi
}

print_facts "N claims over N providers: validate, status, plan, prove, no-op prove (SIZES=$SIZES)" \
    "workspace:   $(findmnt -no FSTYPE --target "$BASE" | head -n1) ($BASE)"

# generate DIR N: the workspace described above, committed.
generate() {
    local dir=$1 n=$2
    mkdir -p "$dir/openspec/changes/big"
    openspec_skeleton "$dir"
    printf '# Scale benchmark\n' >"$dir/openspec/changes/big/proposal.md"
    printf '.proofgraph/\n' >"$dir/.gitignore"
    python3 - "$dir/openspec/changes/big" "$n" <<'EOF'
import sys
out, n = sys.argv[1], int(sys.argv[2])
with open(f"{out}/evidence.yaml", "w") as f:
    f.write("version: 2\nclaims:\n")
    for k in range(1, n + 1):
        f.write(f"  - {{id: c{k:05d}, scenario: Command {k} passes, capabilities: [static-analysis]}}\n")
with open(f"{out}/execution.yaml", "w") as f:
    f.write("version: 1\nproviders:\n")
    for k in range(1, n + 1):
        f.write(f'  p{k:05d}: {{adapter: command, capability: static-analysis, claims: [c{k:05d}], command: [sh, -c, "exit 0 # {k}"]}}\n')
EOF
    git_commit_all "$dir"
}

declare -A SECONDS_OF RSS_OF
COMMANDS=(validate status-before plan prove no-op status-after)

# timed NAME N OUT ARGS...: runs proofgraph ARGS in the workspace of size N, keeping
# stdout in OUT; records wall seconds and peak RSS. The exit status must be $EXPECT
# (default 0; `status` of a change with pending claims exits 2).
timed() {
    local name=$1 n=$2 out=$3 rc=0
    shift 3
    /usr/bin/time -f '%e %M' -o "$BENCH_TMP/time" "$PG" -C "$BASE/w$n" "$@" >"$out" 2>"$BENCH_TMP/err" || rc=$?
    if [[ "$rc" != "${EXPECT:-0}" ]]; then
        cat "$BENCH_TMP/err" >&2
        die "$name at N=$n exited $rc, not ${EXPECT:-0}: proofgraph $*"
    fi
    sed -i '/^Command exited with non-zero status/d' "$BENCH_TMP/time"
    read -r SECONDS_OF["$name/$n"] RSS_OF["$name/$n"] <"$BENCH_TMP/time"
    printf '  %-14s %8.2f s  %7.1f MB peak RSS\n' "$name" "${SECONDS_OF[$name/$n]}" "$(awk -v k="${RSS_OF[$name/$n]}" 'BEGIN { print k / 1024 }')"
}

for n in $SIZES; do
    echo "--- N=$n: generating"
    generate "$BASE/w$n" "$n"
    wait_quiet
    timed validate "$n" "$BENCH_TMP/v.json" validate big --json
    EXPECT=2 timed status-before "$n" "$BENCH_TMP/s0.json" status big --json
    timed plan "$n" "$BENCH_TMP/p.json" plan big --json
    timed prove "$n" "$BENCH_TMP/prove.json" prove big --jobs "$JOBS" --json
    ran=$(json_get "$BENCH_TMP/prove.json" 'd.summary.ran')
    [[ "$ran" == "$n" ]] || die "prove ran $ran providers, not $n"
    timed no-op "$n" "$BENCH_TMP/noop.json" prove big --jobs "$JOBS" --json
    reused=$(json_get "$BENCH_TMP/noop.json" 'd.summary.reused')
    [[ "$reused" == "$n" ]] || die "the no-op prove reused $reused providers, not $n"
    timed status-after "$n" "$BENCH_TMP/s1.json" status big --json
    passed=$(json_get "$BENCH_TMP/s1.json" 'd.requirements.filter(r => r.state == "passed").length')
    [[ "$passed" == "$n" ]] || die "status shows $passed passed requirements, not $n"
    echo "  checked: prove ran $ran, the no-op reused $reused, status shows $passed passed requirements"
    echo
done

read -r -a sizes <<<"$SIZES"
small=${sizes[0]}
large=${sizes[${#sizes[@]} - 1]}
echo "=== per item (claim + provider), and growth from N=$small to N=$large (N grew $(awk -v a="$small" -v b="$large" 'BEGIN { printf "%.1f", b / a }')x)"
for c in "${COMMANDS[@]}"; do
    line=$(printf '%-14s' "$c")
    for n in "${sizes[@]}"; do
        line+=$(awk -v s="${SECONDS_OF[$c/$n]}" -v n="$n" 'BEGIN { printf "  N=%d: %7.1f us/item", n, s / (2 * n) * 1e6 }')
    done
    line+=$(awk -v a="${SECONDS_OF[$c/$small]}" -v b="${SECONDS_OF[$c/$large]}" -v na="$small" -v nb="$large" \
        'BEGIN { g = (a > 0 ? b / a : 0); printf "  time grew %.1fx = %.2f of linear", g, g / (nb / na) }')
    echo "$line"
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min)"

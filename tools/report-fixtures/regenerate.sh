#!/usr/bin/env bash
# Regenerates every real fixture under fixtures/ by running the real test
# runners on the throwaway projects under generators/. See REGENERATE.md for
# the tool versions that produced the committed files.
#
# Usage: fixtures/regenerate.sh [all|jest|vitest|mocha|playwright|tap|pytest|rust|go|surefire|clean]...
#   clean removes what the generators installed or built (node_modules, .venv, target, ...).
#
# Every runner here exits non-zero on purpose (each project has a failing
# test), so exit codes of the runners are ignored; a missing output file is
# what fails this script.
#
# Requirements (install once, as root):
#   apt-get install -y chromium golang-go gotestsum maven junit4 libsurefire-java maven-debian-helper
#   Node.js 20 + npm, Python 3.11, Rust stable with cargo-nextest.
# Never runs `npx playwright install`: Playwright drives Debian's /usr/bin/chromium.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GEN="$ROOT/generators"
FIX="$(cd "$ROOT/../../fixtures/reports" && pwd)"

need() {
  if [[ ! -s "$1" ]]; then
    echo "regenerate: expected output $1 was not produced" >&2
    exit 1
  fi
}

# Normalise absolute paths so the fixtures do not depend on where the repo lives.
normalise_paths() {
  sed -i "s|$ROOT/|/REPO/|g" "$1"
}

npm_install() {
  (cd "$1" && npm ci --no-audit --no-fund >/dev/null)
}

gen_jest() {
  local d="$GEN/jest"
  npm_install "$d"
  mkdir -p "$FIX/jest" "$FIX/ctrf"
  (cd "$d" && npx jest --json --outputFile="$FIX/jest/basic.json" tests/ >/dev/null 2>&1) || true
  (cd "$d" && npx jest --json --outputFile="$FIX/jest/suite-error.json" tests/ broken/ >/dev/null 2>&1) || true
  (cd "$d" && npx jest --json --passWithNoTests --outputFile="$FIX/jest/zero-tests.json" empty/ >/dev/null 2>&1) || true
  (cd "$d" && CTRF_OUT_DIR="$FIX/ctrf" npx jest -c jest.ctrf.config.js tests/ >/dev/null 2>&1) || true
  for f in basic suite-error zero-tests; do need "$FIX/jest/$f.json"; normalise_paths "$FIX/jest/$f.json"; done
  need "$FIX/ctrf/jest-ctrf.json"; normalise_paths "$FIX/ctrf/jest-ctrf.json"
}

gen_vitest() {
  local d="$GEN/vitest"
  npm_install "$d"
  mkdir -p "$FIX/vitest"
  (cd "$d" && npx vitest run --reporter=json --outputFile="$FIX/vitest/basic.json" tests/ >/dev/null 2>&1) || true
  (cd "$d" && npx vitest run --reporter=json --outputFile="$FIX/vitest/suite-error.json" tests/ broken/ >/dev/null 2>&1) || true
  (cd "$d" && npx vitest run --reporter=json --passWithNoTests --outputFile="$FIX/vitest/zero-tests.json" empty/ >/dev/null 2>&1) || true
  for f in basic suite-error zero-tests; do need "$FIX/vitest/$f.json"; normalise_paths "$FIX/vitest/$f.json"; done
}

gen_mocha() {
  local d="$GEN/mocha"
  npm_install "$d"
  mkdir -p "$FIX/mocha" "$FIX/ctrf"
  (cd "$d" && npx mocha --reporter json --reporter-option output="$FIX/mocha/basic.json" test/ >/dev/null 2>&1) || true
  (cd "$d" && npx mocha --reporter json --reporter-option output="$FIX/mocha/hook-failure.json" hookfail/ >/dev/null 2>&1) || true
  (cd "$d" && npx mocha --reporter mocha-ctrf-json-reporter --reporter-options "outputFile=mocha-ctrf.json,outputDir=$FIX/ctrf" test/ >/dev/null 2>&1) || true
  for f in basic hook-failure; do need "$FIX/mocha/$f.json"; normalise_paths "$FIX/mocha/$f.json"; done
  need "$FIX/ctrf/mocha-ctrf.json"; normalise_paths "$FIX/ctrf/mocha-ctrf.json"
}

gen_playwright() {
  local d="$GEN/playwright"
  npm_install "$d"
  mkdir -p "$FIX/playwright"
  local out
  out="$(mktemp -d)"
  (cd "$d" && PW_OUTPUT_DIR="$out" PLAYWRIGHT_JSON_OUTPUT_FILE="$FIX/playwright/basic.json" \
    npx playwright test --reporter=json >/dev/null 2>&1) || true
  (cd "$d" && PW_TEST_DIR=./broken PW_OUTPUT_DIR="$out" PLAYWRIGHT_JSON_OUTPUT_FILE="$FIX/playwright/load-error.json" \
    npx playwright test --reporter=json >/dev/null 2>&1) || true
  for f in basic load-error; do
    need "$FIX/playwright/$f.json"
    normalise_paths "$FIX/playwright/$f.json"
    sed -i "s|$out/|/PW-OUTPUT/|g" "$FIX/playwright/$f.json"
  done
  rm -rf "$out"
}

gen_tap() {
  mkdir -p "$FIX/tap"
  # TAP 13 from Node's built-in runner (no dependencies).
  (cd "$GEN/node-tap" && node --test --test-reporter=tap test/ >"$FIX/tap/node-test.tap" 2>/dev/null) || true
  # TAP 14 from node-tap.
  npm_install "$GEN/tap14"
  (cd "$GEN/tap14" && npx tap --reporter=tap --disable-coverage test/math.test.js >"$FIX/tap/node-tap-14.tap" 2>/dev/null) || true
  (cd "$GEN/tap14" && npx tap --reporter=tap --disable-coverage bail/bail.test.js >"$FIX/tap/node-tap-14-bailout.tap" 2>/dev/null) || true
  for f in node-test node-tap-14 node-tap-14-bailout; do need "$FIX/tap/$f.tap"; normalise_paths "$FIX/tap/$f.tap"; done
}

gen_pytest() {
  local d="$GEN/pytest"
  if [[ ! -x "$d/.venv/bin/pytest" ]]; then
    python3 -m venv "$d/.venv"
    "$d/.venv/bin/pip" install -q -r "$d/requirements.txt"
  fi
  mkdir -p "$FIX/junit"
  (cd "$d" && .venv/bin/pytest -p no:cacheprovider --junitxml="$FIX/junit/pytest.xml" tests/ >/dev/null 2>&1) || true
  # Collect only: nothing executes (`tests="0"`).
  (cd "$d" && .venv/bin/pytest -p no:cacheprovider --co --junitxml="$FIX/junit/pytest-collect-only.xml" tests/ >/dev/null 2>&1) || true
  # Modules that cannot be imported, beside one that can.
  (cd "$GEN/pytest-collect" && "$d/.venv/bin/pytest" -p no:cacheprovider --continue-on-collection-errors --junitxml="$FIX/junit/pytest-collection-error.xml" broken/ >/dev/null 2>&1) || true
  # Every test skipped or xfail.
  (cd "$GEN/pytest-collect" && "$d/.venv/bin/pytest" -p no:cacheprovider --junitxml="$FIX/junit/pytest-all-skipped.xml" skipped/ >/dev/null 2>&1) || true
  for f in pytest pytest-collect-only pytest-collection-error pytest-all-skipped; do
    need "$FIX/junit/$f.xml"; normalise_paths "$FIX/junit/$f.xml"
  done
}

gen_rust() {
  local d="$GEN/rust-crate"
  mkdir -p "$FIX/junit" "$FIX/libtest-json"
  (cd "$d" && cargo build --tests -q)
  rm -f "$d/target/nextest/default/junit.xml"
  (cd "$d" && cargo nextest run --no-fail-fast >/dev/null 2>&1) || true
  need "$d/target/nextest/default/junit.xml"
  cp "$d/target/nextest/default/junit.xml" "$FIX/junit/nextest.xml"
  (cd "$d" && RUSTC_BOOTSTRAP=1 cargo test --no-fail-fast -q -- -Z unstable-options --format json --report-time \
    >"$FIX/libtest-json/cargo-test.jsonl" 2>/dev/null) || true
  (cd "$d" && NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1 cargo nextest run --no-fail-fast --message-format libtest-json \
    >"$FIX/libtest-json/nextest.jsonl" 2>/dev/null) || true
  for f in junit/nextest.xml libtest-json/cargo-test.jsonl libtest-json/nextest.jsonl; do need "$FIX/$f"; normalise_paths "$FIX/$f"; done
}

gen_go() {
  local d="$GEN/go"
  mkdir -p "$FIX/go-test-json" "$FIX/junit"
  (cd "$d" && go test -count=1 -json ./mathpkg/ >"$FIX/go-test-json/basic.jsonl" 2>/dev/null) || true
  (cd "$d" && go test -count=1 -json ./... >"$FIX/go-test-json/build-failure.jsonl" 2>/dev/null) || true
  (cd "$d" && gotestsum --junitfile "$FIX/junit/gotestsum.xml" --format standard-quiet -- -count=1 ./... >/dev/null 2>&1) || true
  # A replay: the second run, with the test cache the first filled, serves the package from it.
  local cache
  cache="$(mktemp -d)"
  (cd "$GEN/go-cached" && GOCACHE="$cache" go test -json ./... >/dev/null 2>&1 \
    && GOCACHE="$cache" go test -json ./... >"$FIX/go-test-json/cached.jsonl" 2>/dev/null) || true
  rm -rf "$cache"
  for f in go-test-json/basic.jsonl go-test-json/build-failure.jsonl go-test-json/cached.jsonl junit/gotestsum.xml; do need "$FIX/$f"; done
}

gen_surefire() {
  local d="$GEN/surefire"
  mkdir -p "$FIX/junit"
  rm -rf "$d/target"
  (cd "$d" && mvn -B -q -s settings.xml test -Dfixture.rerun=1 >/dev/null 2>&1) || true
  need "$d/target/surefire-reports/TEST-fixture.MathUtilTest.xml"
  cp "$d/target/surefire-reports/TEST-fixture.MathUtilTest.xml" "$FIX/junit/surefire-rerun.xml"
  rm -rf "$d/target"
  (cd "$d" && mvn -B -q -s settings.xml test -Dfixture.rerun=0 >/dev/null 2>&1) || true
  need "$d/target/surefire-reports/TEST-fixture.MathUtilTest.xml"
  cp "$d/target/surefire-reports/TEST-fixture.MathUtilTest.xml" "$FIX/junit/surefire.xml"
  for f in surefire-rerun surefire; do normalise_paths "$FIX/junit/$f.xml"; done
}

gen_clean() {
  rm -rf "$GEN"/*/node_modules "$GEN"/tap14/.tap "$GEN"/pytest/.venv "$GEN"/rust-crate/target \
    "$GEN"/surefire/target "$GEN"/surefire/.m2-local "$GEN"/playwright/test-results
}

targets=("$@")
if [[ ${#targets[@]} -eq 0 || "${targets[0]}" == "all" ]]; then
  targets=(jest vitest mocha playwright tap pytest rust go surefire)
fi
for t in "${targets[@]}"; do
  echo "regenerate: $t" >&2
  "gen_$t"
done

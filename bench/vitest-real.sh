#!/usr/bin/env bash
# Benchmark (b) of the real-projects issue: what proving a real TypeScript suite costs over
# running it. zod 4.6.7 from npm (TypeScript sources and their 196 vitest test files, ~2 650
# tests), with vitest 3.2.7 and the dev dependencies four of its test files import; vitest
# resolves `zod/*` to the sources through zod's own `@zod/source` export condition.
#
#   peer:    node_modules/.bin/vitest run --reporter=junit --outputFile=vitest.xml, in the
#            repository (node_modules installed there with npm ci);
#   variant: proofgraph prove zod --no-cache, whose one provider runs that same command in a
#            worktree sandbox, node_modules shown from the cached setup (checked: mounted).
#
# Both must pass, with the same number of tests, before timing. Target: <= 1.1x.
#
# Usage: bench/vitest-real.sh   (env: RUNS WARMUP ROUNDS KEEP PROOFGRAPH PROOFGRAPH_REV QUIET_LOAD QUIET_MAX)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-3}
WARMUP=${WARMUP:-1}
ROUNDS=${ROUNDS:-1}
ZOD_VERSION=4.6.7

bench_init vitest-real

REPO="$BENCH_TMP/zod"
mkdir -p "$REPO" "$BENCH_TMP/dl"
(cd "$BENCH_TMP/dl" && npm pack --silent "zod@$ZOD_VERSION" >/dev/null) || die "npm pack zod@$ZOD_VERSION failed"
tar --strip-components=1 -xzf "$BENCH_TMP/dl/zod-$ZOD_VERSION.tgz" -C "$REPO"
node -e '
const fs = require("fs"), f = process.argv[1], p = JSON.parse(fs.readFileSync(f, "utf8"));
p.devDependencies = {"vitest": "3.2.7", "@web-std/file": "3.0.3", "@seriousme/openapi-schema-validator": "2.11.0", "recheck": "4.5.0", "esbuild": "0.28.2"};
fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n");' "$REPO/package.json"
cat >"$REPO/vitest.config.mjs" <<'JS'
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["@zod/source"] },
  ssr: { resolve: { conditions: ["@zod/source"] } },
  test: { include: ["src/**/*.test.ts"] },
});
JS
printf 'node_modules/\nvitest.xml\n' >"$REPO/.gitignore"
(cd "$REPO" && npm install --package-lock-only --ignore-scripts >/dev/null) || die "locking the dev dependencies failed"
openspec_skeleton "$REPO"
mkdir -p "$REPO/openspec/changes/zod"
printf '# zod keeps working\n' >"$REPO/openspec/changes/zod/proposal.md"
printf 'version: 2\nclaims:\n  - {id: works, scenario: zod'"'"'s suite passes, capabilities: [test]}\n' \
    >"$REPO/openspec/changes/zod/evidence.yaml"
printf 'version: 1\nproviders:\n  test:\n    adapter: test-discovery\n    capability: test\n    command: [node_modules/.bin/vitest, run, --reporter=junit, --outputFile=vitest.xml]\n    report: vitest.xml\n    timeoutMs: 1200000\n' \
    >"$REPO/openspec/changes/zod/execution.yaml"
printf 'version: 1\nrepositories:\n  root:\n    path: .\n    setup: [[npm, ci, --no-audit, --no-fund]]\n    setupCache: [node_modules]\n' \
    >"$REPO/proofgraph.yaml"
git_commit_all "$REPO"
(cd "$REPO" && npm ci --no-audit --no-fund >/dev/null) || die "npm ci failed"

print_facts "zod $ZOD_VERSION's vitest suite: prove --no-cache against vitest run" \
    "node:        $(node --version)" \
    "vitest:      $(cd "$REPO" && node_modules/.bin/vitest --version)"

cd "$REPO"
node_modules/.bin/vitest run --reporter=junit --outputFile=vitest.xml >/dev/null 2>&1 || die "zod's suite fails run directly"
direct=$(grep -o '<testsuites [^>]*' vitest.xml | grep -o ' tests="[0-9]*"')
"$PG" prove zod --json >"$BENCH_TMP/first.json" 2>"$BENCH_TMP/first.err" || die "the first prove failed: $(tail -5 "$BENCH_TMP/first.err")"
"$PG" prove zod --no-cache --json >"$BENCH_TMP/second.json" 2>"$BENCH_TMP/second.err" || die "the second prove failed"
grep -q 'restored [0-9]* files from the setup cache (mounted)' "$BENCH_TMP/second.err" || die "expected node_modules mounted from the setup cache: $(cat "$BENCH_TMP/second.err")"
proved=$(json_get "$BENCH_TMP/second.json" 'JSON.stringify(d.requirements[0].evidence[0].counts)')
echo "before timing: vitest run directly:$direct; prove counts $proved"
echo

wait_quiet
measure "vitest run" "node_modules/.bin/vitest run --reporter=junit --outputFile=vitest.xml"
measure "prove --no-cache" "$PG prove zod --no-cache --json"
run_rounds "$BENCH_TMP/rounds"
summarize 1.1 "vitest run" "prove --no-cache"

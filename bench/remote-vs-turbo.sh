#!/usr/bin/env bash
# Issue 17's benchmarks: receipts that travel.
#
# (1) A fresh clone with an empty local store, everything already proven in the remote:
#     `proofgraph prove bench` (pulls 50 receipts from a Bazel HTTP cache — nginx with
#     WebDAV on loopback — and runs nothing) against `turbo run build` in a fresh clone
#     with everything in turbo's remote cache (npm `turborepo-remote-cache`, local storage,
#     on loopback). Target: <= 0.5x turbo's time. Each timed run gets a new clone
#     (`git clone`, untimed); proofgraph must run zero providers and pull 50, turbo must
#     say FULL TURBO — both checked before timing.
# (2) What pushing costs a prove that runs: `prove --no-cache` of the 50 providers with
#     `--cache local:rw,remote:rw` against `--cache local:rw,remote:off`, in one clone.
#     Target: <= 1.10x.
#
# The workspace is bench/lib.sh's monorepo: PACKAGES packages of FILES files (default
# 50 x 400 = 20 000), one `command` provider per package (`inputs: [pkgNN/**]`).
#
# Usage: bench/remote-vs-turbo.sh   (env: SKIP_FRESH=1 times only (2); PACKAGES FILES RUNS WARMUP ROUNDS KEEP PROOFGRAPH PROOFGRAPH_REV QUIET_LOAD QUIET_MAX)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=${PACKAGES:-50}
FILES=${FILES:-400}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}

bench_init remote
TURBO=$(ls "$BENCH_DIR"/node_modules/@turbo/*/bin/turbo 2>/dev/null | head -n1 || true)
[[ -x "$TURBO" ]] || die "turbo is not installed: run \`npm ci --prefix bench\`"
RRC="$BENCH_DIR/node_modules/.bin/turborepo-remote-cache"
[[ -x "$RRC" ]] || die "turborepo-remote-cache is not installed: run \`npm ci --prefix bench\`"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x "$NGINX" ]] || die "nginx is required: apt-get install -y nginx"
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1 TURBO_NO_UPDATE_NOTIFIER=1 NO_UPDATE_NOTIFIER=1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# nginx: a Bazel HTTP cache under /cache/.
NG="$BENCH_TMP/nginx"
mkdir -p "$NG/data/cache/cas" "$NG/data/cache/ac" "$NG/tmp" "$NG/logs"
NPORT=$(free_port)
cat >"$NG/nginx.conf" <<CONF
user root;
worker_processes 1;
daemon off;
pid $NG/nginx.pid;
error_log $NG/logs/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $NG/tmp/body;
  proxy_temp_path $NG/tmp/proxy;
  fastcgi_temp_path $NG/tmp/fastcgi;
  uwsgi_temp_path $NG/tmp/uwsgi;
  scgi_temp_path $NG/tmp/scgi;
  client_max_body_size 0;
  server {
    listen 127.0.0.1:$NPORT;
    location /cache/ {
      root $NG/data;
      dav_methods PUT;
      create_full_put_path on;
    }
  }
}
CONF
"$NGINX" -c "$NG/nginx.conf" -e "$NG/logs/error.log" &
NGINX_PID=$!
# turborepo-remote-cache with local storage.
TPORT=$(free_port)
TOKEN=bench-token-0123456789
PORT=$TPORT STORAGE_PROVIDER=local STORAGE_PATH="$BENCH_TMP/turbo-cache" TURBO_TOKEN=$TOKEN \
    "$RRC" >"$BENCH_TMP/rrc.log" 2>&1 &
RRC_PID=$!
trap 'kill $NGINX_PID $RRC_PID 2>/dev/null; bench_cleanup' EXIT
for port in $NPORT $TPORT; do
    for _ in $(seq 1 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
done
export TURBO_API="http://127.0.0.1:$TPORT" TURBO_TOKEN=$TOKEN TURBO_TEAM=bench

print_facts "fresh clone, everything in the remote: prove (nginx, HTTP cache) vs turbo (turborepo-remote-cache); $PACKAGES packages x $FILES files" \
    "turbo:       $("$TURBO" --version)" \
    "nginx:       $("$NGINX" -v 2>&1 | sed 's/.*: //')" \
    "remote:      turborepo-remote-cache $(node -p 'require(process.argv[1]).version' "$BENCH_DIR/node_modules/turborepo-remote-cache/package.json")"

# A CI key (Ed25519, PKCS#8 PEM, as the store keeps its own), trusted by the catalog.
need openssl "apt-get install -y openssl"
KEY="$BENCH_TMP/ci.key"
openssl genpkey -algorithm ed25519 -out "$KEY" 2>/dev/null || die "openssl could not make an Ed25519 key"
PUB=$(openssl pkey -in "$KEY" -pubout)

W="$BENCH_TMP/monorepo"
gen_monorepo "$W" "$PACKAGES" "$FILES"
gen_package_change "$W" "$PACKAGES"
{
    printf 'version: 1\ncache:\n  remote: http://127.0.0.1:%s/cache\ntrustedKeys:\n  - name: ci\n    publicKey: |\n' "$NPORT"
    printf '%s\n' "$PUB" | sed 's/^/      /'
} >"$W/proofgraph.yaml"
git_commit_all "$W"

# CI: prove and push; turbo build and upload.
CI="$BENCH_TMP/ci"
git clone -q "$W" "$CI"
mkdir -p "$CI/.proofgraph/keys" && cp "$KEY" "$CI/.proofgraph/keys/workspace.key" && chmod 600 "$CI/.proofgraph/keys/workspace.key"
"$PG" -C "$CI" prove bench --cache local:rw,remote:rw --json >"$BENCH_TMP/ci.json" 2>"$BENCH_TMP/ci.err" || die "CI's prove failed: $(tail -5 "$BENCH_TMP/ci.err")"
pushed=$(json_get "$BENCH_TMP/ci.json" 'd.summary.pushed')
[[ "$pushed" == "$PACKAGES" ]] || die "CI pushed $pushed receipts, not $PACKAGES"
(cd "$CI" && "$TURBO" run build --output-logs=none >/dev/null 2>&1) || die "CI's turbo build failed"

# Both checked on a fresh clone before timing.
FRESH="$BENCH_TMP/fresh"
fresh() { rm -rf "$FRESH" && git clone -q "$W" "$FRESH"; }
fresh
"$PG" -C "$FRESH" prove bench --json >"$BENCH_TMP/fresh.json" 2>/dev/null || die "the fresh clone's prove failed"
[[ "$(json_get "$BENCH_TMP/fresh.json" 'd.summary.ran')" == 0 ]] || die "the fresh clone ran providers"
[[ "$(json_get "$BENCH_TMP/fresh.json" 'd.summary.pulled')" == "$PACKAGES" ]] || die "the fresh clone did not pull $PACKAGES receipts"
fresh
(cd "$FRESH" && "$TURBO" run build 2>&1 | grep -q 'FULL TURBO') || die "turbo's fresh clone is not FULL TURBO"
echo "before timing: CI pushed $pushed receipts; a fresh clone pulls $PACKAGES and runs nothing; turbo's fresh clone is FULL TURBO"
echo

# hyperfine runs commands without a shell: the untimed re-clone is a script.
# `sync`: the clone's 20 000 files are on disk before timing starts, so neither tool's time
# includes the kernel writing them back meanwhile (which made runs vary 3x).
printf '#!/bin/sh\nrm -rf "%s" && git clone -q "%s" "%s" && sync\n' "$FRESH" "$W" "$FRESH" >"$BENCH_TMP/reclone.sh"
if [[ "${SKIP_FRESH:-0}" != 1 ]]; then
wait_quiet
measure "turbo run build (fresh clone)" "$TURBO run build --cwd $FRESH --output-logs=none" "sh $BENCH_TMP/reclone.sh"
measure "prove (fresh clone)" "$PG -C $FRESH prove bench --json" "sh $BENCH_TMP/reclone.sh"
run_rounds "$BENCH_TMP/fresh-rounds"
summarize 0.5 "turbo run build (fresh clone)" "prove (fresh clone)"
echo
fi

# (2) What pushing costs a prove that runs everything.
fresh
mkdir -p "$FRESH/.proofgraph/keys" && cp "$KEY" "$FRESH/.proofgraph/keys/workspace.key" && chmod 600 "$FRESH/.proofgraph/keys/workspace.key"
# `sync` before each run: what the previous run wrote (50 sandboxes of 400 files) is on disk
# before the next is timed, so neither side pays for the other's writeback.
measure "prove --no-cache, remote off" "$PG -C $FRESH prove bench --no-cache --cache local:rw,remote:off --json" "sync"
measure "prove --no-cache, pushing" "$PG -C $FRESH prove bench --no-cache --cache local:rw,remote:rw --json" "sync"
run_rounds "$BENCH_TMP/push-rounds"
summarize 1.10 "prove --no-cache, remote off" "prove --no-cache, pushing"

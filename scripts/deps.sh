#!/usr/bin/env bash
# Installs what the test suite drives for real, on a fresh machine: system packages through
# apt-get when it can (as root, or with passwordless sudo), else one message listing what to
# install; then cargo-nextest. Called by scripts/test.sh (and so by .ci/run); a machine that
# already has everything installs nothing and runs no apt-get.
set -euo pipefail

# command that must exist → the Debian package that provides it, and why the tests need it.
#   git              the repositories every test builds
#   dot              graphviz: `graph --format dot` must render
#   openssl          signs and verifies envelopes independently of our code
#   go               golang-go: a real runner the wiring bootstrap's tests drive, and the go recipe
#   script           bsdutils: the pseudo-terminal the progress-bar test runs prove under
#   chromium         the browser Playwright drives (never downloaded) + fonts-liberation
#   nix-instantiate  nix-bin: evaluates the flake's own expressions offline
#   node, npm        the pinned test tools (Playwright, openspec, turbo)
#   nginx            the Bazel HTTP cache (WebDAV PUT) the remote-cache tests start
#   tinyproxy        tinyproxy-bin (the binary, no service): the forward proxy the remote-cache
#                    tests reach their caches through
#   zsh, fish        the shells whose completion scripts the tests source and ask (bash is there)
#   groff            groff-base: renders the man page, warnings as errors
#   bazel            bazel-bootstrap: a real Remote Execution API client, built against the
#                    engine and `proofgraph worker` (scripts/bazel-interop.sh)
#   (postgresql)     the database of the Remote Execution API engine (BuildGrid's SQL scheduler)
#                    the remote-execution tests start; Debian keeps its programs out of PATH,
#                    in /usr/lib/postgresql/<version>/bin
needs=(
  "git:git"
  "dot:graphviz"
  "openssl:openssl"
  "go:golang-go"
  "script:bsdutils"
  "chromium:chromium"
  "nix-instantiate:nix-bin"
  "node:nodejs"
  "npm:npm"
  "nginx:nginx"
  "tinyproxy:tinyproxy-bin"
  "zsh:zsh"
  "fish:fish"
  "groff:groff-base"
  "bazel:bazel-bootstrap"
)
missing=()
for need in "${needs[@]}"; do
  # sbin too: a user's PATH may lack it, and nginx lives there.
  PATH="$PATH:/usr/sbin:/sbin" command -v "${need%%:*}" >/dev/null 2>&1 || missing+=("${need#*:}")
done
# PostgreSQL: Debian installs initdb and postgres under /usr/lib/postgresql/<version>/bin, not
# in PATH (tests/it/engine_support.rs looks there).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
# Python: venv with ensurepip, for the venvs of the pinned Python test tools
# (scripts/python-venv.sh, each with a pip of its own: the system's pip is never used) and of
# the pytest projects in the tests.
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  # Fonts and certificates come along: Chromium renders with them, npm fetches over TLS.
  missing+=(fonts-liberation ca-certificates)
  if [ "$(id -u)" = 0 ]; then
    as_root() { "$@"; }
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root() { sudo -n "$@"; }
  else
    as_root() { return 1; }
  fi
  if command -v apt-get >/dev/null 2>&1 && as_root true; then
    echo "== installing system packages: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "The test suite needs these system packages (Debian names): ${missing[*]}." >&2
    echo "Install them (sudo apt-get install ${missing[*]}, or your system's equivalents) and run ./scripts/test.sh again." >&2
    exit 1
  fi
fi

node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' ||
  { echo "Node.js 20 or later is required (@playwright/test 1.65); found $(node --version)" >&2; exit 1; }

command -v cargo-nextest >/dev/null 2>&1 || cargo install cargo-nextest --locked

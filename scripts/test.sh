#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the pinned test tools, then
# checks formatting and lints, then runs every test. Nothing is skipped for a
# missing tool: a test that needs one fails and says how to get it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Real tools the tests compare against or drive (pinned in tools/package-lock.json).
if [ ! -f tools/node_modules/.package-lock.json ] || [ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]; then
  npm ci --prefix tools --no-audit --no-fund
fi

# Python packages the tests run (securesystemslib, rfc8785 cross-checks; pytest, a real runner).
if ! python3 -c 'import securesystemslib, rfc8785, pytest' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check -r tools/interop/requirements.txt
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  echo "cargo-nextest not found; running cargo test (install: cargo install cargo-nextest --locked)" >&2
  cargo test --workspace --locked --no-fail-fast
fi

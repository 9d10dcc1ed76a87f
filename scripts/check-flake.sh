#!/usr/bin/env bash
# Checks offline what flake.nix builds: the package's name, its version and the lock file it
# vendors from. nixpkgs cannot be fetched here, so the flake's own `outputs` function is
# evaluated with nixpkgs and flake-utils replaced by stubs (every nixpkgs builder returns
# its arguments); the expressions that name the package are the flake's own (and
# nix/cargo.nix's, which it imports). The values are compared with what cargo reads from
# the workspace; any difference, a value that is not a string, or an evaluation error fails.
#
# usage: scripts/check-flake.sh    (needs nix-instantiate — Debian's nix-bin — cargo, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

command -v nix-instantiate >/dev/null 2>&1 ||
  { echo "nix-instantiate is required (Debian: apt-get install nix-bin)" >&2; exit 2; }

stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
cat >"$stub/nixpkgs.nix" <<'NIX'
# Just enough of nixpkgs for the flake's outputs to evaluate: a builder returns its
# arguments; importTOML is nixpkgs' own definition.
{ system }: {
  lib.cleanSource = src: src;
  lib.importTOML = path: builtins.fromTOML (builtins.readFile path);
  rustPlatform.buildRustPackage = args: args;
  mkShell = args: args;
}
NIX

# `--store dummy://`: evaluation only, nothing is read from or written to a Nix store.
nix-instantiate --store dummy:// --eval --strict --json \
  --argstr root "$root" --argstr stub "$stub/nixpkgs.nix" --expr '
  { root, stub }:
  let
    flake = import (/. + root + "/flake.nix");
    outputs = flake.outputs {
      self = outputs;
      nixpkgs = /. + stub;
      flake-utils.lib.eachDefaultSystem = perSystem: perSystem "x86_64-linux";
    };
    package = outputs.packages.default;
  in {
    inherit (package) pname version;
    lockFile = toString package.cargoLock.lockFile;
  }' >"$stub/flake.json"

cargo metadata --no-deps --locked --format-version 1 >"$stub/cargo.json"

python3 - "$root" "$stub/flake.json" "$stub/cargo.json" <<'PY'
import json, os, sys

root, flake_file, cargo_file = sys.argv[1:]
flake = json.load(open(flake_file))
cargo = json.load(open(cargo_file))
app = next(p for p in cargo["packages"] if p["manifest_path"] == os.path.join(root, "Cargo.toml"))
problems = []
for field, want in (("pname", app["name"]), ("version", app["version"])):
    got = flake[field]
    if got != want:
        problems.append(f"the flake's {field} is {json.dumps(got)}; cargo builds {json.dumps(want)}")
lock = os.path.join(root, "Cargo.lock")
if flake["lockFile"] != lock:
    problems.append(f"the flake's cargoLock.lockFile is {flake['lockFile']}; the workspace's is {lock}")
elif not os.path.isfile(lock):
    problems.append(f"the flake's cargoLock.lockFile {lock} does not exist")
if problems:
    print("flake.nix does not build what cargo builds:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"flake.nix: {flake['pname']} {flake['version']}, cargoLock.lockFile = Cargo.lock, as cargo reads the workspace")
PY

# What the flake takes from the Cargo workspace, read with builtins only (no nixpkgs), so
# that scripts/check-flake.sh can evaluate it offline.
#
# The application's `[package]` inherits its version (and more) from
# `[workspace.package]`: `version.workspace = true` reads as `{ workspace = true; }`, so a
# field is taken from the workspace whenever the package says so.
let
  manifest = builtins.fromTOML (builtins.readFile ../Cargo.toml);
  package = manifest.package;
  inherited = field:
    let value = package.${field}; in
    if builtins.isAttrs value && (value.workspace or false)
    then manifest.workspace.package.${field}
    else value;
in
{
  pname = package.name;
  version = inherited "version";
  lockFile = ../Cargo.lock;
}

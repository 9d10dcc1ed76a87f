{
  description = "proofgraph: proves the claims of a change in a spec-driven repository";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, flake-utils }:
    flake-utils.lib.eachDefaultSystem (system:
      let
        pkgs = import nixpkgs { inherit system; };
        # Name, version and lock file, from the workspace (`version.workspace = true`);
        # scripts/check-flake.sh evaluates them offline.
        cargo = import ./nix/cargo.nix;
      in
      {
        packages.default = pkgs.rustPlatform.buildRustPackage {
          pname = cargo.pname;
          version = cargo.version;
          src = pkgs.lib.cleanSource ./.;
          cargoLock.lockFile = cargo.lockFile;
          # The integration tests need the pinned npm tools and network-free
          # fixtures outside the build sandbox; they run in `nix develop` instead.
          doCheck = false;
          meta.mainProgram = "proofgraph";
        };

        devShells.default = pkgs.mkShell {
          packages = with pkgs; [
            cargo
            rustc
            clippy
            rustfmt
            rust-analyzer
            cargo-nextest
            nodejs_20
            git
            graphviz
          ];
        };
      });
}

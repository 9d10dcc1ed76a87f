//! The `proofgraph` binary. Everything it does lives in the library; see
//! [`proofgraph::cli::main`].

fn main() -> std::process::ExitCode {
    proofgraph::cli::main()
}

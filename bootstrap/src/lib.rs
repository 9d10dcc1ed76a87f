//! Wiring bootstrap for proofgraph: derive candidate providers from a
//! repository's own manifests **without running anything** — the library
//! behind `proofgraph evidence detect|init|doctor <change>`.
//!
//! - [`detect`] reads, per target repository, `package.json` (scripts,
//!   dependencies, lockfiles), `playwright.config.*` (as text), `Cargo.toml`
//!   (+ `.config/nextest.toml`), Python manifests and `go.mod`, and proposes
//!   providers for the capabilities the claims require and the existing
//!   providers do not wire.
//! - [`init`] adds only the recommended (high-confidence) candidates to the
//!   text of `execution.yaml`, inserting and never re-serialising, so
//!   existing providers (and YAML comments) keep every byte.
//! - [`doctor`] lists what stays unresolved and the wiring mistakes visible
//!   without running anything, each with a one-sentence fix.
//! - [`draft_claims`] and [`render_evidence`] draft `evidence.yaml` from a
//!   change's delta specs (one claim per scenario, each requiring `test`),
//!   for a change that has none.
//!
//! Invariants, written as absences: nothing here spawns a process, opens a
//! network connection, installs a dependency, writes a file, creates a
//! receipt, prints, or reads an environment variable (the caller hands in
//! the `PATH` as a [`Host`], and the providers' last runs as [`LastRun`]s).
//! No candidate runs a program [`Host`] does not find. Bootstrap never
//! weakens a claim: it only ever adds providers, and an unwired capability
//! stays reported until something proves it.
//!
//! # Detection rules and confidence
//!
//! | capability | source | proposal | grade |
//! |---|---|---|---|
//! | test | `package.json` script `test` / `test:unit` / `unit` running vitest, jest, mocha or `node --test` as the last command of an `&&` chain | `<pm> run <script> [--] <report flags>` (jest and `node --test` inside `sh -c 'mkdir -p test-results && exec "$@"'`, as they do not create the directory) | high |
//! | test | the same runner before the end of an `&&` chain (`node --test && npm run check:type`) | that command by itself with the report flags (node's before `--test`; vitest, jest, mocha through `<pm> exec`) | high (review when it is not plain words, in watch mode, or the package manager is uncertain) |
//! | test | the same, in watch mode, not last in a chain of other operators, a competing `--reporter`, or an uncertain package manager | as above | review |
//! | test | a test script that runs something else, with exactly one runner among the dependencies, or no test script | the runner run directly (`npm exec --no -- vitest …`) | review |
//! | test | two or more runners (in the script, or among the dependencies when the script names none) | one per runner, run directly | ambiguous |
//! | test | a risky script, `pre` or `post` hook (sudo/curl/wget at a command start, `rm -rf`, `$(`, backtick) | refused: `provider` is `null` | review |
//! | test | `Cargo.toml` | `sh -c '… exec "$@" > test-results/cargo-test.json' sh cargo test --no-fail-fast [--workspace] -- -Z unstable-options --format json --report-time`, `env: {RUSTC_BOOTSTRAP: "1"}`, `libtest-json` | high (review with `harness = false`; alternative beside nextest) |
//! | test | `.config/nextest.toml` with a `[profile.<p>.junit] path` | `cargo nextest run --profile <p>`, report `target/nextest/<p>/<path>`, `junit` | high |
//! | test | pytest configured or depended on (`pyproject.toml`, `pytest.ini`, `tox.ini`, `setup.cfg`, `conftest.py`, `requirements*.txt`) | `<runner> pytest --junitxml=test-results/pytest.xml`, `junit`; the runner is the `.venv` setup makes (`.venv/bin/python -m`, `env: {PYTHONPATH: src}` for a `src/` layout), else the lockfile's (`uv run --no-sync`, `poetry run`, `pdm run`), else `python3 -m` | high |
//! | test | `go.mod` | `sh -c '… exec "$@" > test-results/go-test.json' sh go test -json -count=1 ./...`, `go-test-json` | high |
//! | browser | `@playwright/test`/`playwright` dependency and one `playwright.config.*` | `<pm exec> playwright test --reporter=json`, `inputMode: browser-automation`; projects and `webServer` become evidence (and a service note) | high (review without the dependency or the config; ambiguous with several configs) |
//! | static-analysis | exactly one safe script among `check`, `typecheck`, `type-check`, `lint`, not `check` | `<pm> run <script>` | high; otherwise alternatives |
//! | static-analysis | eslint / typescript+tsconfig without scripts; `cargo clippy`; ruff / mypy; `go vet` | the tool run directly | alternative |
//! | integration, performance, … | the script aliases of Change Loop's bootstrap (its Node.js runtime's `evidence-bootstrap`: `test:integration`, `bench`, `a11y`, …) | `<pm> run <script>` (`command`) | alternative |
//! | review, acceptance, semantic-acceptance | — | unresolved, `external_authority` | — |
//!
//! Every test proposal writes a structured report with a test count and
//! sets `report`, `reportFormat` (the specific format) and `minimum: 1`.
//! A proposal whose program (its first word, the runner in the report
//! wrapper, `cargo-nextest` behind `cargo nextest`) is not on the host's
//! `PATH` is shown with what to install and never proposed (`provider:
//! null`); the slot is unresolved (`command_unavailable`) unless another
//! proposal can start.
//! Reports go under `test-results/`, which proofgraph's copy sandbox leaves
//! out. A high-grade proposal is **high** only when it is the only
//! proposal of its (capability, repository) slot that is not an
//! alternative; otherwise it becomes ambiguous and the slot is unresolved
//! with a next action. Only high candidates are `recommended`.
//!
//! # Decisions
//!
//! - **Reports from runners that only print** (cargo's libtest JSON, `go
//!   test -json`): argv `["sh", "-c", "mkdir -p test-results && exec
//!   \"$@\" > test-results/<file>", "sh", <runner argv>…]`. The shell program is a
//!   fixed string bootstrap writes (it creates the directory and redirects
//!   standard output); the runner's argv stays explicit, so the fingerprint,
//!   `doctor`'s command-file check and a reader all see it. No argv token is
//!   a repository file, so no `inputs` are needed for the wrapper itself.
//!   When a project configures nextest JUnit, nextest is preferred: plain
//!   argv, no shell, no unstable libtest flag.
//! - **`RUSTC_BOOTSTRAP=1`** goes in the provider's `env` rather than the
//!   shell string: it is a literal, non-secret value that belongs in the
//!   fingerprint and is visible in the file.
//! - **`inputs` are never written, and never suggested as a list of what
//!   to read.** A test suite or a linter reads sources, tests, fixtures and
//!   configuration that no manifest lists; narrowed to the manifests, an
//!   edited source file would reuse an old receipt (DESIGN). No reader can
//!   name the source directories of a suite honestly (tests read files at
//!   run time), so a candidate's inputs are its whole repository, and its
//!   evidence says so. What `doctor` does suggest is the other direction,
//!   as a note (`docs_in_inputs`): `!` entries that leave out the
//!   repository's documentation (top-level `docs/`, `doc/`, README,
//!   CHANGELOG, CONTRIBUTING), whose edits otherwise rerun every suite; a
//!   test that reads one would then not see it, so the fix says to check.
//! - **Naming**: `<capability>` in a single-repository workspace;
//!   `<capability>-<repo>` with explicit `capability` and `repository`
//!   otherwise, plus `discoveryProvider: discovery-<repo>` and a receiver
//!   candidate `discovery-<repo>` (the same command: proofgraph runs it
//!   once) for test providers, because only a provider named `test` proves
//!   discovery implicitly.
//! - **Package binaries** run through the package manager without
//!   downloading (`npm exec --no --`, `pnpm exec`, `yarn <bin>`, `bun run
//!   <bin>`), never `npx`, which may fetch a missing package.

mod catalog;
mod detect;
mod doctor;
mod ecosystem;
mod edit;
mod git;
mod host;
mod init;
mod model;
mod pattern;
mod proposal;
mod scan;
mod setup;
pub mod shell;
mod specs;
mod wiring;

pub use catalog::{NotEdited, add_setup};
pub use detect::detect;
pub use doctor::{doctor, python_questions};
pub use host::{Host, PythonImport, PythonQuestion};
pub use init::{InitError, Writes, init, read};
pub use model::{
    Candidate, Confidence, Detection, Finding, InitOutput, LastRun, Repo, RepositorySetup, Setup,
    Severity, Skipped, Unresolved, UnresolvedReason,
};
pub use specs::{DraftClaim, Drafted, SpecProblem, draft_claims, render_evidence};

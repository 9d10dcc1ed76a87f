//! Everything bootstrap reads about one repository, read once.

use crate::ecosystem::cargo::CargoFacts;
use crate::ecosystem::go::GoFacts;
use crate::ecosystem::node::NodeFacts;
use crate::ecosystem::playwright::{self, PlaywrightConfig};
use crate::ecosystem::python::PythonFacts;
use crate::host::Host;
use crate::model::Repo;
use crate::proposal::Proposal;

/// The manifests of one repository.
#[derive(Debug, Clone)]
pub(crate) struct RepoFacts {
    /// `package.json`.
    pub(crate) node: Option<NodeFacts>,
    /// Playwright configs.
    pub(crate) playwright: Vec<PlaywrightConfig>,
    /// `Cargo.toml`.
    pub(crate) cargo: Option<CargoFacts>,
    /// Python manifests.
    pub(crate) python: Option<PythonFacts>,
    /// `go.mod`.
    pub(crate) go: Option<GoFacts>,
}

/// What the repository proposes for `test`.
#[derive(Debug, Default)]
pub(crate) struct TestScan {
    /// Proposals from every ecosystem.
    pub(crate) proposals: Vec<Proposal>,
    /// Tests exist but nothing writes a structured count: why.
    pub(crate) no_count: Vec<String>,
}

impl RepoFacts {
    /// Reads every manifest bootstrap knows in `repo.dir`. `shown` prefixes
    /// file names in warnings (`web:` in a multi-repository workspace).
    pub(crate) fn read(repo: &Repo, shown: &str, warnings: &mut Vec<String>) -> Self {
        let dir = &repo.dir;
        if !dir.is_dir() {
            warnings.push(format!(
                "repository `{}` has no directory at `{}`; nothing was read",
                repo.id,
                dir.display()
            ));
        }
        Self {
            node: NodeFacts::read(dir, shown, warnings),
            playwright: playwright::read(dir, shown, warnings),
            cargo: CargoFacts::read(dir, shown, warnings),
            python: PythonFacts::read(dir, shown, warnings),
            go: GoFacts::read(dir, shown, warnings),
        }
    }

    /// Every `test` proposal.
    pub(crate) fn test(&self, repo: &Repo, host: &Host) -> TestScan {
        let mut out = TestScan::default();
        if let Some(node) = &self.node {
            let node = node.test();
            out.proposals.extend(node.proposals);
            out.no_count.extend(node.no_count);
            out.no_count.extend(node.notes);
        }
        if let Some(cargo) = &self.cargo {
            out.proposals.extend(cargo.test(host, &repo.setup));
        }
        if let Some(python) = &self.python {
            out.proposals.extend(python.test(&repo.setup));
            if let Some(file) = &python.unittest_hint {
                out.no_count.push(format!(
                    "{file} looks like a Python test but nothing configures or depends on pytest, and unittest writes no structured report"
                ));
            }
        }
        if let Some(go) = &self.go {
            out.proposals.extend(go.test());
        }
        out
    }

    /// Every `browser` proposal.
    pub(crate) fn browser(&self) -> Vec<Proposal> {
        playwright::browser(self.node.as_ref(), &self.playwright)
    }

    /// Every `static-analysis` proposal.
    pub(crate) fn static_analysis(&self, repo: &Repo) -> Vec<Proposal> {
        let mut out = Vec::new();
        if let Some(node) = &self.node {
            out.extend(node.static_analysis());
        }
        if let Some(cargo) = &self.cargo {
            out.extend(cargo.static_analysis());
        }
        if let Some(python) = &self.python {
            out.extend(python.static_analysis(&repo.setup));
        }
        if let Some(go) = &self.go {
            out.extend(go.static_analysis());
        }
        out
    }

    /// Script-alias proposals for another capability.
    pub(crate) fn aliases(&self, capability: &str) -> Vec<Proposal> {
        self.node
            .as_ref()
            .map(|n| n.aliases(capability))
            .unwrap_or_default()
    }
}

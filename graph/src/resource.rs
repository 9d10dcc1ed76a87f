//! Resource locks: which nodes may run at the same time.
//!
//! Every running provider holds a set of named resources. The rules:
//! - `workspace-read` and `workspace-read:<repo>` are shared: any number of
//!   readers run together.
//! - `workspace-write:<repo>` is exclusive against every reader and writer of
//!   that repository (and against unqualified `workspace-read`/`-write`,
//!   which stand for every repository).
//! - Any other name is exclusive. An unqualified name (`browser`) covers all
//!   of its parameterised forms (`browser:web`); two different parameters
//!   (`port:4173`, `port:4174`) do not conflict.
//!
//! Defaults are repository-qualified, so suites of two repositories never
//! queue on each other: command, test-discovery and contract-digest read the
//! workspace; playwright also takes the repository's dev server and browser;
//! a provider proving `mutation` writes its repository.

use crate::adapter::Adapter;
use crate::id::{CapabilityName, RepoId, ResourceName};

const READ: &str = "workspace-read";
const WRITE: &str = "workspace-write";

fn qualified(name: &str, repo: Option<&RepoId>) -> ResourceName {
    let text = match repo {
        Some(repo) => format!("{name}:{repo}"),
        None => name.to_owned(),
    };
    ResourceName::parse(&text).expect("a repository id is a valid resource parameter")
}

/// The resources a provider takes when it does not declare `resources`.
pub fn defaults(
    adapter: Adapter,
    capability: &CapabilityName,
    repo: Option<&RepoId>,
) -> Vec<ResourceName> {
    if capability.as_str() == "mutation" {
        return vec![qualified(WRITE, repo)];
    }
    match adapter {
        Adapter::Playwright => vec![
            qualified(READ, repo),
            qualified("dev-server", repo),
            qualified("browser", repo),
        ],
        Adapter::Command | Adapter::TestDiscovery | Adapter::ContractDigest => {
            vec![qualified(READ, repo)]
        }
        Adapter::External => Vec::new(),
    }
}

fn split(resource: &ResourceName) -> (&str, Option<&str>) {
    match resource.as_str().split_once(':') {
        Some((name, param)) => (name, Some(param)),
        None => (resource.as_str(), None),
    }
}

/// Whether two single resources may not be held at the same time.
pub fn conflict(a: &ResourceName, b: &ResourceName) -> bool {
    let (an, ap) = split(a);
    let (bn, bp) = split(b);
    let same_scope = ap.is_none() || bp.is_none() || ap == bp;
    match (an, bn) {
        (READ, READ) => false,
        (READ | WRITE, READ | WRITE) => same_scope,
        _ => an == bn && same_scope,
    }
}

/// Whether two resource sets may not be held at the same time.
pub fn sets_conflict(a: &[ResourceName], b: &[ResourceName]) -> bool {
    a.iter().any(|x| b.iter().any(|y| conflict(x, y)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> ResourceName {
        ResourceName::parse(s).expect("valid")
    }

    #[test]
    fn readers_share_and_writers_exclude_their_repository() {
        assert!(!conflict(&r("workspace-read"), &r("workspace-read:web")));
        assert!(!conflict(
            &r("workspace-read:api"),
            &r("workspace-read:web")
        ));
        assert!(conflict(
            &r("workspace-write:web"),
            &r("workspace-read:web")
        ));
        assert!(conflict(&r("workspace-write:web"), &r("workspace-read")));
        assert!(conflict(
            &r("workspace-write:web"),
            &r("workspace-write:web")
        ));
        assert!(!conflict(
            &r("workspace-write:web"),
            &r("workspace-read:api")
        ));
        assert!(conflict(&r("workspace-write"), &r("workspace-read:api")));
    }

    #[test]
    fn named_resources_are_exclusive_per_parameter() {
        assert!(conflict(&r("browser"), &r("browser")));
        assert!(conflict(&r("browser"), &r("browser:web")));
        assert!(!conflict(&r("port:4173"), &r("port:4174")));
        assert!(conflict(&r("database:test"), &r("database:test")));
        assert!(!conflict(&r("database:test"), &r("browser:test")));
        assert!(conflict(
            &r("foundation-test-suite"),
            &r("foundation-test-suite")
        ));
    }

    #[test]
    fn defaults_are_repository_qualified() {
        let web = RepoId::parse("web").expect("valid");
        let browser = CapabilityName::parse("browser").expect("valid");
        let names = |v: Vec<ResourceName>| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(
            names(defaults(Adapter::Playwright, &browser, Some(&web))),
            ["workspace-read:web", "dev-server:web", "browser:web"]
        );
        let mutation = CapabilityName::parse("mutation").expect("valid");
        assert_eq!(
            names(defaults(Adapter::Command, &mutation, Some(&web))),
            ["workspace-write:web"]
        );
        assert_eq!(
            names(defaults(Adapter::Command, &CapabilityName::test(), None)),
            ["workspace-read"]
        );
    }
}

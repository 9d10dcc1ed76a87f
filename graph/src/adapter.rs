//! The closed set of adapters a provider can use.

use std::fmt;

/// How a provider turns its wiring into a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Adapter {
    /// One deterministic command; passes iff it exits 0.
    Command,
    /// One test run that yields a test receipt and a discovery receipt.
    TestDiscovery,
    /// A Playwright run whose tests carry claim annotations.
    Playwright,
    /// Runs nothing; compares one artifact's bytes across repositories.
    ContractDigest,
    /// Runs nothing; accepts a signed envelope from an external system.
    External,
}

impl Adapter {
    /// Every adapter, in documentation order.
    pub const ALL: [Adapter; 5] = [
        Adapter::Command,
        Adapter::TestDiscovery,
        Adapter::Playwright,
        Adapter::ContractDigest,
        Adapter::External,
    ];

    /// The name used in `execution.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Adapter::Command => "command",
            Adapter::TestDiscovery => "test-discovery",
            Adapter::Playwright => "playwright",
            Adapter::ContractDigest => "contract-digest",
            Adapter::External => "external",
        }
    }

    /// Whether the adapter runs a command (and so requires `command`).
    pub fn runs_command(self) -> bool {
        matches!(
            self,
            Adapter::Command | Adapter::TestDiscovery | Adapter::Playwright
        )
    }
}

impl fmt::Display for Adapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

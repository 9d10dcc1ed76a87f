//! Typed identities, validated once at the boundary.
//!
//! Every name that crosses from a configuration file into the core becomes one
//! of these newtypes. A `ProviderId` can never be passed where a `ClaimId` is
//! expected, and a value that exists is known to be well formed, so nothing
//! downstream re-validates or re-escapes it.

use std::borrow::Borrow;
use std::fmt;

// Identities are `Arc<str>`: they are cloned into many places (graph nodes,
// claim scopes, maps) and a clone must not allocate.

/// The kind of identity, used in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A claim in `evidence.yaml`.
    Claim,
    /// A provider in `execution.yaml`.
    Provider,
    /// A service in `execution.yaml`.
    Service,
    /// A repository in the workspace catalog.
    Repo,
    /// A capability a claim requires or a provider proves.
    Capability,
    /// A change directory under `openspec/changes/`.
    Change,
    /// A named resource lock.
    Resource,
    /// An environment variable name.
    EnvName,
}

impl IdKind {
    /// The noun used for this kind in messages.
    pub fn noun(self) -> &'static str {
        match self {
            IdKind::Claim => "claim id",
            IdKind::Provider => "provider id",
            IdKind::Service => "service id",
            IdKind::Repo => "repository id",
            IdKind::Capability => "capability name",
            IdKind::Change => "change name",
            IdKind::Resource => "resource name",
            IdKind::EnvName => "environment variable name",
        }
    }
}

/// An identity that does not follow its grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("accept `{value}` as a {}: {problem}", kind.noun())]
pub struct IdError {
    /// What the value was meant to be.
    pub kind: IdKind,
    /// The rejected value.
    pub value: String,
    /// Which rule it breaks, as a lowercase fragment.
    pub problem: &'static str,
}

/// `[a-z0-9][a-z0-9._-]*`: provider, service and repository ids (the grammar
/// Change Loop's Node.js runtime enforces for provider instance ids).
fn lower_name(value: &str) -> Result<(), &'static str> {
    let mut chars = value.chars();
    match chars.next() {
        None => return Err("it is empty"),
        Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit() => {}
        Some(_) => return Err("it must start with a lowercase letter or a digit"),
    }
    if chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')) {
        Ok(())
    } else {
        Err("only lowercase letters, digits, `.`, `_` and `-` are allowed")
    }
}

/// `[A-Za-z0-9][A-Za-z0-9._-]*`: claim ids.
fn claim_name(value: &str) -> Result<(), &'static str> {
    let mut chars = value.chars();
    match chars.next() {
        None => return Err("it is empty"),
        Some(c) if c.is_ascii_alphanumeric() => {}
        Some(_) => return Err("it must start with a letter or a digit"),
    }
    if chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
        Ok(())
    } else {
        Err("only letters, digits, `.`, `_` and `-` are allowed")
    }
}

/// `[a-z0-9]+(-[a-z0-9]+)*`: capability names.
fn kebab(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        return Err("it is empty");
    }
    let ok = value.split('-').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    if ok {
        Ok(())
    } else {
        Err("it must be kebab-case: lowercase letters and digits separated by single hyphens")
    }
}

/// A directory name under `openspec/changes/`: one path segment.
fn change_name(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        return Err("it is empty");
    }
    if value == "." || value == ".." {
        return Err("it must not be `.` or `..`");
    }
    if value.contains(['/', '\\', '\0']) {
        return Err("it must be a single directory name, without path separators");
    }
    if value.starts_with('.') {
        return Err("it must not start with `.`");
    }
    Ok(())
}

/// `name` or `name:parameter`, where `name` follows [`lower_name`] and the
/// parameter is non-empty and free of whitespace (`port:4173`, `database:test`).
fn resource_name(value: &str) -> Result<(), &'static str> {
    let (name, param) = match value.split_once(':') {
        Some((name, param)) => (name, Some(param)),
        None => (value, None),
    };
    lower_name(name).map_err(|_| {
        "the name before `:` must start with a lowercase letter or digit and use only lowercase letters, digits, `.`, `_` and `-`"
    })?;
    match param {
        Some("") => Err("the parameter after `:` is empty"),
        Some(p) if p.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            Err("the parameter after `:` must not contain whitespace")
        }
        _ => Ok(()),
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`: environment variable names.
fn env_name(value: &str) -> Result<(), &'static str> {
    let mut chars = value.chars();
    match chars.next() {
        None => return Err("it is empty"),
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        Some(_) => return Err("it must start with a letter or `_`"),
    }
    if chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(())
    } else {
        Err("only letters, digits and `_` are allowed")
    }
}

macro_rules! identity {
    ($(#[$doc:meta])* $name:ident, $kind:expr, $check:path) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(std::sync::Arc<str>);

        impl $name {
            /// Validates `value` against this identity's grammar.
            pub fn parse(value: &str) -> Result<Self, IdError> {
                match $check(value) {
                    Ok(()) => Ok(Self(value.into())),
                    Err(problem) => Err(IdError { kind: $kind, value: value.to_owned(), problem }),
                }
            }

            /// The identity as written.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = IdError;
            fn from_str(value: &str) -> Result<Self, IdError> {
                Self::parse(value)
            }
        }

        // Written as the string; read back through the same grammar, so a record
        // (a receipt) never yields an identity that a configuration file could not.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Self::parse(&value).map_err(serde::de::Error::custom)
            }
        }
    };
}

identity!(
    /// A claim id from `evidence.yaml` (`profile-update`).
    ClaimId,
    IdKind::Claim,
    claim_name
);
identity!(
    /// A provider instance name from `execution.yaml` (`test`, `compiled-test`).
    ProviderId,
    IdKind::Provider,
    lower_name
);
identity!(
    /// A service name from `execution.yaml` (`web`).
    ServiceId,
    IdKind::Service,
    lower_name
);
identity!(
    /// A repository id from the workspace catalog (`web`, `profile-api`, `root`).
    RepoId,
    IdKind::Repo,
    lower_name
);
identity!(
    /// A capability name (`test`, `browser`, `cross-repo-contract`).
    CapabilityName,
    IdKind::Capability,
    kebab
);
identity!(
    /// The directory name of a change under `openspec/changes/`.
    ChangeName,
    IdKind::Change,
    change_name
);
identity!(
    /// A resource lock name, optionally parameterised (`browser`, `port:4173`).
    ResourceName,
    IdKind::Resource,
    resource_name
);
identity!(
    /// An environment variable name (`NODE_ENV`).
    EnvName,
    IdKind::EnvName,
    env_name
);

impl RepoId {
    /// The id of the single repository of a workspace without a catalog.
    pub fn root() -> Self {
        Self("root".into())
    }
}

/// The capabilities Change Loop's Node.js runtime knows (its closed catalog of 21).
/// Another name is accepted with a warning so that a project can add its own.
pub const KNOWN_CAPABILITIES: [&str; 21] = [
    "test",
    "discovery",
    "browser",
    "mutation",
    "changed-quality",
    "state-identity",
    "integration",
    "compatibility",
    "performance",
    "security-static",
    "cross-repo-contract",
    "review",
    "acceptance",
    "semantic-acceptance",
    "static-analysis",
    "data-migration",
    "accessibility",
    "resilience",
    "observability",
    "deployment",
    "dependency-supply-chain",
];

impl CapabilityName {
    /// Whether this is one of the [`KNOWN_CAPABILITIES`].
    pub fn is_known(&self) -> bool {
        KNOWN_CAPABILITIES.contains(&self.as_str())
    }

    /// The `test` capability.
    pub fn test() -> Self {
        Self("test".into())
    }

    /// The `discovery` capability.
    pub fn discovery() -> Self {
        Self("discovery".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_follow_the_runtime_grammar() {
        assert!(ProviderId::parse("test").is_ok());
        assert!(ProviderId::parse("compiled-test").is_ok());
        assert!(ProviderId::parse("a.b_c-1").is_ok());
        let err = ProviderId::parse("Test").expect_err("uppercase start");
        assert_eq!(err.kind, IdKind::Provider);
        assert!(ProviderId::parse("").is_err());
        assert!(ProviderId::parse("-x").is_err());
        assert!(ProviderId::parse("a b").is_err());
    }

    #[test]
    fn resources_may_carry_a_parameter() {
        assert!(ResourceName::parse("workspace-read").is_ok());
        assert!(ResourceName::parse("port:4173").is_ok());
        assert!(ResourceName::parse("dev-server:web").is_ok());
        assert!(ResourceName::parse("port:").is_err());
        assert!(ResourceName::parse(":x").is_err());
        assert!(ResourceName::parse("port:a b").is_err());
    }

    #[test]
    fn change_names_are_one_segment() {
        assert!(ChangeName::parse("2026-08-09-keep-the-loop").is_ok());
        assert!(ChangeName::parse("../x").is_err());
        assert!(ChangeName::parse("..").is_err());
        assert!(ChangeName::parse(".hidden").is_err());
    }

    #[test]
    fn capabilities_are_kebab_case() {
        assert!(
            CapabilityName::parse("cross-repo-contract")
                .expect("kebab")
                .is_known()
        );
        assert!(!CapabilityName::parse("my-own").expect("kebab").is_known());
        assert!(CapabilityName::parse("a--b").is_err());
        assert!(CapabilityName::parse("Browser").is_err());
    }

    #[test]
    fn error_reads_after_failed_to() {
        let err = ClaimId::parse("a b").expect_err("space");
        assert_eq!(
            err.to_string(),
            "accept `a b` as a claim id: only letters, digits, `.`, `_` and `-` are allowed"
        );
    }
}

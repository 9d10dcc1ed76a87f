//! A change's secrets: the values its `envFrom` names have in the caller's environment.

use crate::base::diagnostic::{Code, Diagnostic};
use crate::base::env::Env;
use crate::base::redact::{MIN_SECRET_BYTES, Secrets};
use crate::load::workspace::Change;

/// The secrets of a change: the value the caller's environment gives each name under
/// an `envFrom` of any provider or service. Also a `secret_too_short` warning for
/// each name whose value is too short to be redacted.
pub fn of_change(change: &Change, env: &Env) -> (Secrets, Vec<Diagnostic>) {
    let mut names = Vec::new();
    for wired in change.providers.values() {
        for name in wired.provider.env_from.iter().flatten() {
            names.push((wired.file.as_str(), name));
        }
    }
    for service in change.services.values() {
        for name in service.env_from.iter().flatten() {
            names.push((change.execution_file.as_str(), name));
        }
    }
    let mut values = Vec::new();
    let mut warned = std::collections::BTreeSet::new();
    let mut warnings = Vec::new();
    for (file, name) in names {
        let Some(value) = env.var(name.value.as_str()) else {
            continue;
        };
        let bytes = value.as_encoded_bytes();
        if !bytes.is_empty() && bytes.len() < MIN_SECRET_BYTES {
            if warned.insert(name.value.as_str().to_owned()) {
                warnings.push(
                    Diagnostic::warning(
                        Code::SecretTooShort,
                        format!(
                            "`envFrom` names `{}`, whose value here is {} byte{}: values shorter than {MIN_SECRET_BYTES} bytes are passed to the job but not redacted (they would mangle every log and report), so this one may appear in output and in the store",
                            name.value,
                            bytes.len(),
                            if bytes.len() == 1 { "" } else { "s" }
                        ),
                    )
                    .at(file, name.pos)
                    .fix(format!(
                        "If `{}` holds a secret, make it at least {MIN_SECRET_BYTES} bytes long; a value that is no secret belongs in `env`.",
                        name.value
                    )),
                );
            }
            continue;
        }
        values.push(bytes.to_vec());
    }
    (Secrets::new(values), warnings)
}

//! What changed since a receipt: its fingerprint's components against today's (a map's
//! entries one by one), its input listing against today's files, and which of a provider's
//! receipts is closest to today's tree. `explain` shows these; `rerun` refuses a receipt
//! whose wiring drifted.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::observe::listing::Listing;
use crate::proof::receipt::Component;

/// One component that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The component (`argv`, `env`, `inputs`, …), or `env.NODE_ENV` for one
    /// entry of a map.
    pub component: String,
    /// Its value in the receipt (null when absent).
    pub before: serde_json::Value,
    /// Its value now.
    pub after: serde_json::Value,
}

/// Input files that differ.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InputChanges {
    /// Files read now and not then.
    pub added: Vec<String>,
    /// Files read then and not now.
    pub removed: Vec<String>,
    /// Files whose content changed.
    pub changed: Vec<String>,
}

/// The differences between two component lists, maps entry by entry (but `inputs`, whose
/// files [`InputChanges::between`] names).
pub fn diff(before: &[Component], after: &[Component]) -> Vec<Change> {
    let mut out = Vec::new();
    each_difference(before, after, |name, key, was, now| {
        out.push(Change {
            component: key.map_or_else(|| name.to_owned(), |k| format!("{name}.{k}")),
            before: was.clone(),
            after: now.clone(),
        });
    });
    out
}

/// The names of the components whose values differ from `before` to `after` (a map
/// compared key by key, but `inputs` whole), each once, in `after`'s order; a component
/// `after` no longer has is not named.
pub fn changed_components(before: &[Component], after: &[Component]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    each_difference(before, after, |name, _, _, _| {
        if names.last().is_none_or(|last| last != name) {
            names.push(name.to_owned());
        }
    });
    names
}

/// Calls `found` with each difference from `before` to `after`, in `after`'s order: the
/// component's name, the key of the map entry that differs (`None`: the component whole;
/// `inputs` is always whole), its value then (null when absent) and now. A map's keys come
/// sorted; a key whose value is null is the key absent.
fn each_difference(
    before: &[Component],
    after: &[Component],
    mut found: impl FnMut(&str, Option<&str>, &serde_json::Value, &serde_json::Value),
) {
    const ABSENT: &serde_json::Value = &serde_json::Value::Null;
    let old: BTreeMap<&str, &serde_json::Value> =
        before.iter().map(|c| (c.name.as_str(), &c.value)).collect();
    for c in after {
        let was = old.get(c.name.as_str()).copied().unwrap_or(ABSENT);
        if was == &c.value {
            continue;
        }
        match (was, &c.value) {
            (serde_json::Value::Object(a), serde_json::Value::Object(b)) if c.name != "inputs" => {
                let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let (x, y) = (a.get(k).unwrap_or(ABSENT), b.get(k).unwrap_or(ABSENT));
                    if x != y {
                        found(&c.name, Some(k), x, y);
                    }
                }
            }
            _ => found(&c.name, None, was, &c.value),
        }
    }
}

/// The components a re-execution would not reproduce: those that differ (maps entry by
/// entry) or that the receipt holds and today's wiring lacks, sorted — all but
/// `depends_on`, since dependencies are not re-executed.
pub fn unwired(recorded: &[Component], now: &[Component]) -> Vec<String> {
    let gone = recorded
        .iter()
        .filter(|c| !c.value.is_null() && !now.iter().any(|n| n.name == c.name))
        .map(|c| c.name.clone());
    diff(recorded, now)
        .into_iter()
        .map(|c| c.component)
        .chain(gone)
        .filter(|name| name != "depends_on" && !name.starts_with("depends_on."))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl InputChanges {
    /// The files added, removed and changed from `then` to `now`, each sorted.
    pub fn between(now: &Listing, then: &Listing) -> Self {
        let mut changes = Self::default();
        for (path, digest) in now.iter() {
            match then.get(path) {
                None => changes.added.push(path.to_owned()),
                Some(d) if d != digest => changes.changed.push(path.to_owned()),
                Some(_) => {}
            }
        }
        changes.removed = then
            .iter()
            .filter(|(p, _)| !now.contains(p))
            .map(|(p, _)| p.to_owned())
            .collect();
        changes
    }
}

/// How far a receipt is from today's tree: 0 when it is for today's fingerprint, else 1
/// plus the files added, changed or removed between its listing and today's.
pub fn distance(current: bool, now: &Listing, then: &Listing) -> usize {
    if current {
        return 0;
    }
    let differ = now.iter().filter(|(p, d)| then.get(p) != Some(*d)).count();
    1 + differ + then.iter().filter(|(p, _)| !now.contains(p)).count()
}

/// A receipt that may be closer to today's tree than the latest.
#[derive(Debug, Clone)]
pub struct Candidate<T> {
    /// Its [`distance`].
    pub distance: usize,
    /// When it finished (RFC 3339, so ordered as text).
    pub finished_at: String,
    /// The receipt.
    pub receipt: T,
}

/// The candidate closest to today's tree (the newest of equals), when it is closer than
/// the latest receipt, `latest` away: after a revert, the older receipt that matches again.
pub fn closest<T>(latest: usize, candidates: impl IntoIterator<Item = Candidate<T>>) -> Option<T> {
    candidates
        .into_iter()
        .min_by(|a, b| {
            (a.distance, std::cmp::Reverse(&a.finished_at))
                .cmp(&(b.distance, std::cmp::Reverse(&b.finished_at)))
        })
        .filter(|best| best.distance < latest)
        .map(|best| best.receipt)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn components(list: &[(&str, serde_json::Value)]) -> Vec<Component> {
        list.iter()
            .map(|(name, value)| Component {
                tag: 0,
                name: (*name).to_owned(),
                value: value.clone(),
            })
            .collect()
    }

    #[test]
    fn changed_components_are_named_once_in_their_order() {
        let before = components(&[
            ("command", json!(["a"])),
            ("env", json!({"A": "1", "B": "2"})),
            ("inputs", json!({"x": "1"})),
            ("gone", json!(1)),
            ("same", json!({"k": null})),
        ]);
        let after = components(&[
            ("command", json!(["a"])),
            ("env", json!({"A": "1", "B": "3", "C": "4"})),
            ("inputs", json!({"x": "2"})),
            ("new", json!("v")),
            // A key whose value is null is the key absent, as `explain` shows it.
            ("same", json!({})),
        ]);
        assert_eq!(
            changed_components(&before, &after),
            ["env", "inputs", "new"]
        );
        assert!(changed_components(&after, &after).is_empty());
    }

    #[test]
    fn maps_differ_entry_by_entry_and_inputs_as_one() {
        let before = components(&[
            ("argv", json!(["sh", "a"])),
            ("env", json!({"NODE_ENV": "test", "KEEP": "1"})),
            ("inputs", json!({"a": "1"})),
            ("same", json!("x")),
        ]);
        let after = components(&[
            ("argv", json!(["sh", "b"])),
            ("env", json!({"NODE_ENV": "ci", "KEEP": "1", "NEW": "y"})),
            ("inputs", json!({"a": "2"})),
            ("same", json!("x")),
            ("network", json!("private")),
        ]);
        let changes = diff(&before, &after);
        let named: Vec<(&str, &serde_json::Value, &serde_json::Value)> = changes
            .iter()
            .map(|c| (c.component.as_str(), &c.before, &c.after))
            .collect();
        assert_eq!(
            named,
            [
                ("argv", &json!(["sh", "a"]), &json!(["sh", "b"])),
                ("env.NEW", &json!(null), &json!("y")),
                ("env.NODE_ENV", &json!("test"), &json!("ci")),
                ("inputs", &json!({"a": "1"}), &json!({"a": "2"})),
                ("network", &json!(null), &json!("private")),
            ]
        );
    }

    #[test]
    fn a_rerun_ignores_only_dependencies_and_names_what_is_gone() {
        let recorded = components(&[
            ("argv", json!(["sh"])),
            ("depends_on", json!({"build": "1"})),
            ("gone", json!("x")),
            ("absent", json!(null)),
        ]);
        let now = components(&[
            ("argv", json!(["sh"])),
            ("depends_on", json!({"build": "2"})),
        ]);
        assert_eq!(unwired(&recorded, &now), ["gone"]);
        let now = components(&[
            ("argv", json!(["bash"])),
            ("depends_on", json!({"build": "1"})),
            ("gone", json!("x")),
            ("env", json!({"A": "1"})),
        ]);
        assert_eq!(
            unwired(&recorded, &now),
            ["argv", "env"],
            "a map that was absent is one change"
        );
        assert!(unwired(&recorded, &recorded).is_empty());
    }

    #[test]
    fn input_changes_and_distance_count_the_same_files() {
        let then = Listing::filled(&[("app:a", 1), ("app:b", 2), ("app:gone", 3)]);
        let now = Listing::filled(&[("app:a", 1), ("app:b", 9), ("app:new", 4)]);
        assert_eq!(
            InputChanges::between(&now, &then),
            InputChanges {
                added: vec!["app:new".to_owned()],
                removed: vec!["app:gone".to_owned()],
                changed: vec!["app:b".to_owned()],
            }
        );
        assert_eq!(distance(false, &now, &then), 4);
        assert_eq!(
            distance(false, &now, &now),
            1,
            "another fingerprint, same files"
        );
        assert_eq!(distance(true, &now, &then), 0, "today's fingerprint");
        assert_eq!(InputChanges::between(&now, &now), InputChanges::default());
    }

    #[test]
    fn the_closest_receipt_is_chosen_only_when_closer_than_the_latest() {
        let candidate = |distance: usize, finished_at: &str, receipt: &'static str| Candidate {
            distance,
            finished_at: finished_at.to_owned(),
            receipt,
        };
        let all = || {
            vec![
                candidate(3, "2026-01-03", "latest"),
                candidate(1, "2026-01-01", "old"),
                candidate(1, "2026-01-02", "newer"),
            ]
        };
        assert_eq!(closest(3, all()), Some("newer"), "the newest of equals");
        assert_eq!(closest(1, all()), None, "not closer than the latest");
        assert_eq!(closest::<&str>(5, Vec::new()), None);
    }
}

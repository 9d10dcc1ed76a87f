use super::*;
use crate::observe::changes::PathChange;

fn id(s: &str) -> ProviderId {
    ProviderId::parse(s).expect("valid provider id")
}

fn changed(repository: &str, path: &str, change: PathChange, from: Option<&str>) -> Changed {
    Changed {
        repository: repository.to_owned(),
        path: path.to_owned(),
        change,
        from: from.map(str::to_owned),
    }
}

/// Inputs `src/**` of repository `web`.
fn src_of_web(repo: &RepoId, path: &str) -> bool {
    repo.as_str() == "web" && path.starts_with("src/")
}

#[test]
fn a_rename_into_or_out_of_the_inputs_reaches_them() {
    let into = changed("web", "src/a.js", PathChange::Renamed, Some("docs/a.js"));
    let out_of = changed("web", "docs/b.js", PathChange::Renamed, Some("src/b.js"));
    let beside = changed("web", "docs/c.js", PathChange::Renamed, Some("notes/c.js"));
    let other_repo = changed("api", "src/d.js", PathChange::Modified, None);
    let all = [into, out_of, beside, other_repo];
    assert_eq!(
        inputs_hit(&all, src_of_web),
        ["web:src/a.js", "web:docs/b.js"],
        "a renamed file is named by its new path"
    );
    let added = changed("web", "src/new.js", PathChange::Added, None);
    let deleted = changed("web", "src/old.js", PathChange::Deleted, None);
    assert_eq!(
        inputs_hit(&[added, deleted], src_of_web),
        ["web:src/new.js", "web:src/old.js"]
    );
    let unnamed = changed("Not A Repo", "src/a.js", PathChange::Added, None);
    assert!(inputs_hit(&[unnamed], |_, _| true).is_empty());
}

#[test]
fn a_program_renamed_away_changed() {
    let repo = RepoId::parse("web").expect("valid");
    let moved = changed("web", "bin/run2.sh", PathChange::Renamed, Some("run.sh"));
    assert!(program_changed(
        std::slice::from_ref(&moved),
        &repo,
        "run.sh"
    ));
    assert!(program_changed(
        std::slice::from_ref(&moved),
        &repo,
        "bin/run2.sh"
    ));
    assert!(!program_changed(&[moved], &repo, "other.sh"));
    let elsewhere = changed("api", "run.sh", PathChange::Modified, None);
    assert!(!program_changed(&[elsewhere], &repo, "run.sh"));
}

/// In the graph's order, an affected provider makes each dependent affected, and those
/// theirs; an unaffected dependency adds nothing.
#[test]
fn dependents_of_an_affected_provider_are_affected_in_order() {
    let mut why: BTreeMap<ProviderId, Reasons> = BTreeMap::new();
    why.insert(
        id("lint"),
        vec![(Origin::Stored, "wiring changed: command".to_owned())],
    );
    why.insert(id("docs"), Vec::new());
    why.insert(id("test"), Vec::new());
    why.insert(id("e2e"), Vec::new());
    propagate(&id("lint"), [], &mut why);
    propagate(&id("docs"), [], &mut why);
    propagate(&id("test"), [id("lint"), id("docs"), id("lint")], &mut why);
    propagate(&id("e2e"), [id("test"), id("docs")], &mut why);
    assert_eq!(
        why[&id("test")],
        [(Origin::Derived, "depends on affected lint".to_owned())]
    );
    assert_eq!(
        why[&id("e2e")],
        [(Origin::Derived, "depends on affected test".to_owned())]
    );
    assert!(why[&id("docs")].is_empty());
    assert_eq!(
        conclude(&why[&id("e2e")]),
        (
            true,
            Some("depends on affected test".to_owned()),
            Some(Origin::Derived)
        )
    );
}

#[test]
fn a_claim_is_stored_when_an_affected_provider_is() {
    let derived = claim_reasons(None, None, &[("a", Some(Origin::Derived)), ("b", None)]);
    assert_eq!(
        derived,
        [(Origin::Derived, "provider a affected".to_owned())]
    );
    let stored = claim_reasons(
        None,
        None,
        &[("a", Some(Origin::Derived)), ("b", Some(Origin::Stored))],
    );
    assert_eq!(
        stored,
        [(Origin::Stored, "provider a, b affected".to_owned())]
    );
    assert!(claim_reasons(None, None, &[("a", None)]).is_empty());
}

#[test]
fn reasons_conclude_in_one_sentence() {
    assert_eq!(conclude(&[]), (false, None, None));
    let both = [
        (Origin::Derived, "inputs changed: web:a".to_owned()),
        (Origin::Stored, "wiring changed: command".to_owned()),
    ];
    assert_eq!(
        conclude(&both),
        (
            true,
            Some("inputs changed: web:a; wiring changed: command".to_owned()),
            Some(Origin::Stored)
        )
    );
    let names: Vec<String> = ["a", "b", "c", "d", "e"].map(str::to_owned).to_vec();
    assert_eq!(few(&names[..0]), "");
    assert_eq!(few(&names[..3]), "a, b, c");
    assert_eq!(few(&names), "a, b, c and 2 more");
}

#[test]
fn catalog_keys_differ_when_a_value_or_a_key_does() {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let was = map(&[
        ("web.path", "web"),
        ("web.setup", "npm ci"),
        ("api.path", "api"),
    ]);
    let now = map(&[
        ("web.path", "web"),
        ("web.setup", "npm i"),
        ("web.hostPaths", "/opt"),
    ]);
    assert_eq!(
        changed_keys(&was, &now),
        ["api.path", "web.hostPaths", "web.setup"]
    );
    assert!(changed_keys(&was, &was).is_empty());
}

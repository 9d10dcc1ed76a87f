//! The profile API's logic, kept free of I/O so that it can be unit-tested.

/// A profile as the contract (`contracts/profile.v1.json`) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub id: u32,
    pub name: &'static str,
}

const PROFILES: [Profile; 2] = [
    Profile { id: 1, name: "Ada Lovelace" },
    Profile { id: 2, name: "Grace Hopper" },
];

/// Finds a profile by id.
pub fn find(id: u32) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.id == id)
}

/// Renders a profile as the contract's JSON object.
pub fn to_json(profile: &Profile) -> String {
    let name = profile.name.replace('\\', "\\\\").replace('"', "\\\"");
    format!("{{\"id\": {}, \"name\": \"{}\"}}", profile.id, name)
}

/// Escapes text for HTML content and attribute values.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// The profile page a browser shows: the name as the heading, and a status
/// line that the page's script fills from `GET /profile/<id>` (so a broken API
/// call shows up in the browser's console, where the browser tests look).
pub fn profile_page(profile: &Profile) -> String {
    let name = html_escape(profile.name);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>Profile of {name}</title>
</head>
<body>
<main>
<h1>{name}</h1>
<p role="status" id="loaded">Loading…</p>
<p><a href="/profile/{id}">This profile as JSON</a></p>
</main>
<script>
fetch('/profile/{id}')
  .then((answer) => {{
    if (!answer.ok) throw new Error('GET /profile/{id} answered ' + answer.status);
    return answer.json();
  }})
  .then((profile) => {{
    document.getElementById('loaded').textContent = 'Loaded #' + profile.id + ' ' + profile.name;
  }})
  .catch((error) => {{
    document.getElementById('loaded').textContent = 'Could not load the profile';
    console.error(error.message);
  }});
</script>
</body>
</html>
"#,
        id = profile.id
    )
}

/// The page for an unknown profile.
pub fn not_found_page() -> String {
    r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>Profile not found</title>
</head>
<body>
<main>
<h1>Profile not found</h1>
</main>
</body>
</html>
"#
    .to_owned()
}

/// An HTTP answer: status, extra headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Routes a request path to an answer. `run_id` is the value of
/// `PROOFGRAPH_RUN_ID` the server was started with (empty when unset), so a
/// readiness probe can tell this server from any other on the port.
pub fn route(path: &str, run_id: &str) -> Answer {
    let identity = vec![("X-App".to_owned(), "profile-api".to_owned())];
    if path == "/health" {
        return Answer { status: 200, headers: identity, body: format!("profile-api ok run={run_id}\n") };
    }
    if let Some(id) = path.strip_prefix("/profile-page/") {
        let mut headers = identity;
        headers.push(("Content-Type".to_owned(), "text/html; charset=utf-8".to_owned()));
        return match id.parse().ok().and_then(find) {
            Some(profile) => Answer { status: 200, headers, body: profile_page(profile) },
            None => Answer { status: 404, headers, body: not_found_page() },
        };
    }
    if let Some(id) = path.strip_prefix("/profile/") {
        return match id.parse().ok().and_then(find) {
            Some(profile) => Answer { status: 200, headers: identity, body: to_json(profile) },
            None => Answer { status: 404, headers: identity, body: "{\"error\": \"not found\"}".to_owned() },
        };
    }
    Answer { status: 404, headers: identity, body: "{\"error\": \"no such route\"}".to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_known_profile() {
        assert_eq!(find(1).map(|p| p.name), Some("Ada Lovelace"));
    }

    #[test]
    fn unknown_profiles_are_absent() {
        assert_eq!(find(99), None);
    }

    #[test]
    fn json_follows_the_contract() {
        let json = to_json(&Profile { id: 7, name: "A \"quoted\" name" });
        assert_eq!(json, r#"{"id": 7, "name": "A \"quoted\" name"}"#);
    }

    #[test]
    fn health_names_the_service_and_its_run() {
        let answer = route("/health", "run-42");
        assert_eq!(answer.status, 200);
        assert!(answer.headers.contains(&("X-App".to_owned(), "profile-api".to_owned())));
        assert_eq!(answer.body, "profile-api ok run=run-42\n");
    }

    #[test]
    fn profile_page_route_serves_html() {
        let answer = route("/profile-page/1", "");
        assert_eq!(answer.status, 200);
        assert!(answer.headers.contains(&("Content-Type".to_owned(), "text/html; charset=utf-8".to_owned())));
        assert!(answer.body.contains("<h1>Ada Lovelace</h1>"));
        assert!(answer.body.contains("fetch('/profile/1')"));
        let missing = route("/profile-page/99", "");
        assert_eq!(missing.status, 404);
        assert!(missing.body.contains("<h1>Profile not found</h1>"));
        assert_eq!(html_escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn profile_route_serves_json() {
        let answer = route("/profile/2", "");
        assert_eq!((answer.status, answer.body.as_str()), (200, r#"{"id": 2, "name": "Grace Hopper"}"#));
        assert_eq!(route("/profile/x", "").status, 404);
        assert_eq!(route("/nope", "").status, 404);
    }
}

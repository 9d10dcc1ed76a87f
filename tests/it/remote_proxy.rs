//! The remote cache through a real forward proxy: Debian's tinyproxy, started on a loopback
//! port by each test, its log read to see what went through it. The Bazel HTTP cache
//! (nginx) is reached with absolute-form requests, the Remote Execution API (BuildGrid)
//! and TLS caches through `CONNECT` tunnels; `NO_PROXY` goes around it, a proxy that is
//! down or refuses is named (never its credentials), and a proxy set in CI's environment
//! never takes a loopback cache (docs/remote-cache.md#proxies).

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::remote_http::{CI, Nginx, Served, ci_key, clone, install, origin, prove, runs, summary};
use crate::remote_support::BuildGrid;
use crate::support::{Run, Sandbox, assert_codes, assert_emits, free_port, kill_group};

/// The proxy's user and password, when it asks for them.
const USER: &str = "ci-runner";
const PASSWORD: &str = "pr0xy-pa55word-never-shown";

/// tinyproxy on 127.0.0.1, in the foreground, logging every request; killed when dropped.
pub(crate) struct Tinyproxy {
    dir: PathBuf,
    child: Option<Child>,
    port: u16,
}

fn tinyproxy_binary() -> PathBuf {
    ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect(
            "tinyproxy is not installed: `apt-get install -y tinyproxy-bin` (scripts/deps.sh does)",
        )
}

impl Tinyproxy {
    /// A proxy that lets every loopback client through; with `auth`, only those that send
    /// that user and password (`BasicAuth`, answered 407 otherwise).
    pub(crate) fn start(sb: &Sandbox, name: &str, auth: bool) -> Tinyproxy {
        let dir = sb.path().join(name);
        fs_err::create_dir_all(&dir).expect("mkdir");
        let port = free_port();
        let d = dir.display();
        // No `ConnectPort` line: CONNECT reaches any port (tinyproxy's default allows all
        // when none is listed), as the caches listen on ephemeral ones.
        let mut conf = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 30\nLogFile \"{d}/proxy.log\"\nLogLevel Connect\nPidFile \"{d}/proxy.pid\"\nMaxClients 64\nAllow 127.0.0.1\nDisableViaHeader Yes\n"
        );
        if auth {
            conf.push_str(&format!("BasicAuth {USER} {PASSWORD}\n"));
        }
        fs_err::write(dir.join("tinyproxy.conf"), conf).expect("write tinyproxy.conf");
        let child = Command::new(tinyproxy_binary())
            // Its own process group: dropping it kills it and any child it forked.
            .process_group(0)
            .arg("-d")
            .arg("-c")
            .arg(dir.join("tinyproxy.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tinyproxy");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tinyproxy did not listen on {port}: {}",
                fs_err::read_to_string(dir.join("proxy.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Tinyproxy {
            dir,
            child: Some(child),
            port,
        }
    }

    /// `http://127.0.0.1:PORT`, with the credentials it asks for when `auth`.
    pub(crate) fn url(&self, auth: bool) -> String {
        if auth {
            format!("http://{USER}:{PASSWORD}@127.0.0.1:{}", self.port)
        } else {
            format!("http://127.0.0.1:{}", self.port)
        }
    }

    /// How a message shows it: `http://<redacted>@127.0.0.1:PORT` when it has credentials.
    pub(crate) fn shown(&self, auth: bool) -> String {
        if auth {
            format!("http://<redacted>@127.0.0.1:{}", self.port)
        } else {
            self.url(false)
        }
    }

    /// The requests it was sent: `GET http://… HTTP/1.1`, `CONNECT host:port HTTP/1.1`.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| l.split_once("]: Request (file descriptor "))
            .filter_map(|(_, rest)| rest.split_once("): "))
            .map(|(_, request)| request.to_owned())
            .collect()
    }

    fn log(&self) -> String {
        fs_err::read_to_string(self.dir.join("proxy.log")).unwrap_or_default()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    free_port()
}

/// Fails unless neither stream of `run` holds the proxy's password, raw or in the
/// `Proxy-Authorization` header's base64.
fn never_shows_the_password(run: &Run) {
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(PASSWORD),
            "{stream} shows the password:\n{text}"
        );
        assert!(
            !text.contains(&basic),
            "{stream} shows the basic token:\n{text}"
        );
    }
}

fn doctor(sb: &Sandbox, vars: &[(&str, &str)]) -> (Run, Value) {
    let run = sb.run_with_env(&sb.work(), &["doctor", "--json"], vars);
    run.expect_code(0);
    never_shows_the_password(&run);
    let doc = run.json();
    (run, doc)
}

/// CI proves and pushes through the proxy, a laptop pulls through it: every request the
/// cache saw went through the proxy (`through` says how the proxy's log shows one).
fn ci_and_a_laptop_through(
    sb: &Sandbox,
    remote: &mut dyn Served,
    proxy: &Tinyproxy,
    vars: &[(&str, &str)],
    through: &str,
) {
    let (secret, trusted) = ci_key(sb);
    origin(sb, &format!("  remote: {}\n", remote.url()), &trusted);
    let ci = clone(sb, "ci");
    install(&secret, &ci);
    let mut ci_vars = vec![CI];
    ci_vars.extend_from_slice(vars);
    let run = prove(sb, &ci, &ci_vars, &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    never_shows_the_password(&run);
    assert_eq!(runs(sb), 3);
    assert_eq!(
        summary(&run, "pushed"),
        3,
        "{}\nproxy: {:?}\ncache: {}",
        run.stdout,
        proxy.requests(),
        remote.log()
    );
    let pushed = proxy.requests();
    assert!(
        pushed.iter().any(|r| r.contains(through)),
        "the proxy saw no `{through}`: {pushed:?}"
    );
    let laptop = clone(sb, "laptop");
    let run = prove(sb, &laptop, vars, &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    never_shows_the_password(&run);
    assert_eq!(runs(sb), 3, "nothing ran again: {}", run.stdout);
    assert_eq!(summary(&run, "pulled"), 3, "{}", run.stdout);
    assert!(
        proxy.requests().len() > pushed.len(),
        "the pulls went through the proxy too: {:?}",
        proxy.requests()
    );
}

/// CI's environment names a proxy that is down, in every spelling, and no `NO_PROXY`: the
/// loopback cache of the origin is reached directly (a clone pulls what CI pushed), and
/// doctor says why; `proxy` (up) sees nothing.
fn a_dead_ci_proxy_never_takes_a_loopback_cache(sb: &Sandbox, proxy: &Tinyproxy) {
    let dead = format!("http://127.0.0.1:{}", dead_port());
    let ci_env: Vec<(&str, &str)> = [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ]
    .into_iter()
    .map(|name| (name, dead.as_str()))
    .collect();
    let before = proxy.requests().len();
    let (run, doc) = doctor(sb, &ci_env);
    assert_codes!(run.status_codes(), [], "{doc:#}");
    assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
    assert_eq!(doc["cache"]["proxy"]["via"], Value::Null, "{doc:#}");
    let reason = doc["cache"]["proxy"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("a loopback host never goes through a proxy"),
        "{reason}"
    );
    let laptop = clone(sb, "laptop-behind-a-dead-proxy");
    let run = prove(sb, &laptop, &ci_env, &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(summary(&run, "pulled"), 3, "{}", run.stdout);
    assert_eq!(proxy.requests().len(), before, "nothing went to a proxy");
}

#[test]
fn the_http_cache_is_reached_through_the_proxy_with_its_credentials_never_shown() {
    let sb = Sandbox::new();
    let mut nginx = Nginx::start(&sb, None);
    let proxy = Tinyproxy::start(&sb, "proxy", true);
    let url = proxy.url(true);
    // `http://` reads `http_proxy`; `<-loopback>` sends the loopback cache through it.
    let vars = [("http_proxy", url.as_str()), ("NO_PROXY", "<-loopback>")];
    let cache = nginx.url.clone();
    ci_and_a_laptop_through(&sb, &mut nginx, &proxy, &vars, &format!("PUT {cache}/cas/"));
    let requests = proxy.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with(&format!("GET {cache}/ac/"))),
        "{requests:?}"
    );
    assert!(
        requests.iter().all(|r| r.contains(&format!(" {cache}/"))),
        "absolute-form requests to the cache only: {requests:?}"
    );

    // doctor names the proxy, redacted, and where it came from.
    let (_, doc) = doctor(&sb, &vars);
    assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
    assert_eq!(doc["cache"]["proxy"]["via"], proxy.shown(true), "{doc:#}");
    assert_eq!(doc["cache"]["proxy"]["variable"], "http_proxy");
    let human = sb.run_with_env(&sb.work(), &["doctor"], &vars);
    human.expect_code(0);
    never_shows_the_password(&human);
    assert!(
        human.stdout.contains(&format!(
            "  Proxy: {} (`http_proxy` names it)\n",
            proxy.shown(true)
        )),
        "{}",
        human.stdout
    );
    a_dead_ci_proxy_never_takes_a_loopback_cache(&sb, &proxy);
}

#[test]
fn an_https_cache_is_reached_through_a_connect_tunnel_named_by_https_proxy() {
    let sb = Sandbox::new();
    let nginx = Nginx::start_tls(&sb);
    let proxy = Tinyproxy::start(&sb, "proxy", false);
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: {}\n", nginx.url),
    );
    let ca = nginx.ca_file();
    let url = proxy.url(false);
    let vars = [
        ("SSL_CERT_FILE", ca.to_str().expect("utf-8")),
        // `http_proxy` is not read for `https://`.
        ("http_proxy", "http://127.0.0.1:1"),
        ("HTTPS_PROXY", url.as_str()),
        ("no_proxy", "<-loopback>"),
    ];
    let (_, doc) = doctor(&sb, &vars);
    assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
    assert_eq!(doc["cache"]["proxy"]["variable"], "HTTPS_PROXY", "{doc:#}");
    let authority = nginx.url["https://".len()..]
        .split('/')
        .next()
        .expect("host:port")
        .to_owned();
    assert_eq!(
        proxy.requests(),
        vec![format!("CONNECT {authority} HTTP/1.1")],
        "one tunnel, the TLS inside it"
    );
}

#[test]
fn the_grpc_cache_is_reached_through_a_connect_tunnel_and_a_dead_ci_proxy_never_takes_it() {
    let sb = Sandbox::new();
    let mut server = BuildGrid::start();
    let proxy = Tinyproxy::start(&sb, "proxy", true);
    let url = proxy.url(true);
    // `grpc://` is plaintext: it reads `http_proxy`, as `http://` does.
    let vars = [("http_proxy", url.as_str()), ("no_proxy", "<-loopback>")];
    let connect = format!("CONNECT 127.0.0.1:{} HTTP/1.1", server.port);
    ci_and_a_laptop_through(&sb, &mut server, &proxy, &vars, &connect);
    assert!(
        proxy.requests().iter().all(|r| *r == connect),
        "only tunnels to the cache: {:?}",
        proxy.requests()
    );
    let (_, doc) = doctor(&sb, &vars);
    assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
    assert_eq!(doc["cache"]["proxy"]["via"], proxy.shown(true), "{doc:#}");

    a_dead_ci_proxy_never_takes_a_loopback_cache(&sb, &proxy);
}

#[test]
fn a_grpcs_cache_gets_its_tls_inside_the_tunnel() {
    let sb = Sandbox::new();
    let server = BuildGrid::start_tls();
    let proxy = Tinyproxy::start(&sb, "proxy", false);
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: {}\n", server.url),
    );
    let ca = server.ca_file();
    let url = proxy.url(false);
    let vars = [
        ("SSL_CERT_FILE", ca.to_str().expect("utf-8")),
        ("https_proxy", url.as_str()),
        ("NO_PROXY", "<-loopback>"),
    ];
    let (_, doc) = doctor(&sb, &vars);
    assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
    assert_eq!(doc["cache"]["proxy"]["variable"], "https_proxy", "{doc:#}");
    assert_eq!(
        proxy.requests(),
        vec![format!("CONNECT 127.0.0.1:{} HTTP/1.1", server.port)]
    );
}

#[test]
fn no_proxy_sends_the_cache_around_a_proxy_that_is_up() {
    let sb = Sandbox::new();
    let nginx = Nginx::start(&sb, None);
    let proxy = Tinyproxy::start(&sb, "proxy", false);
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\ncache:\n  remote: {}\n", nginx.url),
    );
    let url = proxy.url(false);
    for (list, entry) in [
        ("<-loopback>, cache.corp 127.0.0.1", "127.0.0.1"),
        ("<-loopback>,127.0.0.0/8", "127.0.0.0/8"),
        ("*", "*"),
    ] {
        let vars = [("http_proxy", url.as_str()), ("no_proxy", list)];
        let (run, doc) = doctor(&sb, &vars);
        assert_codes!(run.status_codes(), []);
        assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
        assert_eq!(doc["cache"]["proxy"]["via"], Value::Null, "{list}: {doc:#}");
        assert_eq!(
            doc["cache"]["proxy"]["reason"],
            format!("`no_proxy` lists `{entry}`"),
            "{list}"
        );
    }
    assert_eq!(proxy.requests(), Vec::<String>::new());
    // The same proxy, not listed: it carries the check.
    let (_, doc) = doctor(
        &sb,
        &[("http_proxy", url.as_str()), ("no_proxy", "<-loopback>")],
    );
    assert_eq!(doc["cache"]["reachable"], true, "{doc:#}");
    assert_eq!(proxy.requests().len(), 1, "{:?}", proxy.requests());
}

#[test]
fn a_proxy_that_is_down_or_refuses_is_named_never_the_cache_nor_its_password() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    let port = dead_port();
    let dead = format!("http://{USER}:{PASSWORD}@127.0.0.1:{port}");
    let vars = [("http_proxy", dead.as_str()), ("NO_PROXY", "<-loopback>")];
    // Nothing needs to listen at the caches: the proxy is the first hop.
    for cache in [
        format!("http://127.0.0.1:{}/cache", free_port()),
        format!("grpc://127.0.0.1:{}/main", free_port()),
    ] {
        sb.write(
            "proofgraph.yaml",
            format!("version: 1\ncache:\n  remote: {cache}\n"),
        );
        let (run, doc) = doctor(&sb, &vars);
        assert_emits!(run.json(), "remote_proxy_unavailable", "{cache}: {doc:#}");
        assert_eq!(doc["cache"]["reachable"], false, "{doc:#}");
        let message = doc["status"][0]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!(
                "failed to reach the proxy http://<redacted>@127.0.0.1:{port} (`http_proxy`) on the way to {cache}: the connection was refused"
            )),
            "{message}"
        );
        let human = sb.run_with_env(&sb.work(), &["doctor"], &vars);
        never_shows_the_password(&human);
        assert!(
            human.stdout.contains("<redacted>@127.0.0.1"),
            "{}",
            human.stdout
        );
    }

    // A proxy that is up but wants credentials the URL does not give: its answer is quoted.
    let proxy = Tinyproxy::start(&sb, "proxy", true);
    let url = proxy.url(false);
    let vars = [("http_proxy", url.as_str()), ("NO_PROXY", "<-loopback>")];
    for (cache, answer) in [
        (
            format!("http://127.0.0.1:{}/cache", free_port()),
            "HEAD with 407 Proxy Authentication Required",
        ),
        (
            format!("grpc://127.0.0.1:{}/main", free_port()),
            "with `HTTP/1.0 407 Proxy Authentication Required`",
        ),
    ] {
        sb.write(
            "proofgraph.yaml",
            format!("version: 1\ncache:\n  remote: {cache}\n"),
        );
        let (run, doc) = doctor(&sb, &vars);
        assert_emits!(run.json(), "remote_proxy_unavailable", "{cache}");
        let message = doc["status"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(answer), "{message}");
        assert!(message.contains(&proxy.shown(false)), "{message}");
    }

    // prove goes on with the local store: a warning, exit 0.
    let (_, trusted) = ci_key(&sb);
    origin(
        &sb,
        &format!("  remote: http://127.0.0.1:{}/cache\n", free_port()),
        &trusted,
    );
    let vars = [("http_proxy", dead.as_str()), ("NO_PROXY", "<-loopback>")];
    let run = prove(&sb, &sb.work(), &[CI, vars[0], vars[1]], &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    never_shows_the_password(&run);
    assert_emits!(run.json(), "remote_proxy_unavailable");
    assert_eq!(runs(&sb), 3);
}

#[test]
fn a_proxy_variable_that_names_no_usable_proxy_leaves_the_cache_unused() {
    let sb = Sandbox::new();
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        "version: 1\ncache:\n  remote: https://cache.corp.example/cache\n",
    );
    let socks = format!("socks5://{USER}:{PASSWORD}@127.0.0.1:1080");
    let (run, doc) = doctor(&sb, &[("ALL_PROXY", socks.as_str())]);
    assert_emits!(run.json(), "remote_proxy_invalid");
    assert_eq!(doc["cache"], Value::Null, "nothing was called: {doc:#}");
    let message = doc["status"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`ALL_PROXY` does not name a proxy this client can use: `socks5://` proxies are not supported"),
        "{message}"
    );
}

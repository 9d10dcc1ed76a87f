//! docs/setup.md's recipes, run as written: a real package manager installs a real
//! dependency in a cached setup that sees only the manifests and lockfiles, and the
//! project's own code comes from the sandbox. Each test proves once (setup runs), breaks
//! the project's code (the provider runs again with the setup restored from the cache and
//! fails: the cache never held the project), repairs it (the first receipt is current),
//! and runs once more without receipts and with the sandbox kept (the cached directory is
//! then copied, not mounted) to look at what the provider was given.
//!
//! A setup gets only the caller's `PATH`, `HOME` and `LANG`, so what the package manager
//! needs besides (uv's "never download a Python", Go's proxy, the certificates yarn berry
//! trusts) is in its configuration under the test's `HOME`, where a user would put it. The
//! npm, pnpm, yarn classic, venv + pip and cargo recipes are run by `evidence.rs`,
//! `setup.rs` and `real_projects.rs`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Run, Sandbox, git_commit_all, provider, python_tool, write};

/// Runs `cmd`, failing the test with its output unless it succeeds; returns its stdout.
fn run_ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("failed to run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A change `x` whose one claim the provider `test` of repository `app` proves, with
/// `repository` the rest of `app`'s entry in `proofgraph.yaml` and `provider` the rest of
/// the provider's in `execution.yaml`.
pub(crate) fn wire(sb: &Sandbox, repository: &str, provider: &str) {
    sb.openspec_root("");
    sb.write(
        "proofgraph.yaml",
        format!("version: 1\nrepositories:\n  app:\n    path: app\n{repository}"),
    );
    sb.write(
        "openspec/changes/x/evidence.yaml",
        "version: 2\nclaims:\n  - {id: a, scenario: s, capabilities: [static-analysis]}\n",
    );
    sb.write(
        "openspec/changes/x/execution.yaml",
        format!("version: 1\nproviders:\n  test:\n    adapter: command\n    capability: static-analysis\n    repository: app\n{provider}    timeoutMs: 600000\n"),
    );
    git_commit_all(&sb.work());
}

/// `prove x --json` with `args` added and `PATH` given; the run and its JSON.
fn prove(sb: &Sandbox, path: &str, args: &[&str]) -> (Run, Value) {
    let mut all = vec!["prove", "x", "--json"];
    all.extend(args);
    let run = sb.run_with_env(&sb.work(), &all, &[("PATH", path)]);
    let doc = run.json();
    (run, doc)
}

/// The private copy of `app` the one execution of a run without a mount namespace was
/// given, as `--keep-sandbox` kept it.
fn kept_copy(sb: &Sandbox, doc: &Value) -> PathBuf {
    let run = doc["run_id"].as_str().expect("a run id");
    sb.work()
        .join(".proofgraph/runs")
        .join(run)
        .join("copies/1/app")
}

/// The one tree the setup cache keeps.
fn kept_tree(sb: &Sandbox) -> PathBuf {
    let trees: Vec<PathBuf> = fs_err::read_dir(sb.work().join(".proofgraph/setup-trees"))
        .expect("the setup cache")
        .map(|e| e.expect("an entry").path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    assert_eq!(trees.len(), 1, "one kept setup: {trees:?}");
    trees[0].join("tree")
}

/// Every path under `dir`, relative to it (links not followed).
fn paths(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, at: &Path, out: &mut Vec<String>) {
        for item in fs_err::read_dir(at).expect("read a directory") {
            let path = item.expect("an entry").path();
            out.push(
                path.strip_prefix(root)
                    .expect("under the root")
                    .to_string_lossy()
                    .into_owned(),
            );
            if fs_err::symlink_metadata(&path)
                .expect("stat")
                .file_type()
                .is_dir()
            {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The proof sequence every recipe goes through. `setup` is how the setup command shows in
/// `prove`'s progress; `break_it` breaks the project's code and `repair` repairs it.
/// Returns the sandbox the last run kept.
fn prove_break_repair(
    sb: &Sandbox,
    path: &str,
    setup: &str,
    break_it: &dyn Fn(),
    repair: &dyn Fn(),
) -> PathBuf {
    let (run, doc) = prove(sb, path, &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!("setup   app: {setup}")),
        "setup ran: {}",
        run.stderr
    );
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    // Broken: the provider runs again with the setup from its cache, and fails.
    break_it();
    let (run, doc) = prove(sb, path, &[]);
    assert_eq!(
        run.code,
        Some(1),
        "broken code never passes: {}\n{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(provider(&doc, "test")["action"], "ran", "{doc}");
    assert!(
        run.stderr.contains("app: restored") && !run.stderr.contains(setup),
        "the setup came from its cache: {}",
        run.stderr
    );
    // Repaired: the first receipt is current again; nothing runs.
    repair();
    let (run, doc) = prove(sb, path, &[]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_ne!(provider(&doc, "test")["action"], "ran", "{doc}");
    // Without receipts and without a mount namespace, the cached directory is copied into
    // the execution's private copy, still without running setup, and the provider passes
    // from the copy too.
    let (run, doc) = prove(
        sb,
        path,
        &["--no-cache", "--isolation", "none", "--keep-sandbox"],
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("from the setup cache (copied: the run has no mount namespace)")
            && !run.stderr.contains(setup),
        "{}",
        run.stderr
    );
    kept_copy(sb, &doc)
}

/// Go (Debian's `golang-go`). Missing, the test fails saying how to install it.
fn require_go() {
    let ok = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "docs/setup.md's go recipe needs `go`; install it with `apt-get install golang-go`"
    );
}

const GREETING: &str =
    "import six\n\n\ndef shout(text):\n    return six.ensure_str(text).upper()\n";

/// docs/setup.md's uv recipe, run: a packaged project (a build system, a `src` layout)
/// depending on `six` from PyPI, its `uv.lock` made by `uv lock`, and pytest in its `dev`
/// group. `uv sync --frozen --no-install-project` fills `.venv` seeing only `pyproject.toml`
/// and `uv.lock`; the provider imports the package from the sandbox's `src` through
/// `PYTHONPATH`, so the package never enters `.venv` and breaking it never passes. uv finds
/// the system Python and is told never to download one (`uv.toml` in the test's `HOME`), so
/// only packages come from the network.
#[test]
fn the_uv_recipe_syncs_dependencies_once_and_tests_the_code_as_it_is() {
    let sb = Sandbox::new();
    // The uv of PyPI's `uv` package (a binary), pinned in the Python test tools.
    let uv = python_tool("uv");
    let path = sb.path_with_python_tools();
    // uv's configuration, where a user keeps it: the system Python, never a download; the
    // platform's certificates, as pip and git use them (a proxy that intercepts TLS signs
    // with a CA only the system store has); its cache in the test's home.
    write(
        &sb.config_home().join("uv/uv.toml"),
        format!(
            "python-downloads = \"never\"\npython-preference = \"only-system\"\nsystem-certs = true\ncache-dir = \"{}\"\n",
            sb.home().join(".cache/uv").display()
        ),
    );
    // A job's home is empty but for what is named: uv's configuration is.
    sb.name_host_path(&sb.config_home().join("uv"));
    sb.write(
        "app/pyproject.toml",
        "[project]\nname = \"greeting\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\ndependencies = [\"six==1.16.0\"]\n\n[dependency-groups]\ndev = [\"pytest==8.3.4\"]\n\n[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n",
    );
    sb.write("app/src/greeting/__init__.py", GREETING);
    sb.write(
        "app/tests/test_greeting.py",
        "import os\n\nimport greeting\nimport six\n\n\ndef test_shout():\n    assert greeting.shout(b\"hi\") == \"HI\"\n\n\ndef test_the_package_is_the_sandbox_s_and_six_the_venv_s():\n    assert os.path.realpath(greeting.__file__) == os.path.realpath(\"src/greeting/__init__.py\")\n    assert os.path.realpath(six.__file__).startswith(os.path.realpath(\".venv\") + os.sep)\n",
    );
    sb.write("app/.gitignore", ".venv/\n__pycache__/\n.pytest_cache/\n");
    run_ok(
        sb.cmd(&uv, &sb.work().join("app"))
            .env("PATH", &path)
            .args(["lock", "--quiet"]),
        "uv lock",
    );
    wire(
        &sb,
        "    setup: [[uv, sync, --frozen, --no-install-project]]\n    setupCache: [.venv]\n",
        "    command: [.venv/bin/python, -m, pytest, -q, -p, no:cacheprovider, tests]\n    env: {PYTHONPATH: src}\n",
    );
    let lib = sb.work().join("app/src/greeting/__init__.py");
    let kept = prove_break_repair(
        &sb,
        &path,
        "uv sync --frozen --no-install-project",
        &|| {
            fs_err::write(&lib, GREETING.replace(".upper()", ".lower()")).expect("break");
        },
        &|| fs_err::write(&lib, GREETING).expect("repair"),
    );
    // What the cache keeps, and what the provider was given: six (and pytest), never the
    // package — no `greeting` dist-info, no `.pth` pointing at `src`.
    for (what, venv) in [
        ("the kept tree", kept_tree(&sb).join(".venv")),
        ("the copy the provider was given", kept.join(".venv")),
    ] {
        let all = paths(&venv);
        let site: Vec<&String> = all
            .iter()
            .filter(|p| p.contains("site-packages/"))
            .collect();
        assert!(
            site.iter().any(|p| p.ends_with("site-packages/six.py"))
                && site.iter().any(|p| p.ends_with("site-packages/pytest")),
            "{what} holds the dependencies: {site:?}"
        );
        assert!(
            !all.iter().any(|p| p.contains("greeting")),
            "{what} never holds the package: {site:?}"
        );
        for pth in all.iter().filter(|p| p.ends_with(".pth")) {
            let text = fs_err::read_to_string(venv.join(pth)).expect("a .pth file");
            assert!(
                !text.contains("src"),
                "{what}: {pth} points at the source: {text}"
            );
        }
    }
}

/// A module proxy in a directory, in the layout `GOPROXY` reads (`file://`): the module
/// `example.com/greet` at v1.0.0, its zip made by Python's `zipfile`.
fn go_proxy(sb: &Sandbox) -> PathBuf {
    let proxy = sb.path().join("goproxy");
    let at = proxy.join("example.com/greet/@v");
    let module = "module example.com/greet\n\ngo 1.18\n";
    write(&at.join("list"), "v1.0.0\n");
    write(
        &at.join("v1.0.0.info"),
        "{\"Version\":\"v1.0.0\",\"Time\":\"2024-01-01T00:00:00Z\"}\n",
    );
    write(&at.join("v1.0.0.mod"), module);
    run_ok(
        sb.cmd("python3", &sb.path())
            .args([
                "-c",
                "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z:\n    for name, text in zip(sys.argv[2::2], sys.argv[3::2]):\n        z.writestr('example.com/greet@v1.0.0/' + name, text)\n",
            ])
            .arg(at.join("v1.0.0.zip"))
            .args([
                "go.mod",
                module,
                "greet.go",
                "package greet\n\nfunc Hello(name string) string { return \"hello, \" + name }\n",
            ]),
        "zip the module",
    );
    proxy
}

const APP_GO: &str = "package app\n\nimport \"example.com/greet\"\n\nfunc Greeting() string { return greet.Hello(\"app\") }\n";

/// docs/setup.md's go recipe, run: a module requiring `example.com/greet` from a module
/// proxy the test serves from a directory (proxy.golang.org is not reachable from these
/// machines), its `go.sum` made by `go mod tidy`. The proxy is the test's `go env -w`
/// configuration under its `HOME`, the only place a setup reads it from.
/// `go mod download -modcacherw` fills `.gomodcache` seeing only `go.mod` and `go.sum`; the
/// provider tests offline (`GOPROXY=off`, on the run's private network) with the module
/// cache at the sandbox's absolute path, as Go requires, and the code as it is.
#[test]
fn the_go_recipe_downloads_modules_once_and_tests_the_code_as_it_is() {
    require_go();
    let sb = Sandbox::new();
    let proxy = go_proxy(&sb);
    // The test's own `go` commands keep modules outside the home the run sees, so only the
    // setup's cache can give them to the provider.
    let go = |args: &[&str], what: &str| {
        run_ok(
            sb.cmd("go", &sb.work().join("app"))
                .env("GOMODCACHE", sb.path().join("lock-modcache"))
                .env("GOFLAGS", "-modcacherw")
                .args(args),
            what,
        )
    };
    sb.write(
        "app/go.mod",
        "module example.com/app\n\ngo 1.18\n\nrequire example.com/greet v1.0.0\n",
    );
    sb.write("app/app.go", APP_GO);
    sb.write(
        "app/app_test.go",
        "package app\n\nimport \"testing\"\n\nfunc TestGreeting(t *testing.T) {\n\tif got := Greeting(); got != \"hello, app\" {\n\t\tt.Fatalf(\"got %q\", got)\n\t}\n}\n",
    );
    sb.write("app/.gitignore", ".gomodcache/\n");
    go(
        &[
            "env",
            "-w",
            &format!("GOPROXY=file://{}", proxy.display()),
            "GOSUMDB=off",
        ],
        "go env -w",
    );
    // What `go env -w` wrote is the user's Go configuration, in their home: a job's home
    // holds it once named, and the module proxy it points at, as a user names them.
    sb.name_host_path(&sb.home().join(".config/go"));
    sb.name_host_path(&proxy);
    go(&["mod", "tidy"], "go mod tidy");
    assert!(
        fs_err::read_to_string(sb.work().join("app/go.sum"))
            .expect("go.sum")
            .contains("example.com/greet v1.0.0 h1:"),
        "go.sum records the module"
    );
    wire(
        &sb,
        "    setup: [[sh, -c, \"GOMODCACHE=$PWD/.gomodcache go mod download -modcacherw\"]]\n    setupCache: [.gomodcache]\n",
        "    command: [sh, -c, \"GOMODCACHE=$PWD/.gomodcache exec go test -count=1 ./...\"]\n    env: {GOPROXY: \"off\", GOFLAGS: -mod=readonly}\n",
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let lib = sb.work().join("app/app.go");
    let kept = prove_break_repair(
        &sb,
        &path,
        "sh -c GOMODCACHE=$PWD/.gomodcache go mod download -modcacherw",
        &|| {
            fs_err::write(&lib, APP_GO.replace("\"app\"", "\"ap\"")).expect("break");
        },
        &|| fs_err::write(&lib, APP_GO).expect("repair"),
    );
    // The module is in the cache, unpacked, in directories its owner can write
    // (`-modcacherw`; Go's default is read-only, which a user cannot delete, nor a copy
    // fill), and in the copy the provider was given.
    let module = kept_tree(&sb).join(".gomodcache/example.com/greet@v1.0.0");
    for dir in [
        module.clone(),
        module.parent().expect("a parent").to_path_buf(),
    ] {
        let mode = fs_err::metadata(&dir)
            .expect("the module")
            .permissions()
            .mode();
        assert!(mode & 0o200 != 0, "{} is writable: {mode:o}", dir.display());
    }
    assert!(module.join("greet.go").is_file());
    assert!(
        kept.join(".gomodcache/example.com/greet@v1.0.0/greet.go")
            .is_file()
    );
}

const INDEX_JS: &str =
    "const isNumber = require('is-number');\nmodule.exports = (x) => isNumber(x);\n";

/// docs/setup.md's yarn berry recipe, run: yarn 4 (`@yarnpkg/cli-dist`, pinned in
/// tools/package.json) as the `yarn` on `PATH`, a package with a dependency from npm and
/// `nodeLinker: node-modules` in its `.yarnrc.yml`, its `yarn.lock` made by `yarn install`.
/// `yarn install --immutable` fills `node_modules` seeing only `package.json`, `yarn.lock`
/// and `.yarnrc.yml`; the package's code comes from the sandbox. Yarn berry reads no npm
/// configuration: the certificates it trusts are in the `.yarnrc.yml` of the test's
/// `HOME`, where a user keeps them.
#[test]
fn the_yarn_berry_recipe_installs_dependencies_once_and_runs_the_code_as_it_is() {
    let berry = crate::support::tools_node_modules().join("@yarnpkg/cli-dist/bin/yarn.js");
    assert!(
        berry.is_file(),
        "docs/setup.md's yarn berry recipe needs yarn 4.18.1 at {}; install it with `npm ci --prefix tools`",
        berry.display()
    );
    let sb = Sandbox::new();
    let path = crate::support::path_with_tool(&sb, "yarn", &berry);
    let system_certs = Path::new("/etc/ssl/certs/ca-certificates.crt");
    let certs = if system_certs.is_file() {
        format!("httpsCaFilePath: {}\n", system_certs.display())
    } else {
        String::new()
    };
    write(
        &sb.home().join(".yarnrc.yml"),
        format!("enableTelemetry: false\n{certs}"),
    );
    // A job's home is empty but for what is named: the user's yarn configuration is.
    sb.name_host_path(&sb.home().join(".yarnrc.yml"));
    sb.write(
        "app/package.json",
        "{\"name\": \"app\", \"version\": \"1.0.0\", \"private\": true, \"dependencies\": {\"is-number\": \"7.0.0\"}}\n",
    );
    sb.write("app/.yarnrc.yml", "nodeLinker: node-modules\n");
    sb.write("app/index.js", INDEX_JS);
    sb.write("app/.gitignore", "node_modules/\n.yarn/\n");
    let version = run_ok(
        sb.cmd(&berry, &sb.work().join("app"))
            .env("PATH", &path)
            .arg("--version"),
        "yarn --version",
    );
    assert_eq!(version.trim(), "4.18.1", "yarn berry runs");
    run_ok(
        sb.cmd(&berry, &sb.work().join("app"))
            .env("PATH", &path)
            .arg("install"),
        "yarn install",
    );
    assert!(
        fs_err::read_to_string(sb.work().join("app/yarn.lock"))
            .expect("yarn.lock")
            .contains("__metadata:"),
        "a berry lockfile"
    );
    fs_err::remove_dir_all(sb.work().join("app/node_modules")).expect("remove node_modules");
    wire(
        &sb,
        "    setup: [[yarn, install, --immutable]]\n    setupCache: [node_modules]\n",
        "    command: [node, -e, \"process.exit(require('./index.js')(5) && !require('./index.js')('x') ? 0 : 1)\"]\n",
    );
    let lib = sb.work().join("app/index.js");
    let kept = prove_break_repair(
        &sb,
        &path,
        "yarn install --immutable",
        &|| {
            fs_err::write(&lib, INDEX_JS.replace("=> isNumber", "=> !isNumber")).expect("break");
        },
        &|| fs_err::write(&lib, INDEX_JS).expect("repair"),
    );
    // The dependency is in the cache and in the provider's copy, linked by berry (its state
    // file); the package is not.
    for (what, modules) in [
        ("the kept tree", kept_tree(&sb).join("node_modules")),
        ("the copy the provider was given", kept.join("node_modules")),
    ] {
        let all = paths(&modules);
        assert!(
            all.iter().any(|p| p == "is-number/index.js")
                && all.iter().any(|p| p == ".yarn-state.yml"),
            "{what} holds is-number, installed by yarn berry: {all:?}"
        );
        assert!(
            !all.iter()
                .any(|p| p.starts_with("app") || p.ends_with("/app")),
            "{what} never holds the package: {all:?}"
        );
    }
}

//! Unit tests of [`super`].

use proofgraph_graph::EnvName;
use proofgraph_graph::model::Network as NetworkSetting;

use super::*;
use crate::load::config::caches::CacheKind;
use crate::run::testing::{at, env, node, pid, provider, seal, seal_in, vars};

fn name(s: &str) -> EnvName {
    EnvName::parse(s).expect("valid env name")
}

/// A `Jobs` over one sandbox (`/sb/root`) in which every provider's program is found.
struct Fixture {
    caller: Env,
    secrets: Secrets,
    programs: BTreeMap<ProviderId, Option<Program>>,
    services: BTreeMap<ServiceId, Option<Program>>,
    sandboxes: BTreeMap<RepoId, PathBuf>,
    host_paths: Vec<PathBuf>,
    caches: BTreeMap<RepoId, Vec<(CacheKind, PathBuf)>>,
    stamped: bool,
}

/// What a provider sees of the root repository: the snapshot only.
fn whole() -> Vec<Seen> {
    vec![Seen {
        repo: RepoId::root(),
        layers: vec![PathBuf::from("/sb/root")],
        ids: vec!["all".to_owned()],
    }]
}

/// The execution's repositories: the root one seen at the snapshot's path, written to
/// a layer of its own.
fn dirs() -> ExecDirs {
    ExecDirs {
        repos: BTreeMap::from([(
            RepoId::root(),
            super::super::layers::ExecDir {
                at: PathBuf::from("/sb/root"),
                written: PathBuf::from("/runs/r/worlds/1/root/upper"),
            },
        )]),
    }
}

impl Fixture {
    fn new(graph: &SealedGraph) -> Self {
        Fixture {
            caller: env(&[("PATH", "/usr/bin"), ("TOKEN", "a-long-secret")]),
            secrets: Secrets::new([b"a-long-secret".to_vec()]),
            programs: graph
                .providers()
                .map(|(id, _, _)| (id.clone(), Some(Program::Absolute("/bin/sh".into()))))
                .collect(),
            services: BTreeMap::new(),
            sandboxes: BTreeMap::from([(RepoId::root(), PathBuf::from("/sb/root"))]),
            host_paths: Vec::new(),
            caches: BTreeMap::new(),
            stamped: false,
        }
    }

    fn jobs(&self) -> Jobs<'_> {
        Jobs {
            env: &self.caller,
            run_id: "run1",
            secrets: &self.secrets,
            programs: &self.programs,
            service_programs: &self.services,
            sandboxes: &self.sandboxes,
            out_dir: Path::new("/runs/r/out"),
            host_paths: &self.host_paths,
            caches: &self.caches,
            stamped: self.stamped,
            home: Some(Path::new("/home/u")),
        }
    }
}

#[test]
fn a_prepared_job_runs_the_observed_program_in_its_sandbox_with_its_settings() {
    let mut pw = provider("browser", Adapter::Playwright, &["playwright", "test"]);
    pw.timeout_ms = Some(at(5_000));
    pw.network = Some(at(NetworkSetting::Host));
    let graph = seal(vec![pw], Vec::new());
    let mut fixture = Fixture::new(&graph);
    fixture
        .programs
        .insert(pid("browser"), Some(Program::InRepository("bin/pw".into())));
    let prepared = fixture
        .jobs()
        .prepare(node(&graph, "browser"), whole())
        .expect("prepared");
    let report = PathBuf::from("/runs/r/out/browser/playwright.json");
    assert_eq!(prepared.playwright_report.as_ref(), Some(&report));
    assert_eq!(
        prepared.out.as_deref(),
        Some(Path::new("/runs/r/out/browser"))
    );
    let world = proofgraph_sandbox::World {
        writable: vec![PathBuf::from("/runs/r/out/browser")],
        ..proofgraph_sandbox::World::default()
    };
    let (key, job) = prepared.into_job(
        PathBuf::from("/runs/r/logs/1.log"),
        true,
        world.clone(),
        &dirs(),
    );
    assert_eq!(job.program, Some(PathBuf::from("/sb/root/bin/pw")));
    assert_eq!(job.cwd, PathBuf::from("/sb/root"));
    assert_eq!(job.world, world);
    assert_eq!(key.seen, whole());
    assert_eq!(job.argv, key.argv);
    assert_eq!(job.env, key.env);
    assert!(vars(&job.env).contains(&(
        "PLAYWRIGHT_JSON_OUTPUT_FILE".into(),
        report.display().to_string()
    )));
    assert!(vars(&job.env).contains(&("PROOFGRAPH_RUN_ID".into(), "run1".into())));
    assert_eq!(job.timeout, Some(Duration::from_millis(5_000)));
    assert_eq!(job.network, Network::Host);
    assert_eq!(job.redact, fixture.secrets.patterns());
    assert!(job.limited && job.hold_after);
}

#[test]
fn a_provider_that_cannot_start_says_why() {
    let mut needs = provider("needs", Adapter::Command, &["make"]);
    needs.env_from = Some(vec![at(name("GONE"))]);
    let lost = provider("lost", Adapter::Command, &["nowhere", "x"]);
    let graph = seal(vec![needs, lost], Vec::new());
    let mut fixture = Fixture::new(&graph);
    fixture.programs.insert(pid("lost"), None);
    let jobs = fixture.jobs();
    assert_eq!(
        jobs.prepare(node(&graph, "needs"), whole())
            .expect_err("no GONE"),
        "`envFrom` names GONE but the environment does not set it"
    );
    assert_eq!(
        jobs.prepare(node(&graph, "lost"), whole())
            .expect_err("no program"),
        "its command could not be started: `nowhere` is not on its PATH (nor a file of its repository)"
    );
    let no_sandbox = Fixture {
        sandboxes: BTreeMap::new(),
        ..Fixture::new(&graph)
    };
    assert_eq!(
        no_sandbox
            .jobs()
            .prepare(node(&graph, "needs"), whole())
            .expect_err("no sandbox"),
        "its repository has no sandbox"
    );
    // A default timeout of two minutes, on the private network.
    let graph = seal(vec![provider("p", Adapter::Command, &["t"])], Vec::new());
    let (key, job) = Fixture::new(&graph)
        .jobs()
        .prepare(node(&graph, "p"), whole())
        .expect("prepared")
        .into_job(
            PathBuf::from("/l"),
            false,
            proofgraph_sandbox::World::default(),
            &dirs(),
        );
    assert_eq!((key.timeout, key.network), (120_000, false));
    assert_eq!(job.network, Network::Private);
    assert!(!job.hold_after);
}

/// `a` and `b` run one command with different reports; `c` the same command with
/// another environment; `d` no report; `e` runs nothing.
fn sharing() -> SealedGraph {
    let mut a = provider("a", Adapter::TestDiscovery, &["npm", "test"]);
    a.capability = Some(at(proofgraph_graph::CapabilityName::test()));
    a.report = Some(at("out/a.json".to_owned()));
    let mut b = provider("b", Adapter::Command, &["npm", "test"]);
    b.report = Some(at("out/b.json".to_owned()));
    let mut c = provider("c", Adapter::Command, &["npm", "test"]);
    c.report = Some(at("out/c.json".to_owned()));
    c.env = Some(BTreeMap::from([(name("CI"), at("1".to_owned()))]));
    let d = provider("d", Adapter::Command, &["npm", "test"]);
    let mut e = provider("e", Adapter::ContractDigest, &[]);
    e.report = Some(at("out/e.json".to_owned()));
    e.contract = Some(BTreeMap::from([
        (RepoId::root(), at("api.json".to_owned())),
        (
            RepoId::parse("web").expect("valid"),
            at("api.json".to_owned()),
        ),
    ]));
    let mut all = vec![a, b, c, d];
    for p in &mut all {
        p.repository = Some(at(RepoId::root()));
    }
    all.push(e);
    seal_in(&["web"], all, Vec::new())
}

#[test]
fn providers_sharing_a_command_share_one_execution_key() {
    let graph = sharing();
    let fixture = Fixture::new(&graph);
    let jobs = fixture.jobs();
    let key = |id: &str| {
        jobs.prepare(node(&graph, id), whole())
            .expect("prepared")
            .key
    };
    assert_eq!(key("a"), key("b"));
    assert_eq!(key("a"), key("d"));
    // Another environment is another execution.
    assert_ne!(key("a"), key("c"));
    // So is another world: the same command seeing other files is not the same run.
    let narrowed = vec![Seen {
        repo: RepoId::root(),
        layers: vec![PathBuf::from("/runs/r/views/1/root")],
        ids: vec!["0f".to_owned()],
    }];
    let other = jobs
        .prepare(node(&graph, "b"), narrowed)
        .expect("prepared")
        .key;
    assert_ne!(key("a"), other);
}

#[test]
fn a_program_outside_every_jobs_world_cannot_start_and_says_what_to_name() {
    let graph = seal(
        vec![provider("p", Adapter::Command, &["cargo", "test"])],
        Vec::new(),
    );
    let mut fixture = Fixture::new(&graph);
    let home_tool = Program::Absolute("/home/u/.cargo/bin/cargo".into());
    fixture.programs.insert(pid("p"), Some(home_tool));
    let why = fixture
        .jobs()
        .prepare(node(&graph, "p"), whole())
        .expect_err("outside");
    assert!(
        why.contains("`cargo` is `/home/u/.cargo/bin/cargo`, which no job's world holds")
            && why.ends_with("add `~/.cargo` to `hostPaths`"),
        "{why}"
    );
    // Named, it starts; a system program or one of the repository always does.
    fixture.host_paths.push(PathBuf::from("/home/u/.cargo"));
    assert!(fixture.jobs().prepare(node(&graph, "p"), whole()).is_ok());
    for program in [
        Program::Absolute("/usr/bin/env".into()),
        Program::InRepository("bin/tool".into()),
    ] {
        fixture.host_paths.clear();
        fixture.programs.insert(pid("p"), Some(program));
        assert!(fixture.jobs().prepare(node(&graph, "p"), whole()).is_ok());
    }
    fixture
        .programs
        .insert(pid("p"), Some(Program::Absolute("/srv/tools/bin/x".into())));
    let why = fixture
        .jobs()
        .prepare(node(&graph, "p"), whole())
        .expect_err("outside");
    assert!(
        why.ends_with("add `/srv/tools/bin` to `hostPaths`"),
        "{why}"
    );
}

#[test]
fn every_report_path_judged_from_an_execution_is_emptied_before_it() {
    let graph = sharing();
    let fixture = Fixture::new(&graph);
    let jobs = fixture.jobs();
    let wanted: BTreeSet<NodeId> = graph.providers().map(|(_, n, _)| n).collect();
    let seen: BTreeMap<NodeId, Vec<Seen>> = wanted.iter().map(|id| (*id, whole())).collect();
    let reports = jobs.reports_by_execution(&graph, &wanted, &seen);
    let key = |id: &str| {
        jobs.prepare(node(&graph, id), whole())
            .expect("prepared")
            .key
    };
    let repo = Some(RepoId::root());
    let mut shared = reports.get(&key("a")).cloned().expect("a's execution");
    shared.sort();
    assert_eq!(
        shared,
        [
            (repo.clone(), "out/a.json".to_owned()),
            (repo.clone(), "out/b.json".to_owned())
        ]
    );
    assert_eq!(
        reports.get(&key("c")),
        Some(&vec![(repo, "out/c.json".to_owned())])
    );
    // `d` declares none and `e` runs no command: two executions in all.
    assert_eq!(reports.len(), 2);
    // Only the wanted providers' reports: without `b`, only `a`'s.
    let only_a: BTreeSet<NodeId> = [graph.provider(&pid("a")).expect("a")].into();
    let reports = jobs.reports_by_execution(&graph, &only_a, &seen);
    assert_eq!(reports.get(&key("a")).map(Vec::len), Some(1));
}

#[test]
fn a_setup_command_is_searched_on_path_with_the_outside_network() {
    let graph = seal(Vec::new(), Vec::new());
    let fixture = Fixture::new(&graph);
    let world = proofgraph_sandbox::World {
        writable: vec![PathBuf::from("/sb/root")],
        ..proofgraph_sandbox::World::default()
    };
    let job = fixture.jobs().setup_job(
        &["npm".to_owned(), "ci".to_owned()],
        &RepoId::root(),
        Path::new("/sb/root"),
        world.clone(),
        PathBuf::from("/l"),
    );
    assert_eq!(job.world, world);
    assert_eq!(job.argv, [OsString::from("npm"), OsString::from("ci")]);
    assert_eq!(job.program, None);
    assert_eq!(job.network, Network::Host);
    assert_eq!(job.timeout, Some(Duration::from_secs(1800)));
    // No envFrom, no run id: the caller's PATH only (TOKEN is not passed on).
    assert_eq!(vars(&job.env), [("PATH".to_owned(), "/usr/bin".to_owned())]);
    assert!(!job.limited && !job.hold_after);
}

/// A repository's declared caches reach its providers' environment (the provider's own
/// settings kept where a cache adds to them) and, for download caches only, its setup's;
/// another repository's jobs get none of them.
#[test]
fn declared_caches_point_the_tools_of_their_repository_at_their_directories() {
    let mut go = provider("go", Adapter::Command, &["go", "test", "-json", "./..."]);
    go.env = Some(BTreeMap::from([(
        name("GOFLAGS"),
        at("-mod=mod".to_owned()),
    )]));
    let graph = seal(vec![go], Vec::new());
    let mut fixture = Fixture::new(&graph);
    fixture.caches = BTreeMap::from([(
        RepoId::root(),
        vec![
            (
                CacheKind::GoBuild,
                PathBuf::from("/store/caches/root/go-build"),
            ),
            (CacheKind::Npm, PathBuf::from("/store/caches/root/npm")),
        ],
    )]);
    let jobs = fixture.jobs();
    let p = graph
        .node(graph.provider(&pid("go")).expect("go"))
        .provider()
        .expect("a provider");
    let prepared = jobs.prepare(p, whole()).expect("prepared");
    let env = vars(&prepared.key.env);
    let get = |env: &[(String, String)], k: &str| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    };
    assert_eq!(
        get(&env, "GOCACHE").as_deref(),
        Some("/store/caches/root/go-build")
    );
    assert_eq!(get(&env, "GOFLAGS").as_deref(), Some("-mod=mod -count=1"));
    assert_eq!(
        get(&env, "npm_config_cache").as_deref(),
        Some("/store/caches/root/npm")
    );
    let setup = jobs.setup_job(
        &["go".to_owned(), "mod".to_owned(), "download".to_owned()],
        &RepoId::root(),
        Path::new("/sb/root"),
        proofgraph_sandbox::World::default(),
        PathBuf::from("/l"),
    );
    // A setup gets the download caches only: never a build cache, which holds what the
    // project's own code built.
    let env = vars(&setup.env);
    assert_eq!(
        get(&env, "npm_config_cache").as_deref(),
        Some("/store/caches/root/npm")
    );
    assert_eq!(get(&env, "GOCACHE"), None);
    assert_eq!(get(&env, "GOFLAGS"), None);
    let other = jobs.setup_job(
        &["true".to_owned()],
        &RepoId::parse("web").expect("valid"),
        Path::new("/sb/web"),
        proofgraph_sandbox::World::default(),
        PathBuf::from("/l"),
    );
    assert_eq!(get(&vars(&other.env), "npm_config_cache"), None);
}

/// A kept cargo build directory: given only when the run's times follow content, one per
/// environment and set of layers, the same across runs, never chosen by a secret's value.
#[test]
fn a_kept_cargo_build_directory_is_chosen_by_the_job_s_environment_and_layers() {
    let mut cargo = provider("cargo", Adapter::Command, &["cargo", "test"]);
    cargo.env_from = Some(vec![at(name("TOKEN"))]);
    let graph = seal(vec![cargo], Vec::new());
    let mut fixture = Fixture::new(&graph);
    fixture.caches = BTreeMap::from([(
        RepoId::root(),
        vec![(
            CacheKind::CargoBuild,
            PathBuf::from("/store/caches/root/cargo-build"),
        )],
    )]);
    let target = |fixture: &Fixture, seen: Vec<Seen>| {
        let p = node(&graph, "cargo");
        let prepared = fixture.jobs().prepare(p, seen).expect("prepared");
        let dir = vars(&prepared.key.env)
            .into_iter()
            .find(|(n, _)| n == "CARGO_TARGET_DIR")
            .map(|(_, v)| v);
        (dir, prepared.cargo_tmp)
    };
    // In place, or without times from content: nothing kept.
    assert_eq!(target(&fixture, whole()), (None, None));
    fixture.stamped = true;
    let (dir, tmp) = target(&fixture, whole());
    let dir = dir.expect("a kept directory");
    assert!(dir.starts_with("/store/caches/root/cargo-build/"), "{dir}");
    assert_eq!(tmp, Some(PathBuf::from(&dir).join("tmp")));
    // The same in another run, and whatever the secret holds.
    fixture.caller = env(&[("PATH", "/usr/bin"), ("TOKEN", "another-secret")]);
    assert_eq!(target(&fixture, whole()).0.as_deref(), Some(dir.as_str()));
    // Another environment, another directory.
    fixture.caller = env(&[("PATH", "/opt/bin:/usr/bin"), ("TOKEN", "a-long-secret")]);
    let other_env = target(&fixture, whole()).0.expect("kept");
    assert_ne!(other_env, dir);
    // Other layers (a narrowed view; a kept setup tree over it), other directories.
    let narrowed = vec![Seen {
        repo: RepoId::root(),
        layers: vec![PathBuf::from("/runs/r/views/1/root")],
        ids: vec!["0f".to_owned()],
    }];
    let set_up = vec![Seen {
        repo: RepoId::root(),
        layers: vec![
            PathBuf::from("/store/setup-trees/ab"),
            PathBuf::from("/sb/root"),
        ],
        ids: vec!["/store/setup-trees/ab".to_owned(), "all".to_owned()],
    }];
    let dirs = [
        other_env,
        target(&fixture, narrowed).0.expect("kept"),
        target(&fixture, set_up).0.expect("kept"),
    ];
    assert_eq!(dirs.iter().collect::<BTreeSet<_>>().len(), 3, "{dirs:?}");
}

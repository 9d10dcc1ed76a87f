//! Scale benchmark: build, seal (preflight included) and fingerprint a
//! generated graph of 10 000 providers with random `dependsOn` edges and
//! resources. Prints wall time per phase (best and median of several runs)
//! and the peak heap allocated during one build+seal+fingerprint.
//!
//! Run: `cargo bench -p proofgraph-graph --bench scale` (targets: < 100 ms
//! and < 50 MB on the reference machine; see BENCHMARKS.md).

#![expect(
    unsafe_code,
    reason = "a counting global allocator needs `unsafe impl GlobalAlloc`"
)]
#![expect(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use proofgraph_graph::fingerprint::{Digest, Inputs, Platform, World};
use proofgraph_graph::model::{Claim, Provider};
use proofgraph_graph::span::{Pos, Spanned};
use proofgraph_graph::{
    Adapter, CapabilityName, ClaimId, EnvName, GraphBuilder, ProviderId, RepoId, Repositories,
    ResourceName,
};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const PROVIDERS: usize = 10_000;

/// A small deterministic generator (xorshift), so every run builds the same graph.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn at<T>(v: T) -> Spanned<T> {
    Spanned::new(v, Pos::new(1, 1))
}

fn generate() -> (Vec<Claim>, Vec<Provider>) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pool = [
        "workspace-read:api",
        "workspace-read:web",
        "workspace-write:web",
        "browser:web",
        "database:test",
        "port:4173",
        "port:4174",
    ];
    let capabilities = [
        "test",
        "integration",
        "static-analysis",
        "compatibility",
        "performance",
    ];
    let claims = (0..100)
        .map(|i| {
            let cap = CapabilityName::parse(capabilities[i % capabilities.len()]).expect("valid");
            Claim::new(ClaimId::parse(&format!("claim-{i}")).expect("valid"), [cap])
        })
        .collect();
    let providers = (0..PROVIDERS)
        .map(|i| {
            let mut p = Provider::new(
                ProviderId::parse(&format!("p{i:05}")).expect("valid"),
                Adapter::Command,
            );
            p.capability = Some(at(CapabilityName::parse(
                capabilities[i % capabilities.len()],
            )
            .expect("valid")));
            p.command = Some(at(vec![
                "sh".to_owned(),
                "scripts/run.sh".to_owned(),
                format!("--case={i}"),
            ]));
            p.repository = Some(at(
                RepoId::parse(if i % 2 == 0 { "web" } else { "api" }).expect("valid")
            ));
            if i > 0 {
                let deps: BTreeSet<usize> = (0..rng.below(4)).map(|_| rng.below(i)).collect();
                if !deps.is_empty() {
                    p.depends_on = Some(
                        deps.into_iter()
                            .map(|d| at(ProviderId::parse(&format!("p{d:05}")).expect("valid")))
                            .collect(),
                    );
                }
            }
            let resources: BTreeSet<&str> = (0..rng.below(3))
                .map(|_| pool[rng.below(pool.len())])
                .collect();
            if !resources.is_empty() {
                p.resources = Some(
                    resources
                        .into_iter()
                        .map(|r| at(ResourceName::parse(r).expect("valid")))
                        .collect(),
                );
            }
            p.env = Some(BTreeMap::from([(
                EnvName::parse("NODE_ENV").expect("valid"),
                at("test".to_owned()),
            )]));
            p.timeout_ms = Some(at(60_000));
            p
        })
        .collect();
    (claims, providers)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let (claims, providers) = generate();
    let repos = Repositories {
        ids: ["web", "api"]
            .iter()
            .map(|r| RepoId::parse(r).expect("valid"))
            .collect(),
    };
    let file: Arc<str> = Arc::from("openspec/changes/scale/execution.yaml");
    let inputs = Inputs {
        digest: Digest::of(b"inputs"),
        files: 100,
    };
    let world = World {
        platform: Platform {
            os: "linux".to_owned(),
            arch: "x86_64".to_owned(),
        },
        inputs: providers
            .iter()
            .map(|p| (p.id.value.clone(), inputs))
            .collect(),
        executables: BTreeMap::new(),
        service_executables: BTreeMap::new(),
        repositories: repos.ids.iter().map(|r| (r.clone(), inputs)).collect(),
        setups: BTreeMap::new(),
        catalog: BTreeMap::new(),
    };
    // The machine's cores, as `prove` uses them (the graph crate reads no
    // environment; the caller passes the count).
    let threads = std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN);
    let runs: usize = std::env::var("PG_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    let (mut build, mut seal, mut fingerprint, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut peak = 0;
    let mut edges = 0;
    for run in 0..runs {
        let claims = claims.clone();
        let providers = providers.clone();
        let baseline = CURRENT.load(Ordering::Relaxed);
        PEAK.store(baseline, Ordering::Relaxed);
        let t0 = Instant::now();
        let mut builder = GraphBuilder::new(repos.clone());
        builder.claims(claims);
        for p in providers {
            builder.provider(p, Arc::clone(&file));
        }
        let t1 = Instant::now();
        if run == 1 && runs > 2 {
            let p0 = Instant::now();
            let findings = builder.check();
            assert!(findings.is_empty());
            println!("  (preflight alone: {})", ms(p0.elapsed()));
        }
        let t1 = if run == 1 && runs > 2 {
            Instant::now()
        } else {
            t1
        };
        let graph = builder
            .seal()
            .unwrap_or_else(|f| panic!("generated graph failed preflight: {:?}", &f[..1]));
        let t2 = Instant::now();
        let fps = graph
            .fingerprints_with(&world, threads)
            .expect("fingerprints");
        let t3 = Instant::now();
        assert_eq!(fps.providers.len(), PROVIDERS);
        edges = graph.edges().len();
        if run == 0 {
            peak = PEAK.load(Ordering::Relaxed) - baseline;
        }
        build.push(t1 - t0);
        seal.push(t2 - t1);
        fingerprint.push(t3 - t2);
        total.push(t3 - t0);
    }
    println!(
        "graph scale benchmark: {PROVIDERS} providers, {edges} dependsOn edges, 100 claims, {runs} runs, {threads} fingerprint threads"
    );
    println!(
        "  build        median {:>9}   best {:>9}",
        ms(median(build.clone())),
        ms(*build.iter().min().expect("runs"))
    );
    println!(
        "  seal         median {:>9}   best {:>9}   (preflight + DAG + stable order)",
        ms(median(seal.clone())),
        ms(*seal.iter().min().expect("runs"))
    );
    println!(
        "  fingerprint  median {:>9}   best {:>9}",
        ms(median(fingerprint.clone())),
        ms(*fingerprint.iter().min().expect("runs"))
    );
    println!(
        "  total        median {:>9}   best {:>9}   target < 100 ms",
        ms(median(total.clone())),
        ms(*total.iter().min().expect("runs"))
    );
    println!(
        "  peak heap    {:.1} MB allocated during one build+seal+fingerprint   target < 50 MB",
        peak as f64 / 1_048_576.0
    );
    // The whole process, input generation and all runs included (Linux only).
    #[expect(
        clippy::disallowed_methods,
        reason = "the graph crate has no fs-err; this is a benchmark reading /proc"
    )]
    let status = std::fs::read_to_string("/proc/self/status");
    if let Ok(status) = status
        && let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:"))
    {
        println!(
            "  process peak RSS {}",
            line.trim_start_matches("VmHWM:").trim()
        );
    }
}

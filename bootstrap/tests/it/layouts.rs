//! Project layouts written into temporary directories, the way real
//! projects lay them out, plus claim and provider constructors.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bootstrap::{Host, Repo};
use proofgraph_graph::model::{Claim, Provider};
use proofgraph_graph::span::{Pos, Spanned};
use proofgraph_graph::{Adapter, CapabilityName, ClaimId, ProviderId, RepoId};

/// Writes `files` (path, contents) under `dir`.
pub(crate) fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, contents) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).expect("create a fixture directory");
        }
        fs_err::write(&path, contents).expect("write a fixture file");
    }
}

/// A fresh temporary directory.
pub(crate) fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// A repository.
pub(crate) fn repo(id: &str, dir: &Path) -> Repo {
    Repo::new(
        RepoId::parse(id).expect("a valid repository id"),
        dir.to_path_buf(),
    )
}

/// The single repository of a workspace without a catalog.
pub(crate) fn root(dir: &Path) -> Vec<Repo> {
    vec![Repo::new(RepoId::root(), dir.to_path_buf())]
}

/// Every program a proposal may run, as executable stubs.
pub(crate) const PROGRAMS: [&str; 13] = [
    "sh",
    "node",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "cargo",
    "cargo-nextest",
    "go",
    "python3",
    "uv",
    "poetry",
    "pdm",
];

/// A directory of executable stubs named `programs`.
pub(crate) fn bin_dir(programs: &[&str]) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp();
    for name in programs {
        let path = dir.path().join(name);
        fs_err::write(&path, "#!/bin/sh\nexit 0\n").expect("write a stub program");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make the stub executable");
    }
    dir
}

/// A host whose PATH has every program of [`PROGRAMS`], so the rule table
/// is tested apart from what this machine has installed.
pub(crate) fn host() -> Host {
    static BIN: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = BIN.get_or_init(|| bin_dir(&PROGRAMS));
    Host {
        path: vec![dir.path().to_path_buf()],
        in_place: false,
        python_imports: Vec::new(),
    }
}

/// A host whose PATH has every program of [`PROGRAMS`] but `missing`.
pub(crate) fn host_without(missing: &[&str]) -> (Host, tempfile::TempDir) {
    let programs: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| !missing.contains(p))
        .collect();
    let dir = bin_dir(&programs);
    let host = Host {
        path: vec![dir.path().to_path_buf()],
        in_place: false,
        python_imports: Vec::new(),
    };
    (host, dir)
}

/// A claim requiring `caps`, naming `repos` when given.
pub(crate) fn claim(id: &str, caps: &[&str], repos: Option<&[&str]>) -> Claim {
    let mut c = Claim::new(
        ClaimId::parse(id).expect("a valid claim id"),
        caps.iter()
            .map(|c| CapabilityName::parse(c).expect("a valid capability")),
    );
    c.repositories = repos.map(|rs| {
        rs.iter()
            .map(|r| {
                Spanned::new(
                    RepoId::parse(r).expect("a valid repository id"),
                    Pos::default(),
                )
            })
            .collect()
    });
    c
}

fn s<T>(value: T) -> Spanned<T> {
    Spanned::new(value, Pos::default())
}

/// A provider with `adapter`, `command` and optional fields.
pub(crate) fn provider(name: &str, adapter: Adapter, command: &[&str]) -> Provider {
    let mut p = Provider::new(
        ProviderId::parse(name).expect("a valid provider id"),
        adapter,
    );
    if !command.is_empty() {
        p.command = Some(s(command.iter().map(|w| (*w).to_owned()).collect()));
    }
    p
}

/// Sets `inputs`.
pub(crate) fn with_inputs(mut p: Provider, inputs: &[&str]) -> Provider {
    p.inputs = Some(inputs.iter().map(|i| s((*i).to_owned())).collect());
    p
}

/// Sets `report`.
pub(crate) fn with_report(mut p: Provider, report: &str) -> Provider {
    p.report = Some(s(report.to_owned()));
    p
}

/// Sets `repository`.
pub(crate) fn with_repository(mut p: Provider, repo: &str) -> Provider {
    p.repository = Some(s(RepoId::parse(repo).expect("a valid repository id")));
    p
}

/// Sets `capability`.
pub(crate) fn with_capability(mut p: Provider, cap: &str) -> Provider {
    p.capability = Some(s(CapabilityName::parse(cap).expect("a valid capability")));
    p
}

/// Sets `service`.
pub(crate) fn with_service(mut p: Provider, service: &str) -> Provider {
    p.services = Some(vec![s(
        proofgraph_graph::ServiceId::parse(service).expect("a valid service id")
    )]);
    p
}

pub(crate) const VITE_PACKAGE: &str = r#"{
  "name": "profile-web",
  "private": true,
  "version": "0.1.0",
  "type": "module",
  "scripts": {
    "dev": "vite",
    "build": "tsc -b && vite build",
    "test": "vitest",
    "test:e2e": "playwright test",
    "lint": "eslint ."
  },
  "dependencies": {
    "react": "^19.1.0"
  },
  "devDependencies": {
    "@playwright/test": "^1.54.0",
    "eslint": "^9.30.0",
    "typescript": "~5.8.3",
    "vite": "^7.0.0",
    "vitest": "^3.2.4"
  }
}
"#;

pub(crate) const PLAYWRIGHT_CONFIG: &str = r#"import { defineConfig, devices } from '@playwright/test';

export default defineConfig({
  testDir: './e2e',
  fullyParallel: true,
  reporter: 'html',
  use: { baseURL: 'http://localhost:5173', trace: 'on-first-retry' },
  projects: [
    { name: 'chromium', use: { ...devices['Desktop Chrome'] } },
    { name: 'firefox', use: { ...devices['Desktop Firefox'] } },
  ],
  webServer: {
    command: 'npm run dev',
    url: 'http://localhost:5173',
    reuseExistingServer: !process.env.CI,
  },
});
"#;

/// A Vite + Vitest + Playwright app (npm).
pub(crate) fn vite_app(dir: &Path) {
    write(
        dir,
        &[
            ("package.json", VITE_PACKAGE),
            (
                "package-lock.json",
                "{\n  \"name\": \"profile-web\",\n  \"lockfileVersion\": 3,\n  \"requires\": true,\n  \"packages\": {}\n}\n",
            ),
            ("playwright.config.ts", PLAYWRIGHT_CONFIG),
            (
                "tsconfig.json",
                "{ \"compilerOptions\": { \"strict\": true } }\n",
            ),
            (
                "vite.config.ts",
                "import { defineConfig } from 'vite';\nexport default defineConfig({});\n",
            ),
            (
                "src/profile.ts",
                "export const greet = (name: string) => `hi ${name}`;\n",
            ),
            (
                "src/profile.test.ts",
                "import { test, expect } from 'vitest';\nimport { greet } from './profile';\ntest('greets', () => expect(greet('a')).toBe('hi a'));\n",
            ),
            (
                "e2e/profile.spec.ts",
                "import { test } from '@playwright/test';\ntest('owner updates profile', { annotation: { type: 'claim', description: 'profile-update' } }, async ({ page }) => { await page.goto('/'); });\n",
            ),
        ],
    );
}

/// A Jest app managed by pnpm.
pub(crate) fn jest_app(dir: &Path) {
    write(
        dir,
        &[
            (
                "package.json",
                r#"{
  "name": "billing",
  "version": "1.0.0",
  "scripts": {
    "test": "jest --coverage",
    "typecheck": "tsc --noEmit",
    "lint": "eslint src"
  },
  "devDependencies": {
    "jest": "^29.7.0",
    "typescript": "^5.4.0"
  }
}
"#,
            ),
            ("pnpm-lock.yaml", "lockfileVersion: '9.0'\n"),
            ("src/sum.js", "module.exports = (a, b) => a + b;\n"),
            (
                "src/sum.test.js",
                "const sum = require('./sum');\ntest('adds', () => expect(sum(1, 2)).toBe(3));\n",
            ),
        ],
    );
}

/// A Rust library crate with a unit test and a doctest.
pub(crate) fn cargo_crate(dir: &Path) {
    write(
        dir,
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"profile-core\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
            ),
            (
                "src/lib.rs",
                "//! Profiles.\n\n/// Doubles.\n///\n/// ```\n/// assert_eq!(profile_core::double(2), 4);\n/// ```\npub fn double(x: u64) -> u64 {\n    x * 2\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(3), 6);\n    }\n}\n",
            ),
        ],
    );
}

/// A pytest project configured in pyproject.toml.
pub(crate) fn pytest_project(dir: &Path) {
    write(
        dir,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"profile\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n\n[project.optional-dependencies]\ntest = [\"pytest>=8\"]\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n\n[tool.ruff]\nline-length = 100\n",
            ),
            ("profile.py", "def double(x):\n    return x * 2\n"),
            (
                "tests/test_profile.py",
                "from profile import double\n\ndef test_double():\n    assert double(2) == 4\n\ndef test_zero():\n    assert double(0) == 0\n",
            ),
        ],
    );
}

/// A Go module with tests and a subtest.
pub(crate) fn go_module(dir: &Path) {
    write(
        dir,
        &[
            ("go.mod", "module example.com/profile\n\ngo 1.19\n"),
            (
                "profile.go",
                "package profile\n\nfunc Double(x int) int { return x * 2 }\n",
            ),
            (
                "profile_test.go",
                "package profile\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tt.Run(\"zero\", func(t *testing.T) {\n\t\tif Double(0) != 0 {\n\t\t\tt.Fatal(\"bad\")\n\t\t}\n\t})\n}\n",
            ),
        ],
    );
}

/// A path under a temporary directory.
pub(crate) fn sub(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

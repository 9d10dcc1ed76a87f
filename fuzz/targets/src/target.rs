//! The fuzz targets by name, what each runs, and the tokens a mutator splices into its
//! inputs (the structure a byte-level mutator cannot guess).

use std::fmt::Write as _;

/// One fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// [`super::config`]: configuration files to a sealed graph.
    Config,
    /// [`super::report`]: test reports in every format.
    Report,
    /// [`super::envelope`]: DSSE envelopes.
    Envelope,
    /// [`super::pem`]: PEM keys.
    Pem,
    /// [`super::store`]: the store's entries.
    Store,
    /// [`super::receipt`]: signed statements read back as receipts and external results.
    Receipt,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 6] = [
        Target::Config,
        Target::Report,
        Target::Envelope,
        Target::Pem,
        Target::Store,
        Target::Receipt,
    ];

    /// The target's name (its fuzzer binary, its corpus and regression directories).
    pub fn name(self) -> &'static str {
        match self {
            Target::Config => "config",
            Target::Report => "report",
            Target::Envelope => "envelope",
            Target::Pem => "pem",
            Target::Store => "store",
            Target::Receipt => "receipt",
        }
    }

    /// The target named `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Runs one input; panics when an invariant does not hold.
    pub fn run(self, data: &[u8]) {
        match self {
            Target::Config => super::config::run(data),
            Target::Report => super::report::run(data),
            Target::Envelope => super::envelope::run(data),
            Target::Pem => super::pem::run(data),
            Target::Store => super::store::run(data),
            Target::Receipt => super::receipt::run(data),
        }
    }

    /// Tokens worth inserting into this target's inputs.
    pub fn dictionary(self) -> Vec<&'static str> {
        let (tokens, numbers) = match self {
            Target::Config => (CONFIG_TOKENS, true),
            Target::Report => (REPORT_TOKENS, true),
            Target::Envelope => (ENVELOPE_TOKENS, false),
            Target::Pem => (PEM_TOKENS, false),
            Target::Store => (STORE_TOKENS, false),
            Target::Receipt => (RECEIPT_TOKENS, true),
        };
        let numbers = if numbers { NUMBERS } else { &[] };
        tokens.iter().chain(numbers).copied().collect()
    }

    /// [`Target::dictionary`] in libFuzzer's `-dict` file format.
    pub fn dictionary_file(self) -> String {
        let mut out = String::new();
        for token in self.dictionary() {
            out.push('"');
            for byte in token.bytes() {
                match byte {
                    b'"' | b'\\' => {
                        out.push('\\');
                        out.push(char::from(byte));
                    }
                    0x20..=0x7e => out.push(char::from(byte)),
                    _ => {
                        let _ = write!(out, "\\x{byte:02X}");
                    }
                }
            }
            out.push_str("\"\n");
        }
        out
    }
}

/// Numbers at the edges: zero, negatives, 2^53 and 2^64 and past them, floats, exponents.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1.5",
    "1e3",
    "1E400",
    "9007199254740991",
    "9007199254740992",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
];

const CONFIG_TOKENS: &[&str] = &[
    "\n",
    "\r\n",
    "  ",
    "\t",
    ": ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "\"",
    "'",
    "\\u0000",
    "\\ud800",
    "#",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "!!str ",
    "? ",
    "|\n",
    ">-\n",
    "~",
    "null",
    "true",
    "0x1F",
    "0o17",
    ".inf",
    ".nan",
    "\u{feff}",
    "version: 1\n",
    "version: 2\n",
    "providers:\n",
    "claims:\n",
    "  - id: ",
    "capabilities: [test]",
    "adapter: ",
    "command: ",
    "test-discovery",
    "playwright",
    "contract-digest",
    "external",
    "dependsOn: [",
    "services:\n",
    "service: ",
    "readiness:\n",
    "url: http://127.0.0.1:",
    "resources: [",
    "inputs: [",
    "repository: ",
    "repositories:\n",
    "reportFormat: ",
];

const REPORT_TOKENS: &[&str] = &[
    "<?xml version=\"1.0\"?>",
    "<testsuites",
    "<testsuite",
    "<testcase",
    "</testcase>",
    "<failure",
    "<error",
    "<skipped/>",
    "<system-out>",
    " tests=\"",
    " failures=\"",
    " errors=\"",
    " skipped=\"",
    " name=\"",
    " classname=\"",
    "&#",
    "&amp;",
    "<![CDATA[",
    "]]>",
    "<!DOCTYPE",
    "TAP version 14\n",
    "TAP version 13\n",
    "1..",
    "ok ",
    "not ok ",
    " # SKIP",
    " # TODO",
    "Bail out!",
    "  ---\n",
    "  ...\n",
    "    # Subtest: ",
    "{\"Action\":\"pass\"",
    "\"Action\":\"run\"",
    "\"Test\":\"",
    "\"Package\":\"",
    "{\"type\":\"test\"",
    "\"event\":\"ok\"",
    "\"event\":\"started\"",
    "\"test_count\":",
    "\"numTotalTests\":",
    "\"testResults\":[",
    "\"assertionResults\":[",
    "\"status\":\"passed\"",
    "\"status\":\"failed\"",
    "\"stats\":{",
    "\"suites\":[",
    "\"specs\":[",
    "\"tests\":[",
    "\"results\":[",
    "\"results\":{\"tool\":{",
    "\"summary\":{",
    "\"totalTests\":",
    "\"passes\":[",
    "\"annotations\":[{\"type\":\"",
    "\"critical-case\"",
];

const ENVELOPE_TOKENS: &[&str] = &[
    "{\"payload\":\"",
    "\"payloadType\":\"application/vnd.in-toto+json\"",
    "\"signatures\":[",
    "{\"keyid\":\"",
    "\"sig\":\"",
    "\",",
    "]}",
    "=",
    "==",
    "-",
    "_",
    "+",
    "/",
    "\\u0000",
    "\\ud83d\\ude00",
    "application/vnd.in-toto+json\n",
];

const PEM_TOKENS: &[&str] = &[
    "-----BEGIN PUBLIC KEY-----\n",
    "-----END PUBLIC KEY-----\n",
    "-----BEGIN PRIVATE KEY-----\n",
    "-----END PRIVATE KEY-----\n",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----",
    "-----BEGIN RSA PUBLIC KEY-----",
    "-----BEGIN EC PRIVATE KEY-----",
    "MCowBQYDK2VwAyEA",
    "MC4CAQAwBQYDK2VwBCIEI",
    "MFECAQEwBQYDK2VwBCIEI",
    "\\n",
    "\r\n",
    "\n",
    "  ",
    "=",
    "Proc-Type: 4,ENCRYPTED\n",
    "ssh-ed25519 AAAA",
];

const STORE_TOKENS: &[&str] = &[
    "sha256-",
    "0123456789abcdef",
    "ABCDEF",
    "\n",
    " ",
    "\t",
    "=",
    "-",
    "_",
    "+",
    "/",
];

const RECEIPT_TOKENS: &[&str] = &[
    "{\"_type\":\"https://in-toto.io/Statement/v1\"",
    "\"predicateType\":\"https://in-toto.io/attestation/test-result/v0.1\"",
    "\"subject\":[{\"name\":\"",
    "\"digest\":{\"sha256\":\"",
    "\"blake3\":\"",
    "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    "\"predicate\":{",
    "\"proofgraph\":{",
    "\"version\":1",
    "\"outcome\":\"pass\"",
    "\"outcome\":\"fail\"",
    "\"result\":\"PASSED\"",
    "\"failedTests\":[",
    "\"failedTests\":\"x\"",
    "\"passedTests\":[",
    "\"issuer\":\"https://ci.example/proofgraph\"",
    "\"claims\":[\"claim-a\",\"claim-b\"]",
    "9007199254740992",
    "18446744073709551616",
    "-1",
    "null",
];

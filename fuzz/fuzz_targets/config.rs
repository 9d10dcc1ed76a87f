//! libFuzzer entry point of the `config` target (`proofgraph::fuzz::config`).
#![no_main]

use proofgraph::fuzz::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Config),
    |data: &[u8]| Target::Config.run(data)
);

//! libFuzzer entry point of the `config` target (`proofgraph_fuzz_targets::config`).
#![no_main]

use proofgraph_fuzz_targets::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Config),
    |data: &[u8]| Target::Config.run(data)
);

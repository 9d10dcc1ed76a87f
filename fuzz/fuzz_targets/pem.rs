//! libFuzzer entry point of the `pem` target (`proofgraph_fuzz_targets::pem`).
#![no_main]

use proofgraph_fuzz_targets::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Pem),
    |data: &[u8]| Target::Pem.run(data)
);

//! libFuzzer entry point of the `pem` target (`proofgraph::fuzz::pem`).
#![no_main]

use proofgraph::fuzz::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Pem),
    |data: &[u8]| Target::Pem.run(data)
);

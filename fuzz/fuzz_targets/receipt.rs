//! libFuzzer entry point of the `receipt` target (`proofgraph::fuzz::receipt`).
#![no_main]

use proofgraph::fuzz::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Receipt),
    |data: &[u8]| Target::Receipt.run(data)
);

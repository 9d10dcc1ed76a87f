//! libFuzzer entry point of the `receipt` target (`proofgraph_fuzz_targets::receipt`).
#![no_main]

use proofgraph_fuzz_targets::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Receipt),
    |data: &[u8]| Target::Receipt.run(data)
);

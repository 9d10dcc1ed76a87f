//! libFuzzer entry point of the `store` target (`proofgraph_fuzz_targets::store`).
#![no_main]

use proofgraph_fuzz_targets::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Store),
    |data: &[u8]| Target::Store.run(data)
);

//! libFuzzer entry point of the `store` target (`proofgraph::fuzz::store`).
#![no_main]

use proofgraph::fuzz::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Store),
    |data: &[u8]| Target::Store.run(data)
);

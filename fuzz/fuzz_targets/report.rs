//! libFuzzer entry point of the `report` target (`proofgraph_fuzz_targets::report`).
#![no_main]

use proofgraph_fuzz_targets::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Report),
    |data: &[u8]| Target::Report.run(data)
);

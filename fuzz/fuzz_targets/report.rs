//! libFuzzer entry point of the `report` target (`proofgraph::fuzz::report`).
#![no_main]

use proofgraph::fuzz::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Report),
    |data: &[u8]| Target::Report.run(data)
);

//! libFuzzer entry point of the `envelope` target (`proofgraph_fuzz_targets::envelope`).
#![no_main]

use proofgraph_fuzz_targets::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Envelope),
    |data: &[u8]| Target::Envelope.run(data)
);

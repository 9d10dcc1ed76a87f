//! libFuzzer entry point of the `envelope` target (`proofgraph::fuzz::envelope`).
#![no_main]

use proofgraph::fuzz::Target;

libfuzzer_sys::fuzz_target!(
    init: proofgraph_fuzz::init(Target::Envelope),
    |data: &[u8]| Target::Envelope.run(data)
);

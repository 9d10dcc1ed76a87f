//! Judging evidence: reports into counts, counts and exits into verdicts, receipts into
//! each provider's status, signed external results into passes.

pub mod external;
pub mod judge;
pub mod report;
pub mod status;

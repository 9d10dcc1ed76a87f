//! Judging evidence: reports into counts, counts and exits into verdicts, receipts into
//! each provider's status, signed external results into passes; which providers reuse
//! their receipts, and where each runs.

pub mod action;
pub mod affected;
pub mod drift;
pub mod external;
pub mod judge;
pub mod placement;
pub mod report;
pub mod reproduce;
pub mod reuse;
pub mod status;

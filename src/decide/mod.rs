//! Judging evidence: reports into counts, counts and exits into verdicts, receipts into
//! each provider's status, signed external results into passes; which providers reuse
//! their receipts.

pub mod action;
pub mod affected;
pub mod drift;
pub mod external;
pub mod judge;
pub mod report;
pub mod reproduce;
pub mod reuse;
pub mod status;

//! Receipts: what a run signs and stores, and which keys are trusted to have signed it.

pub mod receipt;
pub mod travel;
pub mod trust;

//! The exit-code table, decided in exactly one function.
//!
//! | exit | meaning |
//! |---|---|
//! | 0 | success: everything required is proven; health findings alone still exit 0 |
//! | 1 | something ran and failed (a provider, a validation, a verification) |
//! | 2 | nothing failed but not everything is proven (pending, stale, inconclusive) |
//! | 3 | cannot evaluate: bad input, configuration, root, identity or preflight error |
//! | 130 | interrupted |

/// What a command concluded, in the terms of the exit-code table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Everything asked for holds.
    Success,
    /// Something ran and failed.
    Failed,
    /// Nothing failed, but not everything is proven.
    Unproven,
    /// The input could not be evaluated.
    Invalid,
    /// The run was interrupted.
    Interrupted,
}

/// The process exit code for a verdict.
pub fn process_exit_code(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Success => 0,
        Verdict::Failed => 1,
        Verdict::Unproven => 2,
        Verdict::Invalid => 3,
        Verdict::Interrupted => 130,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        let table = [
            (Verdict::Success, 0),
            (Verdict::Failed, 1),
            (Verdict::Unproven, 2),
            (Verdict::Invalid, 3),
            (Verdict::Interrupted, 130),
        ];
        for (verdict, code) in table {
            assert_eq!(process_exit_code(verdict), code, "{verdict:?}");
        }
    }
}

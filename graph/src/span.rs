//! Positions in configuration files, carried by every configured value so that
//! a finding about it can say where it was written.

use std::fmt;

/// A 1-based line and column (in characters) in a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in Unicode scalar values.
    pub column: u32,
}

impl Pos {
    /// A position from 1-based line and column numbers.
    pub fn new(line: u32, column: u32) -> Self {
        Self { line, column }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A value with the position it was written at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was written.
    pub pos: Pos,
}

impl<T> Spanned<T> {
    /// Pairs a value with its position.
    pub fn new(value: T, pos: Pos) -> Self {
        Self { value, pos }
    }
}

//! Where things are in JSON text: a scanner that records the byte span of
//! every value and member key, so `init` can insert new providers without
//! re-serialising (and so reformatting) anything that is already there.
//!
//! It runs only on text `serde_json` has already accepted, so it does not
//! re-validate; its nesting is bounded by `serde_json`'s recursion limit.

/// A JSON value and its byte span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// Where the value starts.
    pub(crate) start: usize,
    /// Just after the value.
    pub(crate) end: usize,
    /// What it is.
    pub(crate) kind: Kind,
}

/// The kind of a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An object and its members.
    Object(Vec<Member>),
    /// An array.
    Array,
    /// A string, number, boolean or null.
    Scalar,
}

/// One object member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// The decoded key.
    pub(crate) key: String,
    /// Where the key's opening quote is.
    pub(crate) key_start: usize,
    /// The value.
    pub(crate) value: Node,
}

/// Scans valid JSON text.
pub(crate) fn scan(text: &str) -> Option<Node> {
    let mut s = Scanner {
        bytes: text.as_bytes(),
        text,
        at: 0,
    };
    s.ws();
    s.value()
}

struct Scanner<'t> {
    bytes: &'t [u8],
    text: &'t str,
    at: usize,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn value(&mut self) -> Option<Node> {
        let start = self.at;
        match self.bytes.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                loop {
                    self.ws();
                    match self.bytes.get(self.at)? {
                        b'}' => {
                            self.at += 1;
                            break;
                        }
                        b',' => {
                            self.at += 1;
                        }
                        b'"' => {
                            let key_start = self.at;
                            self.string()?;
                            let key: String =
                                serde_json::from_str(self.text.get(key_start..self.at)?).ok()?;
                            self.ws();
                            if self.bytes.get(self.at)? != &b':' {
                                return None;
                            }
                            self.at += 1;
                            self.ws();
                            let value = self.value()?;
                            members.push(Member {
                                key,
                                key_start,
                                value,
                            });
                        }
                        _ => return None,
                    }
                }
                Some(Node {
                    start,
                    end: self.at,
                    kind: Kind::Object(members),
                })
            }
            b'[' => {
                self.at += 1;
                loop {
                    self.ws();
                    match self.bytes.get(self.at)? {
                        b']' => {
                            self.at += 1;
                            break;
                        }
                        b',' => self.at += 1,
                        _ => {
                            self.value()?;
                        }
                    }
                }
                Some(Node {
                    start,
                    end: self.at,
                    kind: Kind::Array,
                })
            }
            b'"' => {
                self.string()?;
                Some(Node {
                    start,
                    end: self.at,
                    kind: Kind::Scalar,
                })
            }
            _ => {
                while self.bytes.get(self.at).is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.at += 1;
                }
                (self.at > start).then_some(Node {
                    start,
                    end: self.at,
                    kind: Kind::Scalar,
                })
            }
        }
    }

    fn string(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            match self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }
}

/// The whitespace before `at` on its line, if only whitespace precedes it
/// there (so the value starts its line).
pub(crate) fn line_indent(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..at];
    prefix
        .chars()
        .all(|c| c == ' ' || c == '\t')
        .then_some(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_spans_of_members() {
        let text = "{\n  \"a\": [1, {\"x\": \"}\"}],\n  \"b\\u0021\": {}\n}\n";
        let root = scan(text).expect("valid");
        let Kind::Object(members) = &root.kind else {
            panic!("object expected");
        };
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].key, "a");
        assert_eq!(
            &text[members[0].value.start..members[0].value.end],
            "[1, {\"x\": \"}\"}]"
        );
        assert_eq!(members[1].key, "b!");
        assert_eq!(&text[members[1].value.start..members[1].value.end], "{}");
        assert_eq!(line_indent(text, members[1].key_start), Some("  "));
        assert_eq!(line_indent(text, members[1].value.start), None);
    }
}

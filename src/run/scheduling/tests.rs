//! Unit tests of [`super`].

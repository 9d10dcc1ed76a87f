//! Shared helpers: temporary OpenSpec trees and running the binary.

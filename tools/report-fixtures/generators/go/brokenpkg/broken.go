// Package brokenpkg exists to fail to compile its tests (a build failure).
package brokenpkg

// Value returns a constant.
func Value() int { return 1 }

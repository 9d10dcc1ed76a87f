// Package mathpkg is a throwaway package for proofgraph's go test fixtures.
package mathpkg

// Add adds two integers.
func Add(a, b int) int { return a + b }

package brokenpkg

import "testing"

func TestNeverCompiles(t *testing.T) {
	var x int = "not an int" // compile error on purpose
	_ = x
}

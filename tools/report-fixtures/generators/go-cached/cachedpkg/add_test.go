package cachedpkg

import "testing"

func TestAdd(t *testing.T) {
	t.Log("adding")
	if Add(1, 2) != 3 {
		t.Fatal("1+2 != 3")
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not ready")
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name    string
		a, b, w int
	}{{"positives", 1, 2, 3}, {"negatives", -1, -2, -3}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Add(c.a, c.b); got != c.w {
				t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.w)
			}
		})
	}
}

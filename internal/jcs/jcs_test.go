package jcs

import "testing"

func TestSameDecimal(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"1", "1e0", true},
		{"1", "1.000", true},
		{"10", "1e1", true},
		{"0.001", "1e-3", true},
		{"-0", "0", true},
		{"0", "0e5", true},
		{"1", "-1", false},
		{"1", "10", false},
		{"123", "1.23e+2", true},
		{"1.5", "15e-1", true},
		{"1e1099511627776", "1e1099511627777", true}, // saturated alike: never compared with a double's form
	}
	for _, tt := range tests {
		if got := sameDecimal(tt.a, tt.b); got != tt.want {
			t.Errorf("sameDecimal(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

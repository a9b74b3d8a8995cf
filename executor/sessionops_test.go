package executor

import "testing"

func TestParseForward(t *testing.T) {
	for _, tc := range []struct {
		spec          string
		local, remote int
		ok            bool
	}{
		{"8080", 0, 8080, true},
		{"9000:8080", 9000, 8080, true},
		{"0:1", 0, 1, true},
		{"8080x", 0, 0, false},
		{"x:80", 0, 0, false},
		{"80:0", 0, 0, false},
		{"70000:80", 0, 0, false},
		{"1:2:3", 0, 0, false},
		{"", 0, 0, false},
	} {
		l, r, err := ParseForward(tc.spec)
		if (err == nil) != tc.ok || l != tc.local || r != tc.remote {
			t.Errorf("ParseForward(%q) = %d, %d, %v", tc.spec, l, r, err)
		}
	}
}

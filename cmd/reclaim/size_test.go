package reclaim

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "4.0K": 4096, "1.5M": 3 << 19, "2G": 2 << 30, "1g": 1 << 30,
		"3KiB": 3072, "3KB": 3072, "1T": 1 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "K", "-1K", "1e3", "0x10", "1.2.3M", "1Q", "1_000", "B", "12 M"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

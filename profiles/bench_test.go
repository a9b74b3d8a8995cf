package profiles

import (
	"fmt"
	"testing"
)

// benchDefinitions builds n definitions over about n/2 keys: literal pairs
// resolved by precedence, merged secrets, and single definitions.
func benchDefinitions(n int) []Definition {
	defs := make([]Definition, 0, n)
	for i := 0; len(defs) < n; i++ {
		key := fmt.Sprintf("KEY_%07d", i)
		switch i % 3 {
		case 0:
			defs = append(defs, lit(key, AP, "agent"), lit(key, EP, "profile"))
		case 1:
			defs = append(defs, sec(key, RepositoryOrigin("app"), "s1"), sec(key, EP, "s1"))
		default:
			defs = append(defs, lit(key, MR, "runtime"))
		}
	}
	return defs[:n]
}

func benchmarkResolve(b *testing.B, n int) {
	defs := benchDefinitions(n)
	reveal := func(Ref) (string, error) { return "secret", nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Resolve(defs, reveal); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve10(b *testing.B)     { benchmarkResolve(b, 10) }
func BenchmarkResolve1000(b *testing.B)   { benchmarkResolve(b, 1000) }
func BenchmarkResolve100000(b *testing.B) { benchmarkResolve(b, 100000) }

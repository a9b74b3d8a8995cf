package reclaim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kdlbs/kandev-exec/cmd/cmdutil"
)

// sizeUnits are the suffixes `du -h` prints, each 1024 times the last.
const sizeUnits = "KMGTPE"

// sizeFlag is a size as `du -h` prints it: a number (a fraction too),
// then K, M, G, T, P or E (any case, an optional B or iB after it), or
// none for bytes.
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s == 0 {
		return "0"
	}
	return cmdutil.Bytes(int64(*s))
}

func (s *sizeFlag) Type() string { return "size" }

func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func parseSize(v string) (int64, error) {
	bad := fmt.Errorf("%q is not a size as du -h prints it (e.g. 512K, 1.5G, 200M)", v)
	num := strings.ToUpper(strings.TrimSpace(v))
	for _, tail := range []string{"IB", "B"} {
		if u, ok := strings.CutSuffix(num, tail); ok && u != "" && strings.IndexByte(sizeUnits, u[len(u)-1]) >= 0 {
			num = u
			break
		}
	}
	mult := 1.0
	if n := len(num); n > 0 {
		if i := strings.IndexByte(sizeUnits, num[n-1]); i >= 0 {
			mult, num = unitSize(i), num[:n-1]
		}
	}
	// Digits and one point only: no sign, exponent, hex or underscores.
	if num == "" || strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 {
		return 0, bad
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f*mult > 1<<62 {
		return 0, bad
	}
	return int64(f * mult), nil
}

// unitSize is the size of sizeUnits[i]: 1024 to the power i+1.
func unitSize(i int) float64 {
	m := 1.0
	for range i + 1 {
		m *= 1024
	}
	return m
}

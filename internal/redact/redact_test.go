package redact

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// run writes in through a Writer in chunks of the given sizes (cycled),
// then flushes.
func run(t testing.TB, secrets []string, in string, sizes []int) string {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, secrets)
	longest := 0
	for _, p := range w.patterns {
		longest = max(longest, len(p))
	}
	for i, k := 0, 0; i < len(in); k++ {
		n := min(max(1, sizes[k%len(sizes)]), len(in)-i)
		if _, err := w.Write([]byte(in[i : i+n])); err != nil {
			t.Fatal(err)
		}
		if len(w.pending) >= max(longest, 1) {
			t.Fatalf("holds back %d bytes, longest secret %d", len(w.pending), longest)
		}
		i += n
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// oracle masks in all at once: every byte inside an occurrence of a
// pattern is secret, and each run of overlapping occurrences becomes one
// Mask.
func oracle(in string, patterns [][]byte) string {
	end := make([]int, len(in)) // furthest end of an occurrence starting at i
	for i := range in {
		for _, p := range patterns {
			if strings.HasPrefix(in[i:], string(p)) {
				end[i] = max(end[i], i+len(p))
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(in); {
		if end[i] == 0 {
			b.WriteByte(in[i])
			i++
			continue
		}
		e := end[i]
		for j := i + 1; j < e; j++ {
			e = max(e, end[j])
		}
		b.WriteString(Mask)
		i = e
	}
	return b.String()
}

func TestWriterTable(t *testing.T) {
	const key = "-----BEGIN KEY-----\nMIIEpAIBAAKCAQEA\n  q9Zx\nab\n-----END KEY-----\n"
	cases := []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"no secrets", nil, "plain text", "plain text"},
		{"empty secret ignored", []string{""}, "plain", "plain"},
		{"one secret", []string{"hunter2"}, "pw=hunter2.", "pw=***."},
		{"adjacent occurrences stay apart", []string{"abcd"}, "abcdabcd", "******"},
		{"longest wins", []string{"abcd", "abcdefg"}, "xabcdefgx abcdx", "x***x ***x"},
		{"overlap is one stretch", []string{"abcd", "cdefgh"}, "abcdefgh!", "***!"},
		{"prefix at the end is not a secret", []string{"hunter2"}, "hunter", "hunter"},
		{"multi-line secret whole", []string{key}, "k=" + key + "done", "k=***done"},
		{"each long line alone", []string{key}, "line MIIEpAIBAAKCAQEA here", "line *** here"},
		{"line trimmed of indentation", []string{key}, "got q9Zx!", "got ***!"},
		{"short line not masked", []string{key}, "ab cd", "ab cd"},
		{"armour lines are lines too", []string{key}, "-----END KEY-----", "***"},
		{"CRLF secret", []string{"first-line\r\nsecond-line"}, "a first-line b second-line\n", "a *** b ***\n"},
		{"line of a secret in a longer word", []string{"xx\nSECRET"}, "preSECRETpost", "pre***post"},
	}
	for _, c := range cases {
		for _, size := range []int{1, 2, 3, 7, 1 << 20} {
			if got := run(t, c.secrets, c.in, []int{size}); got != c.want {
				t.Errorf("%s (writes of %d): %q, want %q", c.name, size, got, c.want)
			}
		}
	}
}

// A value shorter than MinLen bytes cannot be told from ordinary text:
// masking "a" would turn every a of the output into ***. It passes
// through; one of MinLen bytes is masked, and so is a multi-line value
// however short its lines.
func TestShortValuesPassThrough(t *testing.T) {
	cases := []struct {
		secret, in, want string
		unmasked         bool
	}{
		{"a", "a banana says a", "a banana says a", true},
		{"abc", "abc abcd", "abc abcd", true},
		{"abcd", "abc abcd", "abc ***", false},
		{"ab\ncd", "x ab\ncd y ab cd", "x *** y ab cd", false},
		{"", "plain", "plain", false},
	}
	for _, c := range cases {
		if got := run(t, []string{c.secret}, c.in, []int{1 << 20}); got != c.want {
			t.Errorf("secret %q: %q, want %q", c.secret, got, c.want)
		}
		if got := Unmasked(c.secret); got != c.unmasked {
			t.Errorf("Unmasked(%q) = %v, want %v", c.secret, got, c.unmasked)
		}
	}
}

func TestPatternsOfMultiLineSecret(t *testing.T) {
	got := patterns([]string{"ab\r\n  long-line  \nxyz\nwxyz", "solo", "solo", ""})
	var s []string
	for _, p := range got {
		s = append(s, string(p))
	}
	want := []string{"ab\r\n  long-line  \nxyz\nwxyz", "long-line", "solo", "wxyz"}
	if strings.Join(s, "|") != strings.Join(want, "|") {
		t.Fatalf("patterns %q, want %q", s, want)
	}
}

func TestWriteAfterFlushDropped(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, []string{"secret"})
	w.Write([]byte("a secr"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("et"))
	if out.String() != "a secr" {
		t.Fatalf("%q", out.String())
	}
}

// However the input is cut into writes, the output is what masking it all
// at once gives, and no secret and no masked line gets through.
func TestWriterAnyChunkingMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := "ab\n c"
	randText := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 3000 {
		var secrets []string
		for range 1 + rng.IntN(3) {
			secrets = append(secrets, randText(1+rng.IntN(12)))
		}
		// Input: random text with whole secrets, their lines and their
		// prefixes spliced in.
		var in strings.Builder
		for range rng.IntN(8) {
			in.WriteString(randText(rng.IntN(6)))
			s := secrets[rng.IntN(len(secrets))]
			switch rng.IntN(3) {
			case 0:
				in.WriteString(s)
			case 1:
				lines := strings.Split(s, "\n")
				in.WriteString(lines[rng.IntN(len(lines))])
			default:
				in.WriteString(s[:rng.IntN(len(s))])
			}
		}
		sizes := make([]int, 1+rng.IntN(5))
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(10)
		}
		ps := patterns(secrets)
		want := oracle(in.String(), ps)
		got := run(t, secrets, in.String(), sizes)
		if got != want {
			t.Fatalf("round %d: secrets %q, input %q, writes %v:\n got %q\nwant %q", round, secrets, in.String(), sizes, got, want)
		}
		for _, p := range ps {
			if strings.Contains(got, string(p)) {
				t.Fatalf("round %d: %q got through in %q", round, p, got)
			}
		}
	}
}

func FuzzWriter(f *testing.F) {
	f.Add("-----BEGIN-----\nAAAA\nbb", "x -----BEGIN----- AAAA bb", uint64(3))
	f.Add("abcd", "ababcdabcd", uint64(1))
	f.Fuzz(func(t *testing.T, secret, in string, seed uint64) {
		if len(in) > 4096 {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		sizes := make([]int, 1+rng.IntN(8))
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(16)
		}
		got := run(t, []string{secret}, in, sizes)
		if want := oracle(in, patterns([]string{secret})); got != want {
			t.Fatalf("writes %v: %q, want %q", sizes, got, want)
		}
	})
}

// Package suggest finds the known names a mistyped one was probably meant
// to be, for "did you mean" in errors about unknown keys.
package suggest

import (
	"strings"
)

// Closest returns the known names close to word, best first: those
// within a small edit distance (one edit for words of up to four
// characters, two past that; case, '-' and '_' ignored), then those
// sharing a long start with it: one is a prefix of the other ("repos" for
// "repositories", "hostname" for "host"), or they differ only in their
// last three characters ("repository"). Starts shorter than three
// characters never count: "e" means nothing.
func Closest(word string, known []string) []string {
	w := fold(word)
	maxEdits := 2
	if len(w) <= 4 {
		maxEdits = 1
	}
	var near, prefixed []string
	for _, k := range known {
		kf := fold(k)
		common := commonPrefix(kf, w)
		shorter := min(len(kf), len(w))
		switch {
		case distance(kf, w) <= maxEdits:
			near = append(near, k)
		case common >= 3 && (common == shorter || common >= shorter-3):
			prefixed = append(prefixed, k)
		}
	}
	return append(near, prefixed...)
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Phrase is " (did you mean a or b?)" for the names Closest finds, else "".
func Phrase(word string, known []string) string {
	s := Closest(word, known)
	if len(s) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(s, " or ") + "?)"
}

func fold(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

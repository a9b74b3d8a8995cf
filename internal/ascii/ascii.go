// Package ascii checks short identifiers (task directory segments,
// repository names, environment keys, claim ids, git object ids) byte by
// byte. It is what the host side needs of regexp, which the helper does
// not link: it would carry a regular expression engine for six
// character classes.
package ascii

import "strings"

// The byte classes identifiers are made of.
const (
	Lower    = "abcdefghijklmnopqrstuvwxyz"
	Upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	Digits   = "0123456789"
	Letters  = Lower + Upper
	Alnum    = Letters + Digits
	LowerHex = Digits + "abcdef"
)

// A Word is the set of strings made of one byte of First and then bytes
// of Rest: a regular expression ^[First][Rest]*$ with a length rule.
type Word struct {
	First, Rest string
	Max         int   // at most this many bytes; 0 is no limit
	Lens        []int // when set, the only lengths allowed
}

// MatchString reports whether s is in w.
func (w Word) MatchString(s string) bool {
	if s == "" || (w.Max > 0 && len(s) > w.Max) || (w.Lens != nil && !hasLen(w.Lens, len(s))) {
		return false
	}
	if strings.IndexByte(w.First, s[0]) < 0 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if strings.IndexByte(w.Rest, s[i]) < 0 {
			return false
		}
	}
	return true
}

func hasLen(lens []int, n int) bool {
	for _, l := range lens {
		if l == n {
			return true
		}
	}
	return false
}

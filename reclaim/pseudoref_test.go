package reclaim

import "testing"

func TestIsPseudoRef(t *testing.T) {
	for name, want := range map[string]bool{
		"ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "CHERRY_PICK_HEAD": true, "REBASE_HEAD": true,
		"HEAD": false, "_HEAD": false, "AUTO_MERGE": false, "orig_HEAD": false, "ORIG_HEAD.lock": false, "1_HEAD": false, "A-B_HEAD": false,
	} {
		if got := isPseudoRef(name); got != want {
			t.Errorf("isPseudoRef(%q) = %v, want %v", name, got, want)
		}
	}
}

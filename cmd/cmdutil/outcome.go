package cmdutil

import "fmt"

// ItemsOutcome is how a command that works item by item (hosts, sessions)
// ends once every item's row is printed: all ok is 0; some failed is 3;
// all failed with one class is that class's exit (so one host keeps its
// own code: 7 unreachable, 5 key changed); all failed otherwise is 1.
// errs holds one entry per item that failed, of total items.
func ItemsOutcome(errs []error, total int, what string) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) < total {
		return &PartialError{Failed: len(errs), Total: total, What: what}
	}
	codes := map[int]string{}
	for _, err := range errs {
		info := Classify(err)
		codes[info.Exit] = info.Code
	}
	if len(codes) == 1 {
		for exit, code := range codes {
			return WithHint(&ExitCodeError{Code: exit, JSON: code, Msg: errs[0].Error(), Printed: true}, Classify(errs[0]).Hint)
		}
	}
	return &ExitCodeError{Code: 1, JSON: "error", Msg: fmt.Sprintf("all %d %s failed", total, what), Printed: true}
}

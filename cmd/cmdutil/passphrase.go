package cmdutil

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/term"
)

// PassphrasePrompt asks for an identity file's passphrase as ssh does:
// the prompt and the answer on the controlling terminal, nothing echoed.
// It is nil when the command runs without a terminal to ask on (a
// script, a background worker): a locked key is then an error naming
// ssh-add. While a live view holds the terminal (TakeTerminal) it asks
// nothing and says so.
func (s *IOStreams) PassphrasePrompt() func(prompt string) ([]byte, error) {
	if !s.CanPrompt() {
		return nil
	}
	return func(prompt string) ([]byte, error) {
		if s.viewing.Load() {
			return nil, errors.New("no passphrase can be asked for while the live view holds the terminal: load the key into ssh-agent (ssh-add)")
		}
		tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("asking for a passphrase: %w", err)
		}
		defer tty.Close()
		fmt.Fprint(tty, prompt)
		pass, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		return pass, err
	}
}

// TakeTerminal says a live view reads the terminal from now on: nothing
// else may ask for input on it.
func (s *IOStreams) TakeTerminal() { s.viewing.Store(true) }

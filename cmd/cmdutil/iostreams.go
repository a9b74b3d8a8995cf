// Package cmdutil holds what every command shares: the Factory of lazy
// dependencies, IO streams, JSON output and the single error-to-exit-code
// mapping.
package cmdutil

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/term"
)

// IOStreams are a command's standard streams plus what is known about
// them: data goes to Out, progress and hints to ErrOut, and colour and
// prompts only happen on a terminal.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stderrTTY bool
	noColor   bool
	errWidth  int         // stderr's terminal width; 0 when unknown
	viewing   atomic.Bool // a live view holds the terminal (TakeTerminal)
}

// System returns the process's streams.
func System() *IOStreams {
	isTTY := func(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
	_, noColor := os.LookupEnv("NO_COLOR")
	width, _, err := term.GetSize(int(os.Stderr.Fd()))
	if err != nil {
		width = 0
	}
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY: isTTY(os.Stdin), stdoutTTY: isTTY(os.Stdout), stderrTTY: isTTY(os.Stderr),
		noColor: noColor || os.Getenv("TERM") == "dumb", errWidth: width,
	}
}

// Test returns streams backed by buffers, none of them a terminal.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errb := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errb}, in, out, errb
}

// SetTTY marks the streams as terminals (tests).
func (s *IOStreams) SetTTY(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
}

// DisableColor turns colour off (--no-color).
func (s *IOStreams) DisableColor() { s.noColor = true }

func (s *IOStreams) IsStdinTTY() bool  { return s.stdinTTY }
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// TerminalWidth is stderr's terminal width in columns, 0 when unknown.
func (s *IOStreams) TerminalWidth() int { return s.errWidth }

// CanPrompt reports whether a question can be asked and answered.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

// ColorEnabled reports whether stderr/stdout may carry ANSI colour.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }

// Confirm asks a yes/no question on stderr; only call when CanPrompt.
func (s *IOStreams) Confirm(question string) (bool, error) {
	fmt.Fprintf(s.ErrOut, "%s [y/N] ", question)
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

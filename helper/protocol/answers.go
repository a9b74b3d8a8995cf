package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ReadAnswer reads the helper's output: progress lines (each passed to
// progress, if not nil) and then the answer, decoded into res; a failed
// operation comes back as *Error.
func ReadAnswer(r io.Reader, res any, progress func(Progress)) error {
	return NewAnswers(r).Next(res, progress)
}

// Answers reads a helper's answers, in order, from its output.
type Answers struct {
	br *bufio.Reader
}

// NewAnswers reads answers from r.
func NewAnswers(r io.Reader) *Answers { return &Answers{br: bufio.NewReader(r)} }

// Next reads the next answer into res, as ReadAnswer does; an answer and
// its progress lines together are at most MaxRequest bytes.
func (a *Answers) Next(res any, progress func(Progress)) error {
	budget := MaxRequest
	for {
		line, err := ReadLine(a.br, budget)
		budget -= len(line)
		if errors.Is(err, ErrTooLong) {
			return fmt.Errorf("the helper's answer is larger than %d bytes", MaxRequest)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err != nil {
				return fmt.Errorf("the helper sent no answer")
			}
			continue
		}
		var h head
		if jerr := json.Unmarshal(line, &h); jerr != nil {
			return fmt.Errorf("unreadable answer from the helper: %v", jerr)
		}
		switch {
		case h.Progress != nil && h.OK == nil:
			if progress != nil {
				progress(*h.Progress)
			}
			budget = MaxRequest // a progress line is passed on, not kept: a script may print without end
			continue
		case h.OK == nil:
			return fmt.Errorf("the helper's answer has neither ok nor error: %.200q", line)
		case !*h.OK:
			if h.Error == nil {
				return &Error{Code: CodeIO, Message: "the helper failed without saying why"}
			}
			return h.Error
		}
		if res == nil {
			return nil
		}
		return json.Unmarshal(line, res)
	}
}

// Rest is what follows the answers read so far: after OpRelay's answer,
// the relayed connection's bytes.
func (a *Answers) Rest() io.Reader { return a.br }

// ErrTooLong is a line longer than ReadLine's bound.
var ErrTooLong = errors.New("line too long")

// ReadLine reads up to and including the next newline, or to the end of
// the input (then with io.EOF), refusing a line longer than max: how
// either half reads the other's lines.
func ReadLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, ErrTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

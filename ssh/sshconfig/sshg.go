package sshconfig

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// sshErrLine is how ssh names the line it refuses: "FILE line N: MSG".
var sshErrLine = regexp.MustCompile(`^(.+?):? line (\d+): (.+)$`)

// sshG reads the settings for name as the installed OpenSSH client
// prints them, with ov as its command line; a line it refuses is a
// *ConfigError naming that line.
func sshG(ctx context.Context, bin, name string, ov Overrides, file string) (settings, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := []string{"-G"}
	if file != "" {
		if _, err := os.Stat(file); err != nil {
			return nil, &ConfigError{File: file, Msg: "cannot read ssh config: " + err.Error()}
		}
		args = append(args, "-F", file)
	}
	args = append(args, commandLine(ov)...)
	args = append(args, "--", name)
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		for _, l := range strings.Split(msg, "\n") {
			if m := sshErrLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
				n, _ := strconv.Atoi(m[2])
				return nil, &ConfigError{File: m[1], Line: n, Msg: m[3]}
			}
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, &ConfigError{File: file, Msg: fmt.Sprintf("ssh -G %s failed: %s", name, msg)}
	}
	s := settings{}
	for _, l := range strings.Split(out.String(), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), " ")
		if ok {
			s[k] = append(s[k], v)
		}
	}
	return s, nil
}

// commandLine is ov as ssh options, in the order ssh applies them.
func commandLine(ov Overrides) []string {
	var args []string
	if ov.User != "" {
		args = append(args, "-l", ov.User)
	}
	if ov.Port != 0 {
		args = append(args, "-p", strconv.Itoa(ov.Port))
	}
	if ov.IdentitiesOnly {
		args = append(args, "-o", "IdentitiesOnly=yes")
	}
	if ov.direct() {
		args = append(args, "-o", "ProxyCommand=none")
	} else if ov.ProxyJump != "" {
		args = append(args, "-J", ov.ProxyJump)
	}
	return args
}

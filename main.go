package main

import (
	"os"

	"github.com/kdlbs/kandev-exec/cmd"
)

func main() { os.Exit(cmd.Execute()) }

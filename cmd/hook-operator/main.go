// Command hook-operator runs executable hooks as a Kubernetes operator.
//
// This file only hands over to the CLI; see internal/cli.
package main

import (
	"os"

	"github.com/hook-operator/hook-operator/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}

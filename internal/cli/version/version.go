// Package version implements `hook-operator version`.
package version

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hook-operator/hook-operator/internal/buildinfo"
)

// New returns the version command, printing to out.
func New(out io.Writer) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, source commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return write(out, buildinfo.Get(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func write(out io.Writer, info buildinfo.Info, format string) error {
	switch format {
	case "text":
		_, err := fmt.Fprintf(out, "hook-operator %s\ncommit:   %s\ngo:       %s\nplatform: %s\n",
			info.Version, info.Commit, info.GoVersion, info.Platform)
		return err
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("--output %q: use text or json", format)
	}
}

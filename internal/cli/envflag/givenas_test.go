package envflag

import (
	"testing"

	"github.com/spf13/pflag"
)

// GivenAs names a setting as the user gave it: our flag, shell-operator's
// flag, our variable or shell-operator's; "" at its default.
func TestGivenAs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{want: ""},
		{args: []string{"--prefix=a_"}, want: "--prefix"},
		{args: []string{"--shell-prefix=a_"}, want: "--shell-prefix"},
		{env: map[string]string{"HOOK_OPERATOR_PREFIX": "a_"}, want: "HOOK_OPERATOR_PREFIX"},
		{env: map[string]string{"SHELL_PREFIX": "a_"}, want: "SHELL_PREFIX"},
		// A flag wins over a variable, and names itself.
		{args: []string{"--prefix=a_"}, env: map[string]string{"SHELL_PREFIX": "b_"}, want: "--prefix"},
	} {
		var v string
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		Define(fs, Setting{Name: "prefix", Value: String(&v, "x_"), Usage: "u", Shell: Shell{Flag: "shell-prefix", Env: []string{"SHELL_PREFIX"}}})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := Apply(fs, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }); err != nil {
			t.Fatal(err)
		}
		if got := GivenAs(fs, "prefix"); got != tc.want {
			t.Errorf("%v %v: GivenAs = %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}

package limit

import (
	"fmt"
	"slices"
	"strings"
)

// Bounds of error texts built from what a hook wrote. An error is logged as
// one line and may be returned to the API server as an admission message,
// so a file with a million mistakes must not make a million-line error.
const (
	// MaxListed is how many problems an error lists before it only counts
	// the rest.
	MaxListed = 10
	// MaxProblemBytes is the most one listed problem takes.
	MaxProblemBytes = 1024
	// MaxQuotedBytes is the most of one value (a name, a field, a string a
	// hook wrote) an error quotes: longer than any valid Kubernetes name.
	MaxQuotedBytes = 256
)

// Quote returns s, or, when it is longer than MaxQuotedBytes, its start
// and how long it is, so that an error can quote a hook's value whatever
// its size.
func Quote(s string) string {
	if len(s) <= MaxQuotedBytes {
		return s
	}
	return fmt.Sprintf("%s... (%s in all)", strings.ToValidUTF8(s[:MaxQuotedBytes], ""), Size(int64(len(s))))
}

// Sprintf is fmt.Sprintf with every string argument of a %q verb passed
// through Quote: what an error quotes is a value a hook wrote, of any
// size.
func Sprintf(format string, args ...any) string {
	args = slices.Clone(args) // the caller's, when it passed args...
	arg := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		if format[i] == 'q' && arg < len(args) {
			if s, ok := args[arg].(string); ok {
				args[arg] = Quote(s)
			}
		}
		arg++
	}
	return fmt.Sprintf(format, args...)
}

// Cut returns s, or, when it is longer than MaxProblemBytes, its start and
// its end (where errors put what to change), and how much was left out
// between them.
func Cut(s string) string {
	if len(s) <= MaxProblemBytes {
		return s
	}
	half := MaxProblemBytes / 2
	return fmt.Sprintf("%s ...(%s left out)... %s", strings.ToValidUTF8(s[:half], ""),
		Size(int64(len(s)-2*half)), strings.ToValidUTF8(s[len(s)-half:], ""))
}

// Join returns an error that lists errs one per line, as errors.Join does,
// but only the first MaxListed, each cut to MaxProblemBytes, and then how
// many more there are. It returns nil when errs is empty. Unwrap returns
// every one of errs, for errors.Is and errors.As.
func Join(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &list{errs: errs}
}

type list struct{ errs []error }

func (l *list) Error() string {
	var b strings.Builder
	for i, e := range l.errs[:min(len(l.errs), MaxListed)] {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(Cut(e.Error()))
	}
	if more := len(l.errs) - MaxListed; more > 0 {
		fmt.Fprintf(&b, "\n... and %d more (%d problems in all; fix these and run again to see the rest)", more, len(l.errs))
	}
	return b.String()
}

func (l *list) Unwrap() []error { return l.errs }

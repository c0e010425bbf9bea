// Module crosscheck type-checks hook-operator for other platforms
// (main.go); its own module, so that golang.org/x/tools is no dependency of
// hook-operator itself.
module github.com/hook-operator/hook-operator/hack/crosscheck

go 1.26.0

require golang.org/x/tools v0.52.0

require (
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

package start

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ByteSize is a flag of bytes, written as a Kubernetes quantity (16Mi,
// 1Gi, 20M) or a plain number of bytes.
type ByteSize int64

// Set parses s; the size must be at least 1Ki.
func (b *ByteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size: write bytes or a quantity such as 16Mi or 1Gi", s)
	}
	n, ok := q.AsInt64()
	if !ok || n < 1024 {
		return fmt.Errorf("%q: use at least 1Ki", s)
	}
	*b = ByteSize(n)
	return nil
}

// String writes b as a quantity: 16Mi.
func (b *ByteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

// Type names the flag's value in --help.
func (b *ByteSize) Type() string { return "size" }

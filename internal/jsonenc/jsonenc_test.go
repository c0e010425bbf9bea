package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// same fails unless Marshal(v) equals json.Marshal(v), error for error.
func same(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := Marshal(v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Marshal(%#v) error %v; encoding/json's %v", v, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("Marshal(%#v)\n got %s\nwant %s", v, got, want)
	}
}

func TestMatchesEncodingJSON(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "plain", `quote " and \ backslash`, "<a href='x'>&amp;</a>",
		"tab\tnew\nline\rcr\bback\fform\x00nul\x1f\x7f", "é ü 日本 🚀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xe2\x80",
		0, 1, -1, math.MaxInt64, math.MinInt64, int64(42),
		0.0, 1.5, -0.000001, 1e-7, 123456789.125, 1e20, 1e21, -1e21, 5e-324, math.MaxFloat64, math.Copysign(0, -1), 1e-10,
		json.Number("12345678901234567890"), json.Number("1.5e3"), big.NewInt(0).Lsh(big.NewInt(1), 80),
		map[string]any{}, map[string]any(nil), []any{}, []any(nil),
		map[string]any{"b": 1, "a": []any{"x", nil, true, map[string]any{"z": 0.5, "<": ">"}}, "": "empty key", "é": 2},
		[]any{map[string]any{"k": []any{[]any{}}}},
		struct{ A int }{1}, // not a decoded JSON value: encoding/json's job
	} {
		same(t, v)
	}
}

func TestMarshalReturnsExactSize(t *testing.T) {
	b, err := Marshal(map[string]any{"name": "cm-1"})
	if err != nil {
		t.Fatal(err)
	}
	// The allocator rounds up to its size class (16 bytes here), no more.
	if cap(b) > len(b)+16 {
		t.Errorf("len %d, cap %d: the spare room would stay allocated with every kept result", len(b), cap(b))
	}
}

func TestUnsupportedFloats(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := Marshal(map[string]any{"x": f}); err == nil {
			t.Errorf("Marshal(%v): no error; encoding/json refuses it", f)
		}
	}
}

// TestRandomValues compares with encoding/json on random trees, strings of
// random bytes and random floats included.
func TestRandomValues(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		same(t, randomValue(r, 0))
	}
}

func randomValue(r *rand.Rand, depth int) any {
	n := r.IntN(9)
	if depth > 3 && n > 6 {
		n = r.IntN(7)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.IntN(2000) - 1000
	case 3:
		return math.Float64frombits(r.Uint64()) // NaN and Inf come up too
	case 4:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(50)-25))
	case 5, 6:
		return randomString(r)
	case 7:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	default:
		s := make([]any, r.IntN(5))
		for i := range s {
			s[i] = randomValue(r, depth+1)
		}
		return s
	}
}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteByte(byte(r.IntN(256)))
	}
	return b.String()
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\u2028", "\xff", "é\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		same(t, s)
		same(t, map[string]any{s: []any{s}})
	})
}

func BenchmarkConfigMap(b *testing.B) {
	var obj map[string]any
	doc := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-00042","namespace":"bench-burst-x","uid":"0b9f0a4e-9c55-4a55-9d0f-2e1f3c2d1a00","resourceVersion":"123456","creationTimestamp":"2026-11-22T03:00:00Z","labels":{"app":"bench"},"managedFields":[{"manager":"bench","operation":"Update","apiVersion":"v1","time":"2026-11-22T03:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:name":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}}]},"data":{"name":"cm-00042"}}`
	if err := json.Unmarshal([]byte(doc), &obj); err != nil {
		b.Fatal(err)
	}
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(obj)
		}
	})
	b.Run("jsonenc", func(b *testing.B) {
		for b.Loop() {
			_, _ = Marshal(obj)
		}
	})
}

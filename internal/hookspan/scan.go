package hookspan

import (
	"bytes"
	"encoding/json"
)

// A scanner over one line that json.Valid has accepted, so that it never
// meets malformed JSON: it finds where values end and hands out the raw
// values of an object's fields, without reflection and without copies.
// encoding/json's Unmarshal cost 28 allocations a span (BenchmarkParse);
// this leaves those of the strings kept. Keys match exactly, as OTLP/JSON's
// lowerCamelCase names, not case-insensitively as Unmarshal matches them.

// members calls fn with the key and raw value of each member of obj, a
// JSON object, in order; it stops at fn's first error.
func members(obj []byte, fn func(key, value []byte) *Error) *Error {
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return nil
	}
	for {
		end := stringEnd(obj, i)
		key := obj[i:end]
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		vend := valueEnd(obj, i)
		if err := fn(unquote(key), obj[i:vend]); err != nil {
			return err
		}
		i = skipSpace(obj, vend)
		if obj[i] == '}' {
			return nil
		}
		i = skipSpace(obj, i+1) // past the comma
	}
}

// elements calls fn with the index and raw value of each element of arr, a
// JSON array; it stops at fn's first error.
func elements(arr []byte, fn func(i int, value []byte) *Error) *Error {
	i := skipSpace(arr, 1)
	if arr[i] == ']' {
		return nil
	}
	for n := 0; ; n++ {
		end := valueEnd(arr, i)
		if err := fn(n, arr[i:end]); err != nil {
			return err
		}
		i = skipSpace(arr, end)
		if arr[i] == ']' {
			return nil
		}
		i = skipSpace(arr, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// valueEnd returns the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// unquote returns the text of a JSON string: a part of s when it holds no
// escape, else a decoded copy.
func unquote(s []byte) []byte {
	if bytes.IndexByte(s, '\\') < 0 {
		return s[1 : len(s)-1]
	}
	var text string
	_ = json.Unmarshal(s, &text) // valid: the line passed json.Valid
	return []byte(text)
}

// jsonType names the type of a raw JSON value, as error messages say it.
func jsonType(v []byte) string {
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

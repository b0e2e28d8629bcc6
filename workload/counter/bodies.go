package counter

import (
	"strconv"
	"strings"
)

// The patch bodies are built by appending into a writer's own buffer, so a
// patch costs no allocation beyond what client-go makes of it. They set a
// field (fieldRef): a ConfigMap's data values are strings, so its counter
// is written "12"; a custom resource's integer field is a JSON number, 12.

// fieldRef is the field a writer changes: its path in the object
// (["data", "counter"], ["status", "count"]) and whether its value is a
// decimal string (str) or a JSON number.
type fieldRef struct {
	path []string
	str  bool
}

// String is the path as --field-path takes it: .status.count, or
// .metadata.annotations["example.com/n"] for a key that is not a plain
// name.
func (f fieldRef) String() string {
	var b strings.Builder
	for _, p := range f.path {
		if plainName(p) {
			b.WriteString("." + p)
		} else {
			b.WriteString("[" + strconv.Quote(p) + "]")
		}
	}
	return b.String()
}

// appendValue appends value as the field holds it.
func (f fieldRef) appendValue(b []byte, value int64) []byte {
	if !f.str {
		return strconv.AppendInt(b, value, 10)
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, value, 10)
	return append(b, '"')
}

// appendMergePatch appends a merge (or strategic merge) patch setting
// field f to value. A non-empty resourceVersion is added as
// metadata.resourceVersion: the apiserver then treats the patch as an
// optimistic lock and answers 409 when the object has moved on.
func appendMergePatch(b []byte, f fieldRef, value int64, resourceVersion string) []byte {
	b = append(b, '{')
	path := f.path
	switch {
	case resourceVersion != "" && path[0] == "metadata": // one metadata object holds both
		b = append(b, `"metadata":{"resourceVersion":`...)
		b = append(appendJSONString(b, resourceVersion), ',')
		return append(appendNested(b, path[1:], f, value), "}}"...)
	case resourceVersion != "":
		b = append(b, `"metadata":{"resourceVersion":`...)
		b = append(appendJSONString(b, resourceVersion), "},"...)
	}
	return append(appendNested(b, path, f, value), '}')
}

// appendNested appends "p0":{"p1":...:value...}, the members that set
// field f (at path, a tail of f's) to value.
func appendNested(b []byte, path []string, f fieldRef, value int64) []byte {
	for i, p := range path {
		if i > 0 {
			b = append(b, '{')
		}
		b = append(appendJSONString(b, p), ':')
	}
	b = f.appendValue(b, value)
	for range len(path) - 1 {
		b = append(b, '}')
	}
	return b
}

// appendJSONPatch appends a JSON patch that sets field f from old to new
// only if it still holds old: a test op then a replace, so the apiserver
// applies both or neither (a failed test answers 422 Invalid). That is a
// compare-and-swap on the field.
func appendJSONPatch(b []byte, f fieldRef, old, new int64) []byte {
	b = append(b, `[{"op":"test","path":`...)
	b = appendPointer(b, f)
	b = append(b, `,"value":`...)
	b = f.appendValue(b, old)
	b = append(b, `},{"op":"replace","path":`...)
	b = appendPointer(b, f)
	b = append(b, `,"value":`...)
	b = f.appendValue(b, new)
	return append(b, `}]`...)
}

// appendPointer appends f's JSON pointer (/data/<key>) as a JSON string,
// escaping "~" and "/" in each token as RFC 6901 asks.
func appendPointer(b []byte, f fieldRef) []byte {
	b = append(b, '"')
	for i, p := range f.path {
		b = append(b, '/')
		b = appendEscaped(b, p, true)
		if i < len(f.path)-1 {
			b = b[:len(b)-1] // appendEscaped closed the string
		}
	}
	return b
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	return appendEscaped(append(b, '"'), s, false)
}

// appendEscaped appends s escaped for a JSON string, and as a JSON
// pointer's reference token too when pointer is set, then the closing
// quote.
func appendEscaped(b []byte, s string, pointer bool) []byte {
	const hex = "0123456789abcdef"
	for i := range len(s) {
		switch c := s[i]; {
		case pointer && c == '~':
			b = append(b, "~0"...)
		case pointer && c == '/':
			b = append(b, "~1"...)
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

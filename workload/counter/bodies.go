package counter

import "strconv"

// The patch bodies are built by appending into a writer's own buffer, so a
// patch costs no allocation beyond what client-go makes of it. Data values
// of a ConfigMap are strings, so a counter is written as "12".

// appendMergePatch appends a merge (or strategic merge) patch setting
// data[key] to value. A non-empty resourceVersion is added as
// metadata.resourceVersion: the apiserver then treats the patch as an
// optimistic lock and answers 409 when the object has moved on.
func appendMergePatch(b []byte, key string, value int64, resourceVersion string) []byte {
	b = append(b, '{')
	if resourceVersion != "" {
		b = append(b, `"metadata":{"resourceVersion":`...)
		b = appendJSONString(b, resourceVersion)
		b = append(b, "},"...)
	}
	b = append(b, `"data":{`...)
	b = appendJSONString(b, key)
	b = append(b, `:"`...)
	b = strconv.AppendInt(b, value, 10)
	b = append(b, `"}}`...)
	return b
}

// appendJSONPatch appends a JSON patch that sets data[key] from old to new
// only if it still holds old: a test op then a replace, so the apiserver
// applies both or neither (a failed test answers 422 Invalid). That is a
// compare-and-swap on the field.
func appendJSONPatch(b []byte, key string, old, new int64) []byte {
	b = append(b, `[{"op":"test","path":`...)
	b = appendDataPointer(b, key)
	b = append(b, `,"value":"`...)
	b = strconv.AppendInt(b, old, 10)
	b = append(b, `"},{"op":"replace","path":`...)
	b = appendDataPointer(b, key)
	b = append(b, `,"value":"`...)
	b = strconv.AppendInt(b, new, 10)
	b = append(b, `"}]`...)
	return b
}

// appendDataPointer appends the JSON pointer /data/<key> as a JSON string,
// escaping "~" and "/" in key as RFC 6901 asks.
func appendDataPointer(b []byte, key string) []byte {
	return appendEscaped(append(b, `"/data/`...), key, true)
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

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
	b = append(b, `"/data/`...)
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '~':
			b = append(b, "~0"...)
		case '/':
			b = append(b, "~1"...)
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			if c < 0x20 {
				b = appendControl(b, c)
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = appendControl(b, c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendControl(b []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

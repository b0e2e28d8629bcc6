package proc

import (
	"bytes"
	"strings"
	"sync"
)

// Tail is an io.Writer that keeps at least the last 16 KiB written to
// it, to quote when the process that writes it fails. It is safe for
// concurrent use.
type Tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buf.Len() > 64<<10 {
		b := t.buf.Bytes()
		t.buf.Reset()
		t.buf.Write(b[len(b)-16<<10:])
	}
	return t.buf.Write(p)
}

// Last is what the process said last, as ": line": its last line, or a
// Go panic's first one; "" when it said nothing.
func (t *Tail) Last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := strings.TrimSpace(t.buf.String())
	if i := strings.LastIndex(out, "panic: "); i >= 0 {
		out, _, _ = strings.Cut(out[i:], "\n")
	}
	if l := strings.TrimSpace(out[strings.LastIndexByte(out, '\n')+1:]); l != "" {
		return ": " + l
	}
	return ""
}

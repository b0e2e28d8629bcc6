package proc

import (
	"fmt"
	"strings"
	"testing"
)

// A failed process is quoted by its last line, or by the panic that
// killed it, and a chatty one does not grow the buffer without bound.
func TestLast(t *testing.T) {
	var b Tail
	if got := b.Last(); got != "" {
		t.Errorf("silent process: %q, want nothing", got)
	}
	fmt.Fprint(&b, "starting\nkb-bench shard: forbidden\n\n")
	if got := b.Last(); got != ": kb-bench shard: forbidden" {
		t.Errorf("last line: %q", got)
	}
	fmt.Fprint(&b, "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\nmain.main()\n")
	if got := b.Last(); got != ": panic: runtime error: index out of range" {
		t.Errorf("panic: %q", got)
	}
	for range 10000 {
		fmt.Fprintln(&b, strings.Repeat("x", 99))
	}
	fmt.Fprint(&b, "the end")
	if b.buf.Len() > 80<<10 || b.Last() != ": the end" {
		t.Errorf("after 1 MB: %d bytes kept, last %q", b.buf.Len(), b.Last())
	}
}

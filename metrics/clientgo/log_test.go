package clientgo

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/go-logr/logr"
)

// What client-go logs becomes one warning per distinct message with its
// count, bounded, and a drain starts afresh.
func TestLogDeduplicatesAndDrains(t *testing.T) {
	l := NewLog()
	log := logr.New(l)
	for range 3 {
		log.Error(errors.New("http2: response body closed"), "Unexpected error when reading response body")
	}
	log.Info("Waited before sending request", "delay", "1.2s")
	log.V(4).Info("verbose, not kept")
	want := []string{
		"client-go logged 3 times: Unexpected error when reading response body: http2: response body closed",
		"client-go logged: Waited before sending request delay=1.2s",
	}
	if got := l.Drain(); !reflect.DeepEqual(got, want) {
		t.Errorf("drain:\n%q\nwant\n%q", got, want)
	}
	if got := l.Drain(); len(got) != 0 {
		t.Errorf("second drain %q, want nothing", got)
	}
	for i := range maxLogMessages + 5 {
		log.Info(fmt.Sprintf("message %d", i))
	}
	got := l.Drain()
	if len(got) != maxLogMessages+1 || got[maxLogMessages] != "client-go logged 5 more lines (other messages)" {
		t.Errorf("bounded drain: %d lines, last %q", len(got), got[len(got)-1])
	}
}

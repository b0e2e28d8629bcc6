package await

import (
	"errors"
	"testing"
)

func TestUntilAndRecvReturnOnTheEvent(t *testing.T) {
	polls := 0
	Until(t, "the third poll", func() error {
		if polls++; polls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	ch := make(chan int, 1)
	go func() { ch <- 7 }()
	if got := Recv(t, "the value", ch); got != 7 {
		t.Errorf("Recv = %d, want 7", got)
	}
	if _, ok := Context(t).Deadline(); !ok {
		t.Error("Context has no deadline under go test's default -timeout")
	}
}

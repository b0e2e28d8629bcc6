package spec

import "errors"

// Exit statuses of kb-bench and of its shards, whose runners read them
// back (ExitTargetLost); ExitStatus says which an error ends with.
const (
	ExitOK    = 0
	ExitError = 1
	ExitInput = 2 // bad flags, files or targets: the user can fix it
	// ExitTargetLost: the target failed during the run (its apiserver
	// stopped answering, or the local control plane died); the result
	// holds the figures of what ran before.
	ExitTargetLost = 3
	// ExitInterrupted: the run was stopped (Ctrl-C, SIGTERM, a closed
	// terminal); the result holds the figures of what ran.
	ExitInterrupted = 130
)

// The errors a run ends with when it ran but did not finish; what it
// measured is saved.
var (
	// ErrInterrupted: the run was stopped (its context cancelled) before
	// its end.
	ErrInterrupted = errors.New("the run was interrupted: the saved result covers what ran")
	// ErrTargetLost: the target failed during the run (it stopped
	// answering, or a local control plane of the run's own died); what
	// wraps it says how.
	ErrTargetLost = errors.New("the target failed during the run")
)

// ExitStatus is the exit status of a command that ended with err.
func ExitStatus(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.Is(err, ErrTargetLost):
		return ExitTargetLost
	case IsInput(err):
		return ExitInput
	}
	return ExitError
}

// InputError marks an error caused by what the user gave: a flag, a profile,
// a missing binary, a target that cannot be reached. The CLI prints it and
// exits with status 2; other errors exit with status 1.
type InputError struct{ Err error }

// Error returns the wrapped error's message unchanged.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *InputError) Unwrap() error { return e.Err }

// Input marks err as an InputError (nil stays nil).
func Input(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{Err: err}
}

// IsInput reports whether err, or any error it wraps, is an InputError.
func IsInput(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

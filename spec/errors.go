package spec

import "errors"

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

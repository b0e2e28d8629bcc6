// Package bench is kb-bench as a library: what the commands do, callable
// from Go without a command line.
//
// A Request (a profile, settings given by name, a count of samples)
// resolves once into a Plan: its cells (one configuration each, several
// for a matrix, a baseline and a candidate for an A/B run) and their
// samples, interleaved in rounds of a random order so that neither drift
// nor passing load favours a cell. Run runs a
// plan on its target through the engine (package workload) and saves each
// result through package store; Sweep runs one as a capacity sweep. What
// reads saved results is here too: Compare, Gate, Report and Show, which
// shows what a run showed from its saved documents alone.
//
// The library never prints: what a run shows, tells and how far it is go
// to the writers and callbacks of its Options. Its errors say what the
// caller's exit status is (spec.ExitStatus): bad input (spec.IsInput),
// spec.ErrInterrupted, spec.ErrTargetLost, ErrGateFailed, or any other failure.
package bench

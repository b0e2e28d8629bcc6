// Package leaderelection is the leader-election scenario: candidates run
// client-go's own tools/leaderelection (or kb-bench's raw Lease lock that
// also watches the Lease) on one Lease while kb-bench times every Lease
// request, stops the leader at intervals to measure failover, and checks
// that no two candidates ever believed they led at once.
//
// With a fault (pause, partition, skew, delete, edit) the Lease is taken
// from a leader that does not know it yet, and two leaders at once are
// expected:
// the scenario measures how long the deposed leader went on believing,
// the overlap, the time with no leader, and the leader-only writes (a
// fenced ConfigMap each leader writes) accepted from a deposed leader,
// with how many a fencing token would have refused. For the pause fault
// every candidate runs as a process of its own (RunCandidate), so that
// SIGSTOP freezes all of a leader at once.
package leaderelection

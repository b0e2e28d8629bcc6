// Package leaderelection is the leader-election scenario: candidates run
// client-go's own tools/leaderelection on one Lease while kb-bench times
// every Lease request, stops the leader at intervals to measure failover,
// and checks that no two candidates ever believed they led at once.
package leaderelection

package results

// LeaderElectionReport holds the leader-election scenario's figures.
type LeaderElectionReport struct{}

// QuotaReport holds the quota scenario's figures.
type QuotaReport struct{}

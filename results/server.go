package results

import "time"

// CodeNoResponse is the code of a request that got no answer (a broken
// connection, a timeout before the response): the apiserver may or may not
// have counted it.
const CodeNoResponse = "none"

// ServerCheck compares, request for request, what kb-bench's clients sent
// in the measured window with what the apiserver counted between two
// /metrics scrapes taken while no request was in flight, and reports what
// the apiserver did on its own behalf.
type ServerCheck struct {
	// Available is false when /metrics could not be read; Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`

	// Requests are the clients' requests and the apiserver's counts, per
	// endpoint and response code, on every resource the clients wrote or
	// read.
	Requests []RequestCount `json:"requests,omitempty"`
	// Match is true when every count in Requests is equal.
	Match bool `json:"match"`
	// Mismatch explains the differences, with their likely causes.
	Mismatch string `json:"mismatch,omitempty"`
	// Internal are requests the apiserver counted on resources the
	// scenario watches (scenario.Definition.ServerResources) that
	// kb-bench's clients did not send: the apiserver's own, such as quota
	// admission updating a ResourceQuota's status.
	Internal []RequestCount `json:"internal,omitempty"`
	// Others are what the apiserver counted beyond kb-bench's requests on
	// the resources kb-bench used: other clients' (analysis.AttributeOthers).
	// Server holds the count.
	Others []RequestCount `json:"others,omitempty"`

	// Etcd sums etcd requests per resource and operation.
	Etcd []EtcdRequests `json:"etcd,omitempty"`
	// Races are, per resource, etcd's optimistic update transactions and
	// those that lost a race (the apiserver re-read and retried them).
	Races []EtcdRaces `json:"races,omitempty"`

	// FlowControlRejected counts API Priority and Fairness rejections (429).
	FlowControlRejected int64 `json:"flowControlRejected"`
	// FlowControlWaited counts requests that queued, with the mean wait.
	FlowControlWaited   int64         `json:"flowControlWaited"`
	FlowControlMeanWait time.Duration `json:"flowControlMeanWait"`

	// APIServers is each apiserver's share of the requests above, when
	// the target runs several (Requests are then the sums of their
	// counters).
	APIServers []APIServerShare `json:"apiservers,omitempty"`
}

// APIServerShare is what one apiserver counted of the requests the
// cross-check compares: every request, successful writes and 409s.
type APIServerShare struct {
	Server    string `json:"server"`
	Requests  int64  `json:"requests"`
	Writes    int64  `json:"writes"`
	Conflicts int64  `json:"conflicts"`
}

// RequestCount is one endpoint and response code.
type RequestCount struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"` // "configmaps", "pods/status", "leases.coordination.k8s.io"
	Code     string `json:"code"`
	// Client is what kb-bench's clients sent, Server what the apiserver counted.
	Client int64 `json:"client"`
	Server int64 `json:"server"`
}

// EtcdRequests sums one etcd operation on one resource.
type EtcdRequests struct {
	Resource  string        `json:"resource"`
	Operation string        `json:"operation"`
	Count     int64         `json:"count"`
	Mean      time.Duration `json:"mean"`
}

// EtcdRaces are one resource's optimistic writes: Updates transactions,
// of which Failed lost a race; Absorbed of those the apiserver retried
// itself without returning a 409 (merge patches, apply, its own writes).
type EtcdRaces struct {
	Resource string `json:"resource"`
	Updates  int64  `json:"updates"`
	Failed   int64  `json:"failed"`
	Absorbed int64  `json:"absorbed"`
}

// UnavailableServerCheck is a check that could not be made, and why.
func UnavailableServerCheck(reason string) *ServerCheck {
	return &ServerCheck{Available: false, Reason: reason}
}

package metrics

import (
	"strings"
	"testing"
	"time"
)

func TestServerSampleSub(t *testing.T) {
	put409 := RequestKey{EndpointKey{Verb: "PUT", Resource: "configmaps"}, "409"}
	put200 := RequestKey{EndpointKey{Verb: "PUT", Resource: "configmaps"}, "200"}
	get200 := RequestKey{EndpointKey{Verb: "GET", Resource: "configmaps"}, "200"}
	etcdUpdate := EtcdKey{Operation: "update", Resource: "configmaps"}

	before := NewServerSample(time.Unix(0, 0))
	before.Requests[put200], before.Requests[get200] = 10, 7
	before.Etcd[etcdUpdate] = 12
	after := NewServerSample(time.Unix(10, 0))
	after.Requests[put200], after.Requests[put409], after.Requests[get200] = 15, 4, 7
	after.Etcd[etcdUpdate] = 20

	d, err := after.Sub(before)
	if err != nil {
		t.Fatal(err)
	}
	if d.Requests[put200] != 5 || d.Requests[put409] != 4 || d.Etcd[etcdUpdate] != 8 {
		t.Errorf("deltas: requests %v, etcd %v", d.Requests, d.Etcd)
	}
	if _, ok := d.Requests[get200]; ok {
		t.Errorf("an unchanged series is in the delta: %v", d.Requests)
	}

	// A counter that went backwards, or a series that vanished, is a restart.
	restarted := NewServerSample(time.Unix(20, 0))
	restarted.Requests[put200] = 3
	if _, err := restarted.Sub(after); err == nil || !strings.Contains(err.Error(), "apiserver restarted") {
		t.Errorf("want a restart error, got %v", err)
	}
}

// Several apiservers' samples add up series by series; At is the latest.
func TestSum(t *testing.T) {
	put200 := RequestKey{EndpointKey{Verb: "PUT", Resource: "configmaps"}, "200"}
	put409 := RequestKey{EndpointKey{Verb: "PUT", Resource: "configmaps"}, "409"}
	get := EtcdKey{Operation: "get", Resource: "configmaps"}
	a, b := NewServerSample(time.Unix(5, 0)), NewServerSample(time.Unix(7, 0))
	a.Requests[put200], a.Requests[put409] = 3, 4
	b.Requests[put200] = 10
	a.EtcdDurations[get], b.EtcdDurations[get] = CountSum{Count: 2, Sum: 0.5}, CountSum{Count: 3, Sum: 1}
	a.Process, b.Process = ProcessSample{Has: true, CPUSeconds: 2, ResidentBytes: 100}, ProcessSample{Has: true, CPUSeconds: 3, ResidentBytes: 50}
	ep := EndpointKey{Verb: "PUT", Resource: "configmaps"}
	a.DurationBuckets[ep] = []BucketCount{{UpperBound: 0.005, Count: 2}, {UpperBound: 0.025, Count: 3}}
	b.DurationBuckets[ep] = []BucketCount{{UpperBound: 0.005, Count: 1}, {UpperBound: 0.025, Count: 4}}
	s := Sum(a, b)
	if got := s.DurationBuckets[ep]; len(got) != 2 || got[0].Count != 3 || got[1].Count != 7 {
		t.Errorf("Sum's duration buckets %v, want every apiserver's added bucket by bucket", got)
	}
	if s.Process != (ProcessSample{Has: true, CPUSeconds: 5, ResidentBytes: 150}) {
		t.Errorf("Sum's process %+v: want every apiserver's CPU and memory added", s.Process)
	}
	b.Process.Has = false
	if Sum(a, b).Process.Has {
		t.Error("Sum has process figures though one apiserver's are missing")
	}
	if s.Requests[put200] != 13 || s.Requests[put409] != 4 || s.EtcdDurations[get] != (CountSum{Count: 5, Sum: 1.5}) || !s.At.Equal(time.Unix(7, 0)) {
		t.Errorf("Sum = requests %v, etcd durations %v, at %v", s.Requests, s.EtcdDurations, s.At)
	}
	if a.Requests[put200] != 3 {
		t.Error("Sum changed its input")
	}
}

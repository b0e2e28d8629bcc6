package leaderelection

import (
	"reflect"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is base plus ms milliseconds.
func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestOverlaps(t *testing.T) {
	end := at(10000)
	tests := []struct {
		name string
		ls   []leadership
		want []Overlap
	}{
		{"none", nil, nil},
		{"one leader after another", []leadership{
			{"a", at(0), at(1000)},
			{"b", at(1300), at(2000)},
			{"c", at(2500), time.Time{}},
		}, nil},
		{"touching is not overlap", []leadership{
			{"a", at(0), at(1000)},
			{"b", at(1000), at(2000)},
		}, nil},
		{"two leaders for 50ms", []leadership{
			{"a", at(0), at(1050)},
			{"b", at(1000), at(2000)},
		}, []Overlap{{At: ms(1000), Duration: ms(50), Leaders: []string{"a", "b"}}}},
		{"unsorted input, contained interval", []leadership{
			{"b", at(200), at(300)},
			{"a", at(0), at(1000)},
		}, []Overlap{{At: ms(200), Duration: ms(100), Leaders: []string{"a", "b"}}}},
		{"three leaders in one span", []leadership{
			{"a", at(0), at(500)},
			{"b", at(100), at(600)},
			{"c", at(450), at(700)},
		}, []Overlap{{At: ms(100), Duration: ms(500), Leaders: []string{"a", "b", "c"}}}},
		{"two separate spans", []leadership{
			{"a", at(0), at(110)},
			{"b", at(100), at(500)},
			{"c", at(490), at(900)},
		}, []Overlap{
			{At: ms(100), Duration: ms(10), Leaders: []string{"a", "b"}},
			{At: ms(490), Duration: ms(10), Leaders: []string{"b", "c"}},
		}},
		{"open leadership runs to the end", []leadership{
			{"a", at(9000), time.Time{}},
			{"b", at(9900), at(9950)},
		}, []Overlap{{At: ms(9900), Duration: ms(50), Leaders: []string{"a", "b"}}}},
		{"empty leadership is ignored", []leadership{
			{"a", at(0), at(1000)},
			{"b", at(500), at(500)},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := overlaps(tt.ls, base, end)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("overlaps() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFailovers(t *testing.T) {
	ls := []leadership{
		{"a", at(100), at(2000)},
		{"c", at(4800), at(6000)}, // out of order on purpose
		{"b", at(2400), at(4000)},
	}
	tests := []struct {
		name  string
		stops []stop
		want  []Failover
	}{
		{"no stops", nil, []Failover{}},
		{"each stop is followed by the next leader", []stop{{"a", at(2000)}, {"b", at(4000)}}, []Failover{
			{At: ms(2000), Stopped: "a", NewLeader: "b", Resolved: true, Duration: ms(400)},
			{At: ms(4000), Stopped: "b", NewLeader: "c", Resolved: true, Duration: ms(800)},
		}},
		{"a stop with no later leader is unresolved", []stop{{"c", at(6000)}}, []Failover{
			{At: ms(6000), Stopped: "c"},
		}},
		{"a leader starting the same instant counts", []stop{{"a", at(2400)}}, []Failover{
			{At: ms(2400), Stopped: "a", NewLeader: "b", Resolved: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failovers(tt.stops, ls, base)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("failovers() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFailoverStats(t *testing.T) {
	tests := []struct {
		name string
		fs   []Failover
		want FailoverStats
	}{
		{"none", nil, FailoverStats{}},
		{"only unresolved", []Failover{{}}, FailoverStats{Count: 1}},
		{"one", []Failover{{Resolved: true, Duration: ms(300)}},
			FailoverStats{Count: 1, Resolved: 1, Min: ms(300), P50: ms(300), Max: ms(300)}},
		{"odd count, unresolved left out", []Failover{
			{Resolved: true, Duration: ms(900)}, {}, {Resolved: true, Duration: ms(100)}, {Resolved: true, Duration: ms(400)},
		}, FailoverStats{Count: 4, Resolved: 3, Min: ms(100), P50: ms(400), Max: ms(900)}},
		{"even count takes the lower median", []Failover{
			{Resolved: true, Duration: ms(4)}, {Resolved: true, Duration: ms(1)}, {Resolved: true, Duration: ms(3)}, {Resolved: true, Duration: ms(2)},
		}, FailoverStats{Count: 4, Resolved: 4, Min: ms(1), P50: ms(2), Max: ms(4)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failoverStats(tt.fs); got != tt.want {
				t.Errorf("failoverStats() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	tests := []struct {
		name    string
		holders []string
		want    int
	}{
		{"never held", []string{"", ""}, 0},
		{"first holder is not a transition", []string{"a", "a", "a"}, 0},
		{"handover", []string{"a", "a", "b", "b", "c"}, 2},
		{"release then another holder", []string{"a", "", "b"}, 1},
		{"release then the same holder", []string{"a", "", "a"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := transitions(tt.holders); got != tt.want {
				t.Errorf("transitions(%q) = %d, want %d", tt.holders, got, tt.want)
			}
		})
	}
}

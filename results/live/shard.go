package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/kb-bench/kb-bench/results"
)

// shardFigures are a shard's figures as it serves them to its
// coordinator: histograms losslessly encoded, so that their sum is exact.
type shardFigures struct {
	Measurements results.Measurements `json:"measurements"`
	Window       time.Duration        `json:"window"`
}

// ShardHandler serves r's figures to a distributed run's coordinator, as
// JSON (FetchShard reads them), which adds every shard's up while it runs.
func ShardHandler(r *Run) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f := r.Figures()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(shardFigures{Measurements: results.FromSnapshot(f.Totals, f.Client), Window: f.Window})
	})
}

// FetchShard reads a shard's figures from its ShardHandler at url.
func FetchShard(ctx context.Context, client *http.Client, url string) (Figures, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Figures{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Figures{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Figures{}, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var sf shardFigures
	if err := json.NewDecoder(resp.Body).Decode(&sf); err != nil {
		return Figures{}, fmt.Errorf("%s: %w", url, err)
	}
	f, err := fromMeasurements(sf.Measurements)
	f.Window = sf.Window
	return f, err
}

// Add adds g's counts, histograms and client figures to f's (the
// shards' of one run: the window is the longest).
func (f *Figures) Add(g Figures) {
	f.Totals.Add(g.Totals)
	f.Client = f.Client.Plus(g.Client, 1)
	f.Window = max(f.Window, g.Window)
}

package html

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// findChromium returns the system Chromium, or skips the test without one
// (fails, when KB_BENCH_REQUIRE_BROWSER=1).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("KB_BENCH_REQUIRE_BROWSER") == "1" {
		t.Fatal("no chromium or chromium-browser in PATH and KB_BENCH_REQUIRE_BROWSER=1: run scripts/chromium.sh")
	}
	t.Skip("no chromium or chromium-browser in PATH: run scripts/chromium.sh to install it (KB_BENCH_REQUIRE_BROWSER=1 makes this a failure)")
	return ""
}

// artifactsDir is where the test leaves what a person may want to look at:
// $KB_BENCH_ARTIFACTS, or the repository's artifacts/ directory.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KB_BENCH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "artifacts")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browserEvents collects, from the tab's own event loop, what the page must
// not do: fetch anything but file: and data: URLs, or log an error.
type browserEvents struct {
	mu       sync.Mutex
	problems []string
	logs     []string // chromedp's own messages, shown only on failure
}

func (b *browserEvents) add(format string, a ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, a...))
}

func (b *browserEvents) logf(format string, a ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logs = append(b.logs, fmt.Sprintf(format, a...))
}

// listen sees every event of the tab. It runs in the tab's event loop, so
// it only records.
func (b *browserEvents) listen(ev any) {
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if u := ev.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
			b.add("the page fetched %s", u)
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value))
			}
			b.add("console error: %s", strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		b.add("exception: %s", text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			b.add("browser log error: %s (%s)", ev.Entry.Text, ev.Entry.URL)
		}
	}
}

func (b *browserEvents) check(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Error(p)
	}
}

// chartInfo is what the page says about one drawn chart.
type chartInfo struct {
	Title  string      `json:"title"`
	Series [][]float64 `json:"series"` // width and height of each .series element
}

// measureCharts is the bounding box of every .series element of every
// svg.chart, as the browser laid them out.
const measureCharts = `Array.from(document.querySelectorAll("svg.chart")).map(svg => ({
	title: svg.querySelector("title") ? svg.querySelector("title").textContent : "",
	series: Array.from(svg.querySelectorAll(".series")).map(e => { const b = e.getBBox(); return [b.width, b.height]; }),
}))`

// startBrowser starts the system Chromium, headless and offline, for the
// test: any fetch fails, as no proxy listens on port 9 and loopback goes
// through it too. Cancelling the context stops it.
func startBrowser(t *testing.T, ctx context.Context, exe string, events *browserEvents) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root in a container
		chromedp.Headless,
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.WindowSize(1280, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(events.logf), chromedp.WithErrorf(events.logf))
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", exe, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range events.logs {
				t.Log("chromedp: " + l)
			}
		}
	})
	return browser
}

// open loads the HTML file in a new tab of browser and waits for its load
// event; the tab's events go to the returned browserEvents.
func open(t *testing.T, browser context.Context, html []byte) (context.Context, *browserEvents) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(file, html, 0o644); err != nil {
		t.Fatal(err)
	}
	events := &browserEvents{}
	tab, cancel := chromedp.NewContext(browser, chromedp.WithListener(events.listen))
	t.Cleanup(cancel)
	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(file)}).String()
	if _, err := chromedp.Run(tab, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Navigate(u))); err != nil {
		t.Fatalf("loading %s: %v", u, err)
	}
	return tab, events
}

// TestBrowser opens a report of two sets and a sweep in the system
// Chromium, offline, and checks that it fetches nothing, logs no error and
// draws every chart; it leaves a screenshot of the page in the artifacts.
// A page that does fetch and fail shows that the checks would see it.
func TestBrowser(t *testing.T) {
	exe := findChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	browser := startBrowser(t, ctx, exe, &browserEvents{})

	t.Run("the checks see fetches and errors", func(t *testing.T) {
		_, events := open(t, browser, []byte(`<!DOCTYPE html><html><body>
<img src="https://example.invalid/pixel.png" alt="">
<script>console.error("deliberate error"); throw new Error("deliberate exception");</script>
</body></html>`))
		events.mu.Lock()
		got := strings.Join(events.problems, "\n")
		events.mu.Unlock()
		for _, want := range []string{"the page fetched https://example.invalid/pixel.png", "console error: \"deliberate error\"", "exception: Uncaught"} {
			if !strings.Contains(got, want) {
				t.Errorf("the checks did not see %q; they saw:\n%s", want, got)
			}
		}
	})

	t.Run("report", func(t *testing.T) {
		p := testPages(t)["two-sets-and-sweep.html.golden"]
		var html bytes.Buffer
		if err := Write(&html, p); err != nil {
			t.Fatal(err)
		}
		wantCharts := strings.Count(html.String(), `<svg class="chart"`)
		tab, events := open(t, browser, html.Bytes())
		defer events.check(t)

		charts, err := chromedp.Run(tab, chromedp.Evaluate[[]chartInfo](measureCharts))
		if err != nil {
			t.Fatal(err)
		}
		if len(charts) != wantCharts || wantCharts == 0 {
			t.Errorf("the browser found %d charts, the page has %d", len(charts), wantCharts)
		}
		for i, c := range charts {
			drawn := 0
			for _, wh := range c.Series {
				if wh[0] > 0 && wh[1] > 0 {
					drawn++
				}
			}
			if drawn == 0 {
				t.Errorf("chart %d %q: no series drawn (bounding boxes %v)", i+1, c.Title, c.Series)
			}
		}
		overflow, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if overflow {
			t.Error("the page is wider than a 1280 px window")
		}

		nodes, err := chromedp.Run(tab, chromedp.Nodes(chromedp.CSSAll("svg.chart")))
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != len(charts) {
			t.Errorf("%d chart nodes, %d charts", len(nodes), len(charts))
		}
		for i, n := range nodes {
			shot, err := chromedp.Run(tab, chromedp.ScreenshotNodes([]*chromedp.Node{n}, 1))
			if err != nil {
				t.Fatalf("screenshot of chart %d: %v", i+1, err)
			}
			inked, coloured, err := ink(shot)
			if err != nil {
				t.Fatalf("chart %d: %v", i+1, err)
			}
			title := ""
			if i < len(charts) {
				title = charts[i].Title
			}
			if inked <= 0.01 {
				t.Errorf("chart %d %q looks blank: %.2f%% of its pixels differ from the background", i+1, title, 100*inked)
			}
			// The frame, grid and text are grey: only series are in colour.
			if coloured <= 0.001 {
				t.Errorf("chart %d %q has no series painted: %.3f%% of its pixels are in colour", i+1, title, 100*coloured)
			}
		}

		full, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		shot := filepath.Join(artifactsDir(t), "report.png")
		if err := os.WriteFile(shot, full, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot of the report: %s", shot)
	})
}

// ink is the share of an image's pixels that differ from its background
// (its top-left pixel), and the share that are in colour rather than grey.
func ink(pngData []byte) (inked, coloured float64, err error) {
	img, err := png.Decode(bytes.NewReader(pngData))
	if err != nil {
		return 0, 0, fmt.Errorf("decoding the screenshot: %w", err)
	}
	b := img.Bounds()
	if b.Empty() {
		return 0, 0, fmt.Errorf("the screenshot is empty (%v)", b)
	}
	rgb := func(x, y int) (int, int, int) {
		r, g, bl, _ := img.At(x, y).RGBA()
		return int(r >> 8), int(g >> 8), int(bl >> 8)
	}
	br, bg, bb := rgb(b.Min.X, b.Min.Y)
	var differ, colour int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl := rgb(x, y)
			if abs(r-br) > 16 || abs(g-bg) > 16 || abs(bl-bb) > 16 {
				differ++
			}
			if max(r, g, bl)-min(r, g, bl) > 60 {
				colour++
			}
		}
	}
	n := float64(b.Dx() * b.Dy())
	return float64(differ) / n, float64(colour) / n, nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// The web view's browser tests.
const (
	// browserEnv names the headless browser; hack/browser installs
	// Debian's chromium and says where it is.
	browserEnv = "PLIMSOLL_BROWSER"
	// screenshotsEnv, set to a directory (docs/ by `make ui-screenshots`),
	// is where TestUI saves its screenshots of the main pages.
	screenshotsEnv = "PLIMSOLL_UI_SCREENSHOTS"
	// browserWait bounds one wait of the browser for the page.
	browserWait = 90 * time.Second
)

// startBrowser starts headless Chromium for the test, or skips the test
// with the reason when there is none (never in CI: hack/browser install,
// which `make test` runs, installs it or fails there).
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	out, err := exec.Command(filepath.Join(suite.root, "hack", "browser"), "path").Output()
	path := strings.TrimSpace(string(out))
	if err != nil || path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no headless browser: hack/browser install must install Debian's chromium package in CI")
		}
		t.Skipf("no headless browser: run hack/browser install (Debian's chromium package, as root) or set %s", browserEnv)
	}
	// The flags keep Chromium off the network but for the pages it is
	// sent to: this machine refuses its other connections.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start the browser %s: %v", path, err)
	}
	return ctx
}

// browse runs actions in the browser, failing t on error.
func browse(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a script in the browser's page.
func eval[T any](t *testing.T, ctx context.Context, script string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatalf("evaluate %s: %v", script, err)
	}
	return v
}

// waitPage waits until the script is true in the browser's page.
func waitPage(t *testing.T, ctx context.Context, describe, script string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](script, chromedp.WithPollingTimeout(browserWait))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('main').innerText`))
		t.Fatalf("wait for the page to show %s: %v\npage:\n%s", describe, err, html)
	}
}

// ratioServer is an analysis' web check: GET /ratio answers {"ratio": v}
// with v 0.002, 0.004, 0.006, 0.008 in turn, all under 0.01.
type ratioServer struct {
	url    string
	mu     gosync.Mutex
	served []string
	n      atomic.Int64
}

func startRatioServer(t *testing.T) *ratioServer {
	t.Helper()
	r := &ratioServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		v := fmt.Sprintf("%g", 0.002*float64(1+r.n.Add(1)%4))
		r.mu.Lock()
		r.served = append(r.served, v)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ratio": %s}`, v)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/ratio"
	return r
}

func (r *ratioServer) values() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.served)
}

// uiTree is the tree of TestUI: api (canary, "25%, pause, 50%, pause,
// 100%", each weight step judged by error-rate, a web check of url), with
// the canary value in its environment; web (rolling); shop (blue-green);
// and the canary value in a Secret.
func uiTree(t *testing.T, version, url, canary string) map[string]string {
	t.Helper()
	api := canaryExample(t, version,
		`plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"`, `plimsoll.dev/steps: "25%, pause, 50%, pause, 100%"
    plimsoll.dev/analysis: error-rate`,
		"        ports:\n", "        env:\n        - name: TOKEN\n          value: "+canary+"\n        ports:\n")
	api["analysis.yaml"] = kit.AnalysisDoc("error-rate", fmt.Sprintf(`metrics:
- name: ratio
  interval: 1s
  count: 2
  timeout: 5s
  successCondition: result < 0.01
  failureCondition: result >= 0.05
  web:
    url: %s
    jsonPath: '{.ratio}'
`, url))
	api["secret.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: planted\ntype: Opaque\nstringData:\n  token: %s\n", canary)
	return mergeFiles(inDir("api", api), inDir("web", example(t, "rolling")), inDir("shop", blueGreenExample(t, "v1", "1s")))
}

// stepWatch records when Deployment api's plimsoll.dev/step takes each
// value, as a watch sees the controller's writes.
type stepWatch struct {
	mu   gosync.Mutex
	seen map[string]time.Time
}

func watchSteps(t *testing.T, ns string) *stepWatch {
	t.Helper()
	w := &stepWatch{seen: map[string]time.Time{}}
	informer := appsinformers.NewFilteredDeploymentInformer(suite.client, ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=api" })
	note := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			w.mu.Lock()
			if step := d.Annotations["plimsoll.dev/step"]; step != "" && w.seen[step].IsZero() {
				w.seen[step] = time.Now()
			}
			w.mu.Unlock()
		}
	}
	kit.RunInformer(t.Context(), t, informer, cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }}, "Deployment api")
	return w
}

func (w *stepWatch) at(step string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[step]
}

// TestUI drives the daemon's web view in headless Chromium through a
// canary rollout: the sync and workloads pages list what `plimsoll status
// -o json` lists; the workload's page shows the step and the weight the
// Service serves, and follows a promote without a reload (how long after
// the controller's write is logged, not asserted: speed is a benchmark's
// business on a shared machine); an analysis run's measurements
// stand beside its conditions; the canary value planted in a Secret and a
// pod's environment never reaches a page or an answer; every request but
// a GET, and a GET of the live stream from another origin, is refused; the
// pages are accessible and fit a phone. Screenshots of the main pages are
// saved (to docs/ by `make ui-screenshots`).
func TestUI(t *testing.T) {
	parallel(t)
	browser := startBrowser(t)
	check := startRatioServer(t)
	canary := "canary-value-" + randomHex(t)
	s := newSyncTarget(t)
	s.repo.Commit("api and web v1", uiTree(t, "v1", check.url, canary))
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// The daemon watches this namespace only, and so does its view: the
	// pages and their screenshots show this test's sync alone.
	kit.StartDaemon(t, s, "--interval", "1s", "--ui-listen", addr, "--watch-namespace", s.ns)
	base := "http://" + addr
	waitForDeployment(t, s.ns, "api", "revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "web", "revision 1 Healthy", phaseIs(1, "Healthy"))
	waitForDeployment(t, s.ns, "shop-blue", "revision 1 Healthy", phaseIs(1, "Healthy"))
	shots := screenshotDir(t)

	t.Run("the pages list what plimsoll status lists", func(t *testing.T) {
		out, code := runPlimsoll(t, "status", "-o", "json", "--kubeconfig", suite.kubeconfig, "-n", s.ns)
		if code != 0 {
			t.Fatalf("plimsoll status exited %d:\n%s", code, out)
		}
		var status struct {
			Workloads []map[string]any `json:"workloads"`
			Syncs     []map[string]any `json:"syncs"`
		}
		if err := json.Unmarshal([]byte(out), &status); err != nil {
			t.Fatalf("read plimsoll status -o json: %v\n%s", err, out)
		}
		if len(status.Workloads) != 3 || len(status.Syncs) != 1 {
			t.Fatalf("plimsoll status lists %d workloads and %d syncs, want 3 and 1:\n%s", len(status.Workloads), len(status.Syncs), out)
		}
		browse(t, browser, chromedp.Navigate(base+"/"))
		for _, sync := range status.Syncs {
			key := fmt.Sprintf("%s/%s", sync["namespace"], sync["name"])
			fields := map[string]string{"status": fmt.Sprint(sync["status"]), "commit": fmt.Sprint(sync["commit"]),
				"fetchedCommit": fmt.Sprint(sync["fetchedCommit"]), "message": fmt.Sprint(sync["message"])}
			checkFields(t, browser, fmt.Sprintf(`[data-sync=%q]`, key), fields)
		}
		if n := eval[int](t, browser, `document.querySelectorAll('[data-sync]').length`); n != len(status.Syncs) {
			t.Errorf("the syncs page lists %d syncs, plimsoll status %d", n, len(status.Syncs))
		}
		screenshot(t, browser, shots, "ui-syncs.png", 1280, true)
		browse(t, browser, chromedp.Navigate(base+"/workloads"))
		for _, w := range status.Workloads {
			key := fmt.Sprintf("%s/%s", w["namespace"], w["name"])
			fields := map[string]string{"strategy": fmt.Sprint(w["strategy"]), "phase": fmt.Sprint(w["phase"]),
				"revision": fmt.Sprint(w["revision"]), "commit": fmt.Sprint(w["commit"]), "message": fmt.Sprint(w["message"])}
			checkFields(t, browser, fmt.Sprintf(`tr[data-workload=%q]`, key), fields)
		}
		if n := eval[int](t, browser, `document.querySelectorAll('tr[data-workload]').length`); n != len(status.Workloads) {
			t.Errorf("the workloads page lists %d workloads, plimsoll status %d", n, len(status.Workloads))
		}
	})

	t.Run("a canary's step, weight and analysis, live", func(t *testing.T) {
		steps := watchSteps(t, s.ns)
		browse(t, browser, chromedp.Navigate(base+"/workloads/"+s.ns+"/api"))
		waitPage(t, browser, "revision 1 Healthy", `document.querySelector('[data-field=revision]')?.textContent.startsWith('1')`)
		// Marks that a reload would lose, and the moment each weight shows.
		eval[bool](t, browser, `window.plimsollMark = 'kept'; window.weightSeen = {};
			new MutationObserver(() => {
				const w = document.querySelector('[data-field=weight]');
				if (w && !window.weightSeen[w.textContent]) { window.weightSeen[w.textContent] = Date.now(); }
			}).observe(document.getElementById('main'), {childList: true, subtree: true}); true`)

		s.repo.Commit("api v2", uiTree(t, "v2", check.url, canary))
		waitPage(t, browser, "step 2 of revision 2: 25% set and served",
			`document.querySelector('[data-field=step]')?.textContent === 'step 2/5' &&
			 document.querySelector('[data-field=weight]')?.textContent === '25%' &&
			 document.querySelector('[data-field=served]')?.textContent === '25%'`)
		if cur := eval[string](t, browser, `document.querySelector('.step[aria-current=step]')?.textContent`); !strings.Contains(cur, "pause") {
			t.Errorf("the current step is %q, want step 2, the pause", cur)
		}

		t.Log("the analysis run of step 1: its measurements beside its conditions")
		metric := `document.querySelector('[data-run="step 1"] [data-metric="error-rate/ratio"]')`
		waitPage(t, browser, "step 1's run with 2 measurements", metric+`?.querySelectorAll('td[data-field=value]').length >= 2`)
		if got := eval[string](t, browser, metric+`.querySelector('[data-field=success]').textContent`); got != "result < 0.01" {
			t.Errorf("success condition shown %q", got)
		}
		if got := eval[string](t, browser, metric+`.querySelector('[data-field=failure]').textContent`); got != "result >= 0.05" {
			t.Errorf("failure condition shown %q", got)
		}
		values := eval[[]string](t, browser, `[...`+metric+`.querySelectorAll('td[data-field=value]')].map(td => td.textContent)`)
		for _, v := range values {
			if !slices.Contains(check.values(), v) {
				t.Errorf("the page shows a measurement of %s, which the check never answered (it answered %v)", v, check.values())
			}
		}
		if rules, marks := eval[int](t, browser, metric+`.querySelectorAll('svg line.rule').length`),
			eval[int](t, browser, metric+`.querySelectorAll('svg path.mark').length`); rules != 2 || marks != len(values) {
			t.Errorf("the plot draws %d condition lines and %d points, want 2 and %d", rules, marks, len(values))
		}

		t.Log("a promote: the page follows without a reload")
		command(t, s.ns, "api", "promote")
		waitPage(t, browser, "step 4: 50% set", `document.querySelector('[data-field=step]')?.textContent === 'step 4/5' &&
			document.querySelector('[data-field=weight]')?.textContent === '50%'`)
		written := steps.at("3")
		shown := time.UnixMilli(int64(eval[float64](t, browser, `window.weightSeen['50%']`)))
		t.Logf("the controller's write of step 3 (50%%) was on the page %s later", shown.Sub(written).Round(time.Millisecond))
		if written.IsZero() || shown.Before(written) {
			t.Errorf("the page showed 50%% at %s, the controller wrote step 3 at %s: want the page after the write", shown, written)
		}
		if mark := eval[string](t, browser, `window.plimsollMark || ''`); mark != "kept" {
			t.Error("the page was reloaded")
		}
		if n := eval[int](t, browser, `performance.getEntriesByType('navigation').length`); n != 1 {
			t.Errorf("%d navigations, want the one that loaded the page", n)
		}
		waitPage(t, browser, "step 4's served weight", `document.querySelector('[data-field=served]')?.textContent === '50%'`)
		screenshot(t, browser, shots, "ui-workload.png", 1280, true)
		browse(t, browser, chromedp.Navigate(base+"/workloads"))
		screenshot(t, browser, shots, "ui-workloads.png", 1280, true)
	})

	t.Run("a blue-green workload's colors", func(t *testing.T) {
		browse(t, browser, chromedp.Navigate(base+"/workloads/"+s.ns+"/shop"))
		waitPage(t, browser, "blue active, selected by Service shop", `document.querySelector('[data-color=blue] [data-field=role]')?.textContent === 'active' &&
			document.querySelector('[data-field=selects-active]')?.textContent === 'blue'`)
		if got := eval[string](t, browser, `document.querySelector('[data-field=selects-preview]')?.textContent`); got != "blue" {
			t.Errorf("the preview Service selects %q on the page, want blue (no revision going out)", got)
		}
	})

	t.Run("the canary value never leaves the cluster", func(t *testing.T) {
		secrets := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary))}
		pages := []string{"/", "/workloads", "/workloads/" + s.ns + "/api", "/workloads/" + s.ns + "/web", "/workloads/" + s.ns + "/shop"}
		for _, path := range append(slices.Clone(pages), "/static/app.js", "/static/style.css", "/workloads/"+s.ns+"/planted", "/nothing") {
			body := httpGet(t, base+path, nil)
			checkClean(t, path, body, secrets)
		}
		for _, path := range pages {
			checkClean(t, "/live"+path, firstEvent(t, base+"/live"+path), secrets)
			browse(t, browser, chromedp.Navigate(base+path))
			waitPage(t, browser, "the live stream open", `document.getElementById('live').textContent === 'live'`)
			checkClean(t, path+" in the browser", eval[string](t, browser, `document.documentElement.outerHTML`), secrets)
		}
	})

	t.Run("only GET is served, and the live stream only to its own pages", func(t *testing.T) {
		before := getDeployment(t, s.ns, "api").Annotations
		for _, path := range []string{"/", "/workloads", "/workloads/" + s.ns + "/api", "/live/", "/live/workloads/" + s.ns + "/api", "/static/app.js", "/hook"} {
			for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
				body := strings.NewReader(`{"metadata":{"annotations":{"plimsoll.dev/command":"abort"}}}`)
				if code := request(t, method, base+path, body, nil); code != http.StatusMethodNotAllowed {
					t.Errorf("%s %s: %d, want 405", method, path, code)
				}
			}
		}
		if after := getDeployment(t, s.ns, "api").Annotations; after["plimsoll.dev/command"] != "" || after["plimsoll.dev/phase"] != before["plimsoll.dev/phase"] {
			t.Errorf("the refused requests changed api: %v", after)
		}
		for _, h := range []map[string]string{{"Origin": "http://evil.example"}, {"Origin": "null"},
			{"Origin": "http://" + addr + ".evil.example"}, {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}} {
			if code := request(t, http.MethodGet, base+"/live/workloads/"+s.ns+"/api", nil, h); code != http.StatusForbidden {
				t.Errorf("GET of the live stream with %v: %d, want 403", h, code)
			}
		}
		if code := request(t, http.MethodGet, base+"/", nil, map[string]string{"Host": "evil.example"}); code != http.StatusMisdirectedRequest {
			t.Errorf("GET with Host evil.example: %d, want 421", code)
		}

		t.Log("from another site's page, in the browser: its EventSource and its POST get nothing")
		foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "<!DOCTYPE html><title>elsewhere</title><p>another site</p>")
		}))
		defer foreign.Close()
		browse(t, browser, chromedp.Navigate(foreign.URL))
		got, err := chromedp.Run(browser, chromedp.Evaluate[string](fmt.Sprintf(`new Promise(resolve => {
				const es = new EventSource(%q);
				es.addEventListener('page', () => { es.close(); resolve('served a page'); });
				es.onerror = () => { es.close(); resolve('refused'); };
			})`, base+"/live/workloads/"+s.ns+"/api"), chromedp.EvalAwaitPromise))
		if err != nil || got != "refused" {
			t.Errorf("another site's EventSource on the live stream: %q (%v), want refused", got, err)
		}
		got, err = chromedp.Run(browser, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q, {method: 'POST', body: 'x'})
				.then(r => 'answered ' + r.status, () => 'refused')`, base+"/"), chromedp.EvalAwaitPromise))
		if err != nil || got != "refused" {
			t.Errorf("another site's POST: %q (%v), want refused", got, err)
		}
	})

	t.Run("accessible and readable on a phone", func(t *testing.T) {
		for _, path := range []string{"/", "/workloads", "/workloads/" + s.ns + "/api"} {
			browse(t, browser, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+path))
			problems := eval[[]string](t, browser, `(() => {
				const out = [];
				if (document.documentElement.lang !== 'en') out.push('no lang');
				for (const svg of document.querySelectorAll('svg')) {
					const ids = (svg.getAttribute('aria-labelledby') || '').split(' ').filter(Boolean);
					if (svg.getAttribute('role') !== 'img' || ids.length === 0 || ids.some(id => !document.getElementById(id)?.textContent.trim())) {
						out.push('a plot without a text alternative: ' + svg.outerHTML.slice(0, 80));
					}
				}
				for (const table of document.querySelectorAll('table')) {
					if (!table.querySelector('caption')?.textContent.trim()) out.push('a table without a caption');
				}
				for (const img of document.querySelectorAll('img')) { if (!img.alt) out.push('an image without alt'); }
				return out;
			})()`)
			for _, p := range problems {
				t.Errorf("%s: %s", path, p)
			}
			browse(t, browser, chromedp.KeyEvent("\t"))
			if got := eval[string](t, browser, `document.activeElement.className + ' ' + document.activeElement.getAttribute('href')`); got != "skip #main" {
				t.Errorf("%s: the first Tab reaches %q, want the skip link to #main", path, got)
			}
			browse(t, browser, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(base+path))
			if wide := eval[bool](t, browser, `document.documentElement.scrollWidth > window.innerWidth`); wide {
				t.Errorf("%s is wider than a phone's screen (%d px)", path, eval[int](t, browser, `document.documentElement.scrollWidth`))
			}
		}
		screenshot(t, browser, shots, "ui-workload-phone.png", 780, false)
	})
}

// checkFields checks that the element of selector shows each field's
// value: its data-value when it has one (a commit shown short), else its
// text.
func checkFields(t *testing.T, ctx context.Context, selector string, fields map[string]string) {
	t.Helper()
	waitPage(t, ctx, selector, fmt.Sprintf(`document.querySelector(%q) !== null`, selector))
	for field, want := range fields {
		got := eval[string](t, ctx, fmt.Sprintf(`(() => {
			const el = document.querySelector(%q).querySelector('[data-field=%s]');
			return el ? (el.dataset.value ?? el.textContent.trim()) : '(missing)';
		})()`, selector, field))
		if got != want && !(want == "" && got == "-") {
			t.Errorf("%s %s: the page shows %q, plimsoll status %q", selector, field, got, want)
		}
	}
}

// screenshot saves the browser's page (the whole of it, or what the
// screen shows) as a PNG named name in dir, and checks that it is one,
// width pixels wide.
func screenshot(t *testing.T, ctx context.Context, dir, name string, width int, whole bool) {
	t.Helper()
	take := chromedp.CaptureScreenshot()
	if whole {
		take = chromedp.FullScreenshot(100)
	}
	shot, err := chromedp.Run(ctx, take)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() != width {
		t.Fatalf("screenshot %s: %v, %d px wide, want a PNG %d px wide", name, err, img.Bounds().Dx(), width)
	}
	if err := os.WriteFile(filepath.Join(dir, name), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// screenshotDir is where the screenshots go: $PLIMSOLL_UI_SCREENSHOTS, or
// a directory of the test's.
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv(screenshotsEnv); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(suite.root, dir)
		}
		return dir
	}
	return t.TempDir()
}

// checkClean fails t if body holds any of secrets.
func checkClean(t *testing.T, what, body string, secrets []string) {
	t.Helper()
	if body == "" {
		t.Errorf("%s: empty", what)
	}
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("%s shows the planted value %q", what, s)
		}
	}
}

// httpGet returns the body of a GET of url, whatever its status.
func httpGet(t *testing.T, url string, headers map[string]string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// request sends one request and returns its status code. A "Host" header
// sets the request's Host.
func request(t *testing.T, method, url string, body io.Reader, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// firstEvent returns the first event of a live stream, as sent.
func firstEvent(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("read %s: %v\n%s", url, err, b.String())
		}
		if line == "\n" && strings.Contains(b.String(), "event: page") {
			return b.String()
		}
	}
}

// randomHex is 8 random hex digits.
func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestUIReadsWithYourRights runs `plimsoll ui` as a user who may read the
// workloads of one namespace but not its pods: it watches that namespace
// alone, shows its workload and sync, and says on every page that it
// shows no pods because the user may not list them.
func TestUIReadsWithYourRights(t *testing.T) {
	parallel(t)
	s := newSyncTarget(t)
	s.repo.Commit("web v1", example(t, "rolling"))
	s.mustSync(t)
	kubeconfig := viewerKubeconfig(t, s.ns)
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ui := &waitRun{done: make(chan struct{})}
	ui.cmd = exec.Command(suite.plimsoll, "ui", "--kubeconfig", kubeconfig, "--listen", addr)
	ui.cmd.Stdout, ui.cmd.Stderr = ui, ui
	if err := ui.cmd.Start(); err != nil {
		t.Fatalf("start plimsoll ui: %v", err)
	}
	go func() { _ = ui.cmd.Wait(); close(ui.done) }()
	t.Cleanup(func() {
		_ = ui.cmd.Process.Kill()
		<-ui.done
	})
	base := "http://" + addr
	waitFor(t, "plimsoll ui to serve", func(context.Context) (bool, error) {
		if ui.exited() {
			return false, fmt.Errorf("plimsoll ui exited:\n%s", ui.output())
		}
		resp, err := http.Get(base + "/workloads")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if out := ui.output(); !strings.Contains(out, "plimsoll web view of namespace "+s.ns+" on http://"+addr) {
		t.Errorf("plimsoll ui says:\n%s\nwant it to name namespace %s, the only one the user may read", out, s.ns)
	}
	denied := "pods in namespace " + s.ns + ": you may not list them"
	for path, want := range map[string]string{
		"/":                           fmt.Sprintf(`data-sync="%s/%s"`, s.ns, s.ns),
		"/workloads":                  fmt.Sprintf(`data-workload="%s/web"`, s.ns),
		"/workloads/" + s.ns + "/web": `<p class="empty">No pod.</p>`,
	} {
		body := httpGet(t, base+path, nil)
		if !strings.Contains(body, want) || !strings.Contains(body, denied) {
			t.Errorf("%s lacks %q or the notice %q:\n%s", path, want, denied, body)
		}
		if strings.Contains(body, "data-pod=") {
			t.Errorf("%s lists pods the user may not read", path)
		}
	}
}

// viewerKubeconfig is the admin kubeconfig with the credentials of a
// ServiceAccount of ns that may read what the web view shows in ns but
// pods: get, list and watch on its Deployments, ReplicaSets, Services,
// EndpointSlices, ConfigMaps and Events.
func viewerKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	kubectl(t, "-n", ns, "create", "serviceaccount", "viewer")
	kubectl(t, "-n", ns, "create", "role", "viewer", "--verb=get,list,watch",
		"--resource=deployments.apps,replicasets.apps,services,endpointslices.discovery.k8s.io,configmaps,events")
	kubectl(t, "-n", ns, "create", "rolebinding", "viewer", "--role=viewer", "--serviceaccount="+ns+":viewer")
	return tokenKubeconfig(t, ns, "viewer", ns)
}

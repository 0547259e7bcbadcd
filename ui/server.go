package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// How the view serves.
const (
	// DefaultIdle is how long the daemon's view keeps watching after its
	// last page closed: a page opened again within it finds the
	// histories it had.
	DefaultIdle = 30 * time.Minute
	// syncWait bounds how long a first page waits for the caches to fill;
	// after it, the page shows what they hold and says it is loading.
	syncWait = 10 * time.Second
	// maxStreams bounds the live pages open at once; more get 503.
	maxStreams = 64
	// shutdownTimeout bounds the end of Serve.
	shutdownTimeout = 5 * time.Second
	// The source components of plimsoll's Events: the sync's and the
	// rollout controller's.
	syncComponent    = "plimsoll"
	rolloutComponent = "plimsoll-rollout"
	// inventoryKey is the data key of a sync record's inventory.
	inventoryKey = "inventory"
)

// Config is what a Server reads and how it links.
type Config struct {
	// Client reads the cluster with the rights of whoever runs the view:
	// it shows only what they may read.
	Client kubernetes.Interface
	// Namespaces are the namespaces read; empty reads every one.
	Namespaces []string
	// Repos gives the address of each sync's repository, by sync name,
	// to link commits to their pages; credentials in it are never shown.
	Repos map[string]string
	// Windows gives the sync windows of each sync, by name, as flags say
	// them (the daemon's own sync).
	Windows map[string][]string
	// Hosts are the host names the view answers to besides IP addresses
	// and localhost (a name a proxy in front of it uses).
	Hosts []string
	// Idle is how long the watches run after the last page closed; 0
	// keeps them running from Serve on.
	Idle  time.Duration
	Log   *slog.Logger
	Clock clock.PassiveClock
}

// Server is the read-only web view: it serves pages rendered from its own
// informers' caches and pushes each page again to the browser when what
// it shows changes. It never writes to the cluster, and never reads a
// Secret.
type Server struct {
	cfg     Config
	pages   *pages
	mu      gosync.Mutex
	base    context.Context
	view    *view
	users   int
	idleGen int
	streams atomic.Int32
}

// New returns a Server of cfg; Serve runs it.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil {
		return nil, errors.New("web view: no Kubernetes client")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	for i, h := range cfg.Hosts {
		cfg.Hosts[i] = strings.ToLower(h)
	}
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, pages: p}, nil
}

// Serve serves the view on ln until ctx ends, then shuts the server down
// and stops the watches. Without Config.Idle the watches start at once;
// with it, at the first page.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	s.base = ctx
	s.mu.Unlock()
	if s.cfg.Idle == 0 {
		_, release, err := s.acquire(ctx)
		if err != nil {
			return err
		}
		defer release()
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second}
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	case err = <-errs:
		err = fmt.Errorf("serve the web view: %w", err)
	}
	s.mu.Lock()
	v := s.view
	s.view = nil
	s.mu.Unlock()
	if v != nil {
		v.close()
	}
	return err
}

// Handler is the view's HTTP handler: the pages, their live streams and
// the static files, behind guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /workloads", s.servePage)
	mux.HandleFunc("GET /workloads/{ns}/{name}", s.servePage)
	for _, sk := range setKinds {
		mux.HandleFunc("GET /"+sk.route+"/{ns}/{name}", s.servePage)
	}
	mux.HandleFunc("GET /live/{page...}", s.serveLive)
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles()))
	return guard(s.cfg.Hosts, mux)
}

// acquire returns the running view, starting it if need be, once its
// caches are filled (or syncWait has passed); release says the caller is
// done with it.
func (s *Server) acquire(ctx context.Context) (*view, func(), error) {
	s.mu.Lock()
	if s.base == nil || s.base.Err() != nil {
		s.mu.Unlock()
		return nil, nil, errors.New("the web view is not serving")
	}
	if s.view == nil {
		scopes := s.cfg.Namespaces
		if len(scopes) == 0 {
			scopes = []string{metav1.NamespaceAll}
		}
		s.view = startView(s.base, s.cfg.Client, scopes, s.cfg.Clock, s.cfg.Log)
		s.cfg.Log.Info("web view watching", "namespaces", strings.Join(s.cfg.Namespaces, ","), "denied", strings.Join(s.view.denied, "; "))
	}
	v := s.view
	s.users++
	s.idleGen++
	s.mu.Unlock()
	var once gosync.Once
	release := func() { once.Do(s.release) }
	wait := time.NewTimer(syncWait)
	defer wait.Stop()
	select {
	case <-v.synced:
	case <-wait.C:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	return v, release, nil
}

// release ends a use of the view; after the last, the view stops once
// Config.Idle has passed without another.
func (s *Server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users > 0 || s.cfg.Idle == 0 {
		return
	}
	s.idleGen++
	gen := s.idleGen
	time.AfterFunc(s.cfg.Idle, func() {
		s.mu.Lock()
		v := s.view
		if s.users > 0 || s.idleGen != gen || v == nil {
			s.mu.Unlock()
			return
		}
		s.view = nil
		s.mu.Unlock()
		v.close()
		s.cfg.Log.Info("web view idle; watches stopped")
	})
}

// servePage renders the page of the request's path.
func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	v, release, err := s.acquire(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
	p, ok := s.page(v, r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := s.pages.full(p)
	if err != nil {
		s.cfg.Log.Error("render a page of the web view", "path", r.URL.Path, "err", err)
		http.Error(w, "render the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// page is the page at path, built from v's caches; ok is false for no
// such page.
func (s *Server) page(v *view, path string) (page, bool) {
	p := page{Live: "/live" + path, Denied: v.denied}
	select {
	case <-v.synced:
	default:
		p.Denied = append([]string{"the view is still loading: what is shown may be incomplete"}, p.Denied...)
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case path == "/":
		p.Title, p.Nav, p.Template, p.Main = "Syncs", "syncs", "syncs", s.syncsModel(v)
	case path == "/workloads":
		p.Title, p.Nav, p.Template, p.Main = "Workloads", "workloads", "workloads", s.workloadsModel(v)
	case len(parts) == 3 && parts[0] == "workloads":
		d, ok := s.detailModel(v, parts[1], parts[2])
		if !ok {
			return page{}, false
		}
		p.Title, p.Nav, p.Template, p.Main = parts[1]+"/"+parts[2], "workloads", "workload", d
	case len(parts) == 3:
		sk, ok := setKindAt(parts[0])
		if !ok {
			return page{}, false
		}
		d, ok := s.setModel(v, sk, parts[1], parts[2])
		if !ok {
			return page{}, false
		}
		p.Title, p.Nav, p.Template, p.Main = sk.name+" "+parts[1]+"/"+parts[2], "workloads", "set", d
	default:
		return page{}, false
	}
	return p, true
}

// namespaceOf is the namespace whose changes a page shows:
// metav1.NamespaceAll for the lists.
func namespaceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != 3 {
		return metav1.NamespaceAll
	}
	if _, ok := setKindAt(parts[0]); ok || parts[0] == "workloads" {
		return parts[1]
	}
	return metav1.NamespaceAll
}

//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// Settings of the suite's metrics adapter, which serves external.metrics.k8s.io
// from the suite's Prometheus so that the control plane's real
// HorizontalPodAutoscaler controller scales on a load a test sets.
const (
	// adapterNamespace and adapterName name the adapter's ServiceAccount,
	// its RBAC bindings and the ExternalName Service its APIService points
	// at. hack/cluster issues the adapter's serving certificate for
	// <adapterName>.<adapterNamespace>.svc, the name the API server checks.
	adapterNamespace  = "kube-system"
	adapterName       = "plimsoll-metrics-adapter"
	adapterAPIService = "v1beta1.external.metrics.k8s.io"
	// adapterRelistInterval is how often the adapter asks Prometheus which
	// series exist: it serves a metric name only once it has seen a series
	// of it (the first setLoad waits for that). adapterMaxAge is how far back
	// it looks, long enough that a slow scrape never makes it forget one.
	adapterRelistInterval = 2 * time.Second
	adapterMaxAge         = time.Minute
	// adapterTokenTTL is the life of the adapter's ServiceAccount token: longer
	// than any suite run.
	adapterTokenTTL = 12 * time.Hour
	// adapterStartTimeout bounds the wait for the adapter to serve and for
	// its APIService to become Available; adapterStopTimeout is how long a
	// stop waits after SIGTERM before SIGKILL.
	adapterStartTimeout = 90 * time.Second
	adapterStopTimeout  = 10 * time.Second
	// adapterLogTail is how many lines of the adapter's log a failed test
	// shows.
	adapterLogTail = 40
	// loadPerReplica is the load one replica serves in loadHPAManifest: the
	// HorizontalPodAutoscaler wants ceil(load / loadPerReplica) replicas.
	loadPerReplica = 100
)

// adapterConfig exposes the exporter's gauge metricLoad as the External
// metric of the same name. The HorizontalPodAutoscaler's namespace and its
// metric selector (e.g. workload=web) become label matchers, and the sum
// makes one value of the series they match.
const adapterConfig = `externalRules:
- seriesQuery: '{__name__="` + metricLoad + `",namespace!="",workload!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
`

// adapterRBAC is what the adapter runs as: a ServiceAccount allowed to
// delegate authentication and authorization to the API server (TokenReview,
// SubjectAccessReview) and to read the requestheader settings that tell it
// to trust the API server's front-proxy client certificate. The
// HorizontalPodAutoscaler controller may already read external metrics: the
// API server's bootstrap policy grants it.
const adapterRBAC = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ` + adapterName + `
  namespace: ` + adapterNamespace + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ` + adapterName + `:system:auth-delegator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:auth-delegator
subjects:
- kind: ServiceAccount
  name: ` + adapterName + `
  namespace: ` + adapterNamespace + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: ` + adapterName + `:auth-reader
  namespace: kube-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: extension-apiserver-authentication-reader
subjects:
- kind: ServiceAccount
  name: ` + adapterName + `
  namespace: ` + adapterNamespace + `
---
# No container, no kube-proxy: an ExternalName Service is one the API
# server's aggregator can still reach, as it proxies to the external name
# itself, here the adapter's process on this machine.
apiVersion: v1
kind: Service
metadata:
  name: ` + adapterName + `
  namespace: ` + adapterNamespace + `
spec:
  type: ExternalName
  externalName: localhost
`

// adapter is the suite's one metrics adapter, started by the first test
// that asks for it and stopped after the last test (see suiteCleanups).
var adapter struct {
	once   gosync.Once
	server *metricsAdapter
	err    error
}

// metricsAdapter is a prometheus-adapter process registered as the cluster's
// external.metrics.k8s.io, reading the suite's Prometheus.
type metricsAdapter struct {
	prom *promServer
	port int
	proc *serverProcess
}

// startMetricsAdapter returns the suite's metrics adapter, starting it (and
// the suite's Prometheus) on first use: the binary comes from `hack/cluster
// prometheus-adapter`, which builds it once. A test that fails gets the tail
// of the adapter's log.
func startMetricsAdapter(t *testing.T) *metricsAdapter {
	t.Helper()
	p := startPrometheus(t)
	adapter.once.Do(func() { adapter.server, adapter.err = launchMetricsAdapter(p) })
	if adapter.err != nil {
		t.Fatalf("start the metrics adapter: %v", adapter.err)
	}
	adapter.server.proc.logOnFailure(t, adapterLogTail)
	return adapter.server
}

// launchMetricsAdapter builds (or finds) the adapter, gives it an identity,
// starts it, registers it as external.metrics.k8s.io, and registers its stop
// as a suite cleanup.
func launchMetricsAdapter(p *promServer) (a *metricsAdapter, err error) {
	ctx := context.Background()
	pki := filepath.Join(filepath.Dir(suite.kubeconfig), "pki")
	if err := checkAggregationLayer(ctx, pki); err != nil {
		return nil, err
	}
	bin, err := clusterTool("prometheus-adapter")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "plimsoll-e2e-metrics-adapter-")
	if err != nil {
		return nil, err
	}
	a = &metricsAdapter{prom: p, proc: &serverProcess{
		name: "prometheus-adapter",
		bin:  bin,
		log:  filepath.Join(dir, "adapter.log"),
	}}
	stopAll := func() {
		if err := a.unregister(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
		}
		if err := a.proc.halt(adapterStopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
		}
		os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: metrics adapter log:\n%s\n", a.proc.logTail(adapterLogTail))
			stopAll()
		}
	}()

	if _, err := runKubectl(adapterRBAC, "apply", "-f", "-"); err != nil {
		return nil, fmt.Errorf("create the adapter's identity: %w", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeAdapterKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(adapterConfig), 0o644); err != nil {
		return nil, fmt.Errorf("write the adapter's rules: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if a.port, err = portOf(addr); err != nil {
		return nil, err
	}
	a.proc.args = []string{
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", a.port),
		"--tls-cert-file=" + filepath.Join(pki, "metrics-adapter.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "metrics-adapter.key"),
		"--lister-kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--prometheus-url=" + p.url,
		"--config=" + config,
		"--metrics-relist-interval=" + adapterRelistInterval.String(),
		"--metrics-max-age=" + adapterMaxAge.String(),
	}
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("read the cluster CA: %w", err)
	}
	if err := a.proc.launch(adapterStartTimeout, a.serving(ca)); err != nil {
		return nil, err
	}
	if err := a.register(ca); err != nil {
		return nil, err
	}
	suiteCleanups = append(suiteCleanups, stopAll)
	return a, nil
}

// checkAggregationLayer fails with what to do when the control plane was
// started before hack/cluster set up the aggregation layer: the API server
// then publishes no requestheader settings, and cannot proxy to the adapter.
func checkAggregationLayer(ctx context.Context, pki string) error {
	const restart = "restart it: hack/cluster up (creates the missing certificates), then " +
		"hack/cluster stop kube-apiserver && hack/cluster start kube-apiserver, and the same for kube-controller-manager"
	cm, err := suite.client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the API server's authentication settings: %w", err)
	}
	if cm.Data["requestheader-client-ca-file"] == "" {
		return errors.New("the API server runs without the aggregation layer (no requestheader CA); " + restart)
	}
	if _, err := os.Stat(filepath.Join(pki, "metrics-adapter.crt")); err != nil {
		return fmt.Errorf("find the adapter's serving certificate (%w); %s", err, restart)
	}
	return nil
}

// writeAdapterKubeconfig writes the admin kubeconfig with the admin's
// credentials replaced by a token of the adapter's ServiceAccount.
func writeAdapterKubeconfig(path string) error {
	token, err := runKubectl("", "create", "token", adapterName, "-n", adapterNamespace,
		"--duration="+adapterTokenTTL.String())
	if err != nil {
		return fmt.Errorf("issue the adapter's token: %w", err)
	}
	cfg, err := clientcmd.LoadFromFile(suite.kubeconfig)
	if err != nil {
		return fmt.Errorf("read the admin kubeconfig: %w", err)
	}
	for _, user := range cfg.AuthInfos {
		user.Token, user.TokenFile = strings.TrimSpace(token), ""
		user.ClientCertificate, user.ClientCertificateData = "", nil
		user.ClientKey, user.ClientKeyData = "", nil
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write the adapter's kubeconfig: %w", err)
	}
	return nil
}

// serving reports whether the adapter answers /readyz over TLS with the
// serving certificate that hack/cluster issued under the cluster CA.
func (a *metricsAdapter) serving(ca []byte) func(context.Context) bool {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", a.port)
	return func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// register makes the adapter the cluster's external.metrics.k8s.io: an
// APIService naming the ExternalName Service and the adapter's port, whose
// serving certificate the API server checks against the cluster CA. It
// waits until the API server finds the adapter Available. A second suite
// run on the same cluster takes the registration over.
func (a *metricsAdapter) register(ca []byte) error {
	manifest := fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: %s
spec:
  group: external.metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service:
    name: %s
    namespace: %s
    port: %d
  caBundle: %s
`, adapterAPIService, adapterName, adapterNamespace, a.port, base64.StdEncoding.EncodeToString(ca))
	if _, err := runKubectl(manifest, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("register the adapter as external.metrics.k8s.io: %w", err)
	}
	_, err := runKubectl("", "wait", "--for=condition=Available", "apiservice/"+adapterAPIService,
		"--timeout="+adapterStartTimeout.String())
	if err != nil {
		status, _ := runKubectl("", "get", "apiservice", adapterAPIService, "-o", "jsonpath={.status}")
		return fmt.Errorf("wait for the adapter's APIService (status %s): %w", status, err)
	}
	return nil
}

// unregister deletes the APIService, if it still names this adapter: one
// that names a stopped adapter would make the group unavailable, and with
// it discovery, which namespace deletion and every kubectl need.
func (a *metricsAdapter) unregister() error {
	port, err := runKubectl("", "get", "apiservice", adapterAPIService, "--ignore-not-found",
		"-o", "jsonpath={.spec.service.port}")
	if err != nil || strings.TrimSpace(port) != fmt.Sprint(a.port) {
		return err
	}
	if _, err := runKubectl("", "delete", "apiservice", adapterAPIService, "--ignore-not-found"); err != nil {
		return fmt.Errorf("unregister the metrics adapter: %w", err)
	}
	return nil
}

// setLoad makes the External metric metricLoad, selected by
// workload=<workload> in namespace ns, read load, and waits until the
// external metrics API serves that value, so that what follows measures the
// HorizontalPodAutoscaler alone. The series is removed when the test ends.
func (a *metricsAdapter) setLoad(t *testing.T, ns, workload string, load float64) {
	t.Helper()
	a.prom.exporter.setLoad(ns, workload, load)
	t.Cleanup(func() { a.prom.exporter.stopLoad(ns, workload) })
	waitFor(t, fmt.Sprintf("external metric %s{workload=%s} in %s to read %g", metricLoad, workload, ns, load),
		func(ctx context.Context) (bool, error) {
			got, err := externalMetric(ctx, ns, metricLoad, "workload="+workload)
			return err == nil && got == load, err
		})
}

// externalMetric reads the sum of the values of an External metric through
// the API server, as the HorizontalPodAutoscaler controller does.
func externalMetric(ctx context.Context, ns, metric, selector string) (float64, error) {
	body, err := suite.client.CoreV1().RESTClient().Get().
		AbsPath("/apis/external.metrics.k8s.io/v1beta1/namespaces", ns, metric).
		Param("labelSelector", selector).DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("read external metric %s{%s} in %s: %w", metric, selector, ns, err)
	}
	var list struct {
		Items []struct {
			Value resource.Quantity `json:"value"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("decode external metric %s{%s} in %s: %w", metric, selector, ns, err)
	}
	sum := 0.0
	for _, item := range list.Items {
		sum += item.Value.AsApproximateFloat64()
	}
	return sum, nil
}

// loadHPAManifest is an autoscaling/v2 HorizontalPodAutoscaler named like
// the Deployment it scales, on the External metric metricLoad of that
// workload (setLoad) with a target of loadPerReplica per replica. Its
// controller wants ceil(load / loadPerReplica) replicas within [min, max]
// whatever the current count: 600 gives 6, from 2 or from 8.
func loadHPAManifest(name string, minReplicas, maxReplicas int) string {
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: %[1]s
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: %[1]s
  minReplicas: %[2]d
  maxReplicas: %[3]d
  metrics:
  - type: External
    external:
      metric:
        name: %[4]s
        selector:
          matchLabels:
            workload: %[1]s
      target:
        type: AverageValue
        averageValue: "%[5]d"
`, name, minReplicas, maxReplicas, metricLoad, loadPerReplica)
}

// portOf returns the port of a host:port address.
func portOf(addr string) (int, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("split address %s: %w", addr, err)
	}
	var n int
	if _, err := fmt.Sscan(port, &n); err != nil {
		return 0, fmt.Errorf("read port of %s: %w", addr, err)
	}
	return n, nil
}

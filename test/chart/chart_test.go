//go:build e2e

// Package chart tests charts/plimsoll with the helm that hack/cluster
// builds: helm lint and helm template for the default values and for the
// namespaced mode, asserting what the rendered objects grant and run.
// It needs no control plane, and runs beside test/e2e, which starts and
// stops one: a chart test that needs the API server belongs there.
package chart

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"plimsoll.dev/plimsoll/test/internal/kit"
)

// repoURL is the repository every rendering is given.
const repoURL = "https://git.example/platform/manifests.git"

// object is a rendered object, as much of it as the tests read.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Rules []struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
		Verbs     []string `json:"verbs"`
	} `json:"rules"`
	Spec struct {
		Replicas int `json:"replicas"`
		Strategy struct {
			Type string `json:"type"`
		} `json:"strategy"`
		Template struct {
			Spec struct {
				SecurityContext struct {
					RunAsNonRoot bool `json:"runAsNonRoot"`
					RunAsUser    int  `json:"runAsUser"`
				} `json:"securityContext"`
				Volumes    []volume `json:"volumes"`
				Containers []struct {
					Args            []string      `json:"args"`
					Env             []envVar      `json:"env"`
					VolumeMounts    []volumeMount `json:"volumeMounts"`
					SecurityContext struct {
						AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
						ReadOnlyRootFilesystem   bool  `json:"readOnlyRootFilesystem"`
						Capabilities             struct {
							Drop []string `json:"drop"`
						} `json:"capabilities"`
					} `json:"securityContext"`
					LivenessProbe struct {
						HTTPGet struct{ Path string } `json:"httpGet"`
					} `json:"livenessProbe"`
					ReadinessProbe struct {
						HTTPGet struct{ Path string } `json:"httpGet"`
					} `json:"readinessProbe"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// envVar is a rendered container's environment variable, as much of it as
// the tests read.
type envVar struct {
	Name      string `json:"name"`
	ValueFrom struct {
		ResourceFieldRef *struct {
			Resource string `json:"resource"`
		} `json:"resourceFieldRef"`
	} `json:"valueFrom"`
}

// volume is a rendered pod's volume, as much of it as the tests read.
type volume struct {
	Name      string `json:"name"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap"`
	Secret *struct {
		SecretName string `json:"secretName"`
	} `json:"secret"`
}

// volumeMount is a rendered container's volume mount.
type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
}

// render runs helm template with the given --set values and parses the
// objects.
func render(t *testing.T, sets ...string) []object {
	t.Helper()
	args := []string{"template", "plimsoll", "charts/plimsoll", "--namespace", "plimsoll-system", "--set", "repo.url=" + repoURL}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := kit.Helm(t, args...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var objs []object
	for _, doc := range strings.Split(out, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("parse a rendered document: %v\n%s", err, doc)
		}
		if o.Kind != "" {
			objs = append(objs, o)
		}
	}
	return objs
}

// kinds counts the rendered objects by kind.
func kinds(objs []object) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o.Kind]++
	}
	return n
}

// deployment returns the rendered Deployment.
func deployment(t *testing.T, objs []object) object {
	t.Helper()
	for _, o := range objs {
		if o.Kind == "Deployment" {
			return o
		}
	}
	t.Fatal("no Deployment rendered")
	return object{}
}

// TestChartLint runs helm lint for the default values, namespaced mode,
// verification keys and notifications.
func TestChartLint(t *testing.T) {
	for _, sets := range [][]string{nil, {"rbac.namespaced=true", "rbac.namespaces={team-a,team-b}"},
		{"verify.configMap=signers", "verify.openpgpKey=keys.asc", "verify.allowedSignersKey=allowed_signers"},
		{"verify.configMap=signers", "verify.trustedRootKey=trusted_root.json", "verify.issuer=https://issuer.example", "verify.identity=.*@example.com"},
		{"notifications.existingSecret=notify", "notifications.slack={team-a}"},
		{"syncs.enabled=true", "replicas=3", "syncs.serviceAccounts={team-a/deployer}",
			"syncs.declared.team-a.repository=https://git.example/a.git", "syncs.declared.team-a.serviceAccount=team-a/deployer"},
		{"syncs.enabled=true", "syncs.declared.team-b.repository=oci://registry.example/team-b", "syncs.declared.team-b.serviceAccount=team-b/deployer",
			"syncs.declared.team-b.verify.trustedRoot=the text of trusted_root.json", "syncs.declared.team-b.verify.issuer=https://issuer.example",
			"syncs.declared.team-b.verify.identity=.*@example.com"}} {
		args := []string{"lint", "charts/plimsoll", "--strict", "--set", "repo.url=" + repoURL}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		if out, err := kit.Helm(t, args...); err != nil {
			t.Errorf("helm lint %v: %v\n%s", sets, err, out)
		}
	}
}

// TestChartDefaults: cluster-wide rights, one replica without leader
// election replaced by Recreate, the restricted securityContext, probes on
// /healthz and /readyz.
func TestChartDefaults(t *testing.T) {
	objs := render(t)
	n := kinds(objs)
	if n["ClusterRole"] != 1 || n["ClusterRoleBinding"] != 1 || n["Role"] != 0 || n["ServiceAccount"] != 1 || n["Service"] != 1 || n["ServiceMonitor"] != 0 {
		t.Errorf("rendered kinds %v, want one ClusterRole and binding, a ServiceAccount, a Service, no Role, no ServiceMonitor", n)
	}
	d := deployment(t, objs)
	c := d.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"run", "--repo=" + repoURL, "--branch=main", "--sync-name=default", "--namespace=plimsoll-system", "--listen=:8080",
		"--git-timeout=1m", "--ui-listen=127.0.0.1:8081", "--log-level=info"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %q", c.Args, want)
		}
	}
	for _, unwanted := range []string{"--leader-elect", "--hold-rewinds", "--allow-empty"} {
		if slices.Contains(c.Args, unwanted) {
			t.Errorf("the defaults render %s: %v", unwanted, c.Args)
		}
	}
	if d.Spec.Strategy.Type != "Recreate" {
		t.Errorf("Deployment strategy %q, want Recreate: never two daemons on one sync", d.Spec.Strategy.Type)
	}
	sc := c.SecurityContext
	if !d.Spec.Template.Spec.SecurityContext.RunAsNonRoot || d.Spec.Template.Spec.SecurityContext.RunAsUser == 0 ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("securityContext pod %+v container %+v, want non-root, no privilege escalation, read-only root, all capabilities dropped",
			d.Spec.Template.Spec.SecurityContext, sc)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes %q and %q, want /healthz and /readyz", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
}

// TestChartOptions: replicas > 1 elect a leader; windows, Git credentials
// and timeout, the webhook secret, held rewinds, empty commits, Helm
// registry credentials and the web view's address become flags; the
// ServiceMonitor is optional; logLevel is the daemon's --log-level.
func TestChartOptions(t *testing.T) {
	objs := render(t, "replicas=2", "windows={deny 0 22 * * 5 62h}", "git.existingSecret=git", "git.tokenKey=token",
		"git.sshKeyKey=key", "git.knownHostsKey=hosts", "git.sshKeyPassphraseKey=phrase", "git.timeout=2m",
		"webhook.existingSecret=hook", "serviceMonitor.enabled=true", "holdRewinds=true", "allowEmpty=true",
		"helm.existingSecret=registries", "ui.listen=:8081", "ui.hosts={plimsoll.example}", "logLevel=debug")
	d := deployment(t, objs)
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--leader-elect", "--window=deny 0 22 * * 5 62h", "--git-token-file=/etc/plimsoll/git/token",
		"--ssh-key-passphrase-file=/etc/plimsoll/git/phrase", "--git-timeout=2m",
		"--webhook-secret-file=/etc/plimsoll/webhook/secret", "--hold-rewinds", "--allow-empty",
		"--helm-credentials-file=/etc/plimsoll/helm/config.json", "--ui-listen=:8081", "--ui-host=plimsoll.example", "--log-level=debug"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %q", args, want)
		}
	}
	mounted := slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].VolumeMounts, func(m volumeMount) bool {
		return m.Name == "helm" && m.MountPath == "/etc/plimsoll/helm" && m.ReadOnly
	})
	fromSecret := slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v volume) bool {
		return v.Name == "helm" && v.Secret != nil && v.Secret.SecretName == "registries"
	})
	if !mounted || !fromSecret {
		t.Errorf("helm.existingSecret: mounted read-only at /etc/plimsoll/helm %v, from Secret registries %v; want both", mounted, fromSecret)
	}
	if kinds(objs)["ServiceMonitor"] != 1 {
		t.Error("serviceMonitor.enabled rendered no ServiceMonitor")
	}
}

// TestChartMemoryLimit: the Go runtime's soft memory limit is the
// container's memory limit when there is one (512Mi by default), and is
// not set when there is none.
func TestChartMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want bool
	}{
		{name: "default limit", want: true},
		{name: "own limit", sets: []string{"resources.limits.memory=1Gi"}, want: true},
		{name: "no limits", sets: []string{"resources.limits=null"}},
		{name: "no resources", sets: []string{"resources=null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := deployment(t, render(t, tc.sets...)).Spec.Template.Spec.Containers[0].Env
			i := slices.IndexFunc(env, func(e envVar) bool { return e.Name == "GOMEMLIMIT" })
			switch {
			case !tc.want && i >= 0:
				t.Errorf("GOMEMLIMIT set without a memory limit: %+v", env[i])
			case tc.want && i < 0:
				t.Errorf("env %+v lacks GOMEMLIMIT", env)
			case tc.want && (env[i].ValueFrom.ResourceFieldRef == nil || env[i].ValueFrom.ResourceFieldRef.Resource != "limits.memory"):
				t.Errorf("GOMEMLIMIT %+v, want it from the container's limits.memory", env[i])
			}
		})
	}
}

// TestChartVerification: the verification keys come from a ConfigMap or a
// Secret, mounted read-only, and each key named becomes its flag; without
// verify values, no flag and no volume.
func TestChartVerification(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sets  []string
		flags []string
		// source is "configMap <name>" or "secret <name>"; "" for no volume.
		source string
	}{
		{name: "both kinds from a ConfigMap", sets: []string{"verify.configMap=signers", "verify.openpgpKey=keys.asc", "verify.allowedSignersKey=allowed_signers"},
			flags: []string{"--verify-key=/etc/plimsoll/verify/keys.asc", "--verify-ssh-key=/etc/plimsoll/verify/allowed_signers"}, source: "configMap signers"},
		{name: "SSH keys from a Secret", sets: []string{"verify.secret=signers", "verify.allowedSignersKey=allowed_signers"},
			flags: []string{"--verify-ssh-key=/etc/plimsoll/verify/allowed_signers"}, source: "secret signers"},
		{name: "no verification"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := deployment(t, render(t, tc.sets...)).Spec.Template.Spec
			c := spec.Containers[0]
			var flags []string
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--verify") {
					flags = append(flags, a)
				}
			}
			if !slices.Equal(flags, tc.flags) {
				t.Errorf("verification flags %q, want %q", flags, tc.flags)
			}
			var source string
			for _, v := range spec.Volumes {
				switch {
				case v.Name != "verify":
				case v.ConfigMap != nil:
					source = "configMap " + v.ConfigMap.Name
				case v.Secret != nil:
					source = "secret " + v.Secret.SecretName
				}
			}
			if source != tc.source {
				t.Errorf("verify volume from %q, want %q", source, tc.source)
			}
			mounted := slices.Contains(c.VolumeMounts, volumeMount{Name: "verify", MountPath: "/etc/plimsoll/verify", ReadOnly: true})
			if mounted != (tc.source != "") {
				t.Errorf("verify volume mounted read-only at /etc/plimsoll/verify: %v, want %v", mounted, tc.source != "")
			}
		})
	}
}

// TestChartOCI: with oci.repository the daemon takes its manifests from
// an OCI artifact: the oci flags in place of --repo and --branch, the
// cosign keys and keyless trusted roots from the verify volume, with the
// issuers and identities to trust.
func TestChartOCI(t *testing.T) {
	spec := deployment(t, render(t, "repo.url=", "oci.repository=oci://registry.example/team/app", "oci.semver=>=1.0.0 <2.0.0",
		"oci.plainHTTP=true", "verify.configMap=signers", "verify.cosignKey=cosign.pub", "verify.helmCosignKey=charts.pub",
		"verify.trustedRootKey=trusted_root.json", "verify.issuer=https://token.actions.githubusercontent.com",
		"verify.identity=https://github.com/team/app/.github/workflows/release.yml@refs/tags/v.*",
		"verify.helmTrustedRootKey=charts_root.json", "verify.helmIssuer=https://accounts.google.com", "verify.helmIdentity=.*@example.com")).Spec.Template.Spec
	args := spec.Containers[0].Args
	for _, want := range []string{"--oci-repository=oci://registry.example/team/app", "--oci-semver=>=1.0.0 <2.0.0", "--oci-plain-http",
		"--oci-verify-key=/etc/plimsoll/verify/cosign.pub", "--helm-verify-key=/etc/plimsoll/verify/charts.pub",
		"--oci-verify-trusted-root=/etc/plimsoll/verify/trusted_root.json", "--oci-verify-issuer=https://token.actions.githubusercontent.com",
		"--oci-verify-identity=https://github.com/team/app/.github/workflows/release.yml@refs/tags/v.*",
		"--helm-verify-trusted-root=/etc/plimsoll/verify/charts_root.json", "--helm-verify-issuer=https://accounts.google.com",
		"--helm-verify-identity=.*@example.com"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--repo") || strings.HasPrefix(a, "--branch") || strings.HasPrefix(a, "--oci-tag")
	}) {
		t.Errorf("args %q: an OCI install has no --repo, --branch or --oci-tag", args)
	}
}

// TestChartKeylessVerbatim: an issuer or identity is a regular expression,
// and reaches the daemon as given, backslashes and all, whatever YAML
// would make of its characters; without keyless values, no keyless flag.
func TestChartKeylessVerbatim(t *testing.T) {
	issuer := `https://token\.actions\.githubusercontent\.com`
	identity := `https://ci\.example/(a|b)/[^ #]+: "v.*"`
	out, err := kit.Helm(t, "template", "plimsoll", "charts/plimsoll", "--namespace", "plimsoll-system", "--show-only", "templates/deployment.yaml",
		"--set", "repo.url=", "--set", "oci.repository=oci://registry.example/team/app", "--set", "verify.secret=signers",
		"--set", "verify.trustedRootKey=trusted_root.json", "--set-literal", "verify.issuer="+issuer, "--set-literal", "verify.identity="+identity,
		"--set", "verify.helmTrustedRootKey=trusted_root.json", "--set-literal", "verify.helmIssuer="+issuer, "--set-literal", "verify.helmIdentity="+identity)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var d object
	if err := yaml.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("parse the rendered Deployment: %v\n%s", err, out)
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--oci-verify-issuer=" + issuer, "--oci-verify-identity=" + identity,
		"--helm-verify-issuer=" + issuer, "--helm-verify-identity=" + identity} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if args := deployment(t, render(t)).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--oci-verify-") || strings.HasPrefix(a, "--helm-verify-")
	}) {
		t.Errorf("default values verify artifacts or charts: %v", args)
	}
}

// TestChartNotifications: each key listed of the notifications Secret
// becomes a flag naming its file in the Secret, mounted read-only; no
// notification flag or volume without them.
func TestChartNotifications(t *testing.T) {
	d := deployment(t, render(t, "notifications.existingSecret=notify", "notifications.webhook={ops}",
		"notifications.slack={team-a,team-b}", "notifications.timeout=5s"))
	c := d.Spec.Template.Spec.Containers[0]
	for _, want := range []string{"--notify-webhook-file=/etc/plimsoll/notifications/ops", "--notify-slack-file=/etc/plimsoll/notifications/team-a",
		"--notify-slack-file=/etc/plimsoll/notifications/team-b", "--notify-timeout=5s"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %q", c.Args, want)
		}
	}
	mounted := slices.Contains(c.VolumeMounts, volumeMount{Name: "notifications", MountPath: "/etc/plimsoll/notifications", ReadOnly: true})
	secret := ""
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "notifications" && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if !mounted || secret != "notify" {
		t.Errorf("volume of Secret %q mounted: %v; want Secret notify read-only at /etc/plimsoll/notifications", secret, mounted)
	}
	if args := deployment(t, render(t)).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--notify-")
	}) {
		t.Errorf("default values notify: %v", args)
	}
}

// TestChartNamespaced: every right in each listed namespace, its own
// status rights in the release namespace, nothing cluster-wide, and the
// daemon limited to the listed namespaces.
func TestChartNamespaced(t *testing.T) {
	objs := render(t, "rbac.namespaced=true", "rbac.namespaces={team-a,team-b}")
	n := kinds(objs)
	if n["ClusterRole"] != 0 || n["ClusterRoleBinding"] != 0 {
		t.Errorf("rendered kinds %v, want no ClusterRole and no ClusterRoleBinding", n)
	}
	var roleNamespaces, bindingNamespaces []string
	for _, o := range objs {
		switch o.Kind {
		case "Role":
			roleNamespaces = append(roleNamespaces, o.Metadata.Namespace)
		case "RoleBinding":
			bindingNamespaces = append(bindingNamespaces, o.Metadata.Namespace)
		}
	}
	slices.Sort(roleNamespaces)
	slices.Sort(bindingNamespaces)
	want := []string{"plimsoll-system", "team-a", "team-b"}
	if !slices.Equal(roleNamespaces, want) || !slices.Equal(bindingNamespaces, want) {
		t.Errorf("Roles in %v and RoleBindings in %v, want both in %v", roleNamespaces, bindingNamespaces, want)
	}
	if args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--watch-namespace=team-a,team-b") {
		t.Errorf("args %v lack --watch-namespace=team-a,team-b", args)
	}
	if args := deployment(t, render(t)).Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--watch-namespace")
	}) {
		t.Errorf("cluster-wide mode limits the daemon: %v", args)
	}

	out, err := kit.Helm(t, "template", "plimsoll", "charts/plimsoll", "--set", "repo.url="+repoURL, "--set", "rbac.namespaced=true")
	if err == nil || !strings.Contains(err.Error(), "list the namespaces the daemon may write in") {
		t.Errorf("namespaced mode without namespaces: err %v, output %q", err, out)
	}
}

// TestChartRefusesBadValues: the schema and the templates refuse values
// that cannot work, with a message naming them.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "repo.url=" + repoURL, "--set-string", "replicas=two"}, "replicas"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "interval=soon"}, "interval"},
		{nil, "repo.url is required"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.configMap=a", "--set", "verify.secret=b", "--set", "verify.openpgpKey=k"},
			"verify.configMap and verify.secret are both set"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.configMap=a"},
			"verify.openpgpKey, verify.allowedSignersKey, verify.cosignKey, verify.helmCosignKey, verify.trustedRootKey or verify.helmTrustedRootKey is required"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "oci.repository=oci://registry.example/team/app"}, "repo.url and oci.repository are both set"},
		{[]string{"--set", "oci.repository=oci://registry.example/team/app", "--set", "oci.digest=sha256:abc"}, "oci/digest"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.allowedSignersKey=allowed_signers"}, "verify.configMap or verify.secret is required"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.trustedRootKey=trusted_root.json", "--set", "verify.issuer=https://issuer.example",
			"--set", "verify.identity=.*@example.com"}, "verify.configMap or verify.secret is required"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.helmTrustedRootKey=trusted_root.json", "--set", "verify.helmIssuer=https://issuer.example",
			"--set", "verify.helmIdentity=.*@example.com"}, "verify.configMap or verify.secret is required"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.configMap=a", "--set", "verify.trustedRootKey=trusted_root.json"},
			"verify.trustedRootKey, verify.issuer and verify.identity go together"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.issuer=https://issuer.example", "--set", "verify.identity=.*@example.com"},
			"verify.trustedRootKey, verify.issuer and verify.identity go together"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "verify.configMap=a", "--set", "verify.helmTrustedRootKey=trusted_root.json",
			"--set", "verify.helmIssuer=https://issuer.example"}, "verify.helmTrustedRootKey, verify.helmIssuer and verify.helmIdentity go together"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "notifications.slack={team}"}, "notifications.existingSecret is required"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "notifications.existingSecret=notify"}, "neither notifications.webhook nor notifications.slack"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "notifications.existingSecret=notify", "--set", "notifications.webhook={../ops}"}, "notifications/webhook/0"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "notifications.timeout=soon"}, "notifications/timeout"},
		{[]string{"--set", "repo.url=" + repoURL, "--set", "logLevel=loud"}, "logLevel"},
	} {
		out, err := kit.Helm(t, append([]string{"template", "plimsoll", "charts/plimsoll"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: err %v, output %q; want a refusal naming %q", tc.args, err, out, tc.want)
		}
	}
}

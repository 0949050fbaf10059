package helm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// values are the value sets the chart is rendered with: each mode, and
// every optional part on and off.
var values = map[string]map[string]any{
	"embedded, defaults": {},
	"embedded, everything on": {
		"tenants":         map[string]any{"enabled": true},
		"runtimeConfig":   map[string]any{"overrides": map[string]any{"team-a": map[string]any{"ingestion_rate": 50000}}},
		"webConfigSecret": "promhbase-web",
		"opentsdb":        map[string]any{"enabled": true},
		"retention":       "400d",
		"serviceMonitor":  map[string]any{"enabled": true},
		"prometheusRule":  map[string]any{"enabled": true},
		"dashboard":       map[string]any{"enabled": true},
		"extraArgs":       []any{"--web.enable-admin-api"},
	},
	"hbase, autoscaled": {
		"store": "hbase",
		"hbase": map[string]any{"zookeeperQuorum": "zk-0.zk:2181,zk-1.zk:2181", "autoscaling": map[string]any{"enabled": true},
			"tables": map[string]any{"data": "tsdb", "uid": "tsdb-uid"}},
	},
	"hbase, no budget": {
		"store": "hbase",
		"hbase": map[string]any{"zookeeperQuorum": "zk:2181", "podDisruptionBudget": map[string]any{"enabled": false}},
	},
}

// TestChart renders each value set and checks what it makes.
func TestChart(t *testing.T) {
	serveHelp := serveFlags(t)
	for name, vals := range values {
		t.Run(name, func(t *testing.T) {
			objs := render(t, vals)
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.kind]++
			}
			store := "embedded"
			if s, ok := vals["store"].(string); ok {
				store = s
			}
			switch store {
			case "embedded":
				if kinds["StatefulSet"] != 1 || kinds["Deployment"] != 0 || kinds["HorizontalPodAutoscaler"] != 0 || kinds["PodDisruptionBudget"] != 0 {
					t.Errorf("embedded: %v", kinds)
				}
			case "hbase":
				if kinds["Deployment"] != 1 || kinds["StatefulSet"] != 0 {
					t.Errorf("hbase: %v", kinds)
				}
			}
			for _, o := range objs {
				checkObject(t, o, vals, serveHelp)
			}
		})
	}
}

// object is a rendered manifest, decoded.
type object struct {
	file, kind string
	v          any
}

// render renders the chart with vals and decodes every manifest strictly
// into its API type: an unknown or misspelled field fails.
func render(t *testing.T, vals map[string]any) []object {
	t.Helper()
	ch, err := loader.Load("promhbase")
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "metrics", Namespace: "monitoring", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, file := range slices.Sorted(mapKeys(out)) {
		if !strings.HasSuffix(file, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(out[file], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s: %v\n%s", file, err, doc)
			}
			var meta struct{ APIVersion, Kind string }
			if err := json.Unmarshal(j, &meta); err != nil {
				t.Fatal(err)
			}
			v := newOf(t, meta.APIVersion, meta.Kind)
			dec := json.NewDecoder(bytes.NewReader(j))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Fatalf("%s: %s %s: %v\n%s", file, meta.APIVersion, meta.Kind, err, doc)
			}
			objs = append(objs, object{file: file, kind: meta.Kind, v: v})
		}
	}
	return objs
}

// newOf returns a new object of the API type of apiVersion and kind.
func newOf(t *testing.T, apiVersion, kind string) any {
	t.Helper()
	switch apiVersion + " " + kind {
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	}
	t.Fatalf("the chart makes a %s %s, which the test does not know", apiVersion, kind)
	return nil
}

// checkObject checks one manifest: the pod's security and probes and
// flags, the mixin's objects against its files.
func checkObject(t *testing.T, o object, vals map[string]any, serveHelp string) {
	t.Helper()
	switch v := o.v.(type) {
	case *appsv1.StatefulSet:
		if v.Spec.Replicas == nil || *v.Spec.Replicas != 1 || len(v.Spec.VolumeClaimTemplates) != 1 {
			t.Errorf("StatefulSet: replicas %v, claims %d", v.Spec.Replicas, len(v.Spec.VolumeClaimTemplates))
		}
		checkPod(t, &v.Spec.Template.Spec, serveHelp)
	case *appsv1.Deployment:
		checkPod(t, &v.Spec.Template.Spec, serveHelp)
	case *monitoringv1.PrometheusRule:
		var want []monitoringv1.RuleGroup
		for _, f := range []string{"rules.yaml", "alerts.yaml"} {
			var file struct{ Groups []monitoringv1.RuleGroup }
			b, err := os.ReadFile(filepath.Join("..", "mixin", f))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(b, &file); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want = append(want, file.Groups...)
		}
		if !reflect.DeepEqual(v.Spec.Groups, want) {
			t.Errorf("the PrometheusRule's groups differ from deploy/mixin's rules.yaml and alerts.yaml")
		}
	case *corev1.ConfigMap:
		if d, ok := v.Data["promhbase.json"]; ok {
			b, err := os.ReadFile(filepath.Join("..", "mixin", "dashboard.json"))
			if err != nil {
				t.Fatal(err)
			}
			if d != string(b) {
				t.Errorf("the dashboard ConfigMap differs from deploy/mixin/dashboard.json")
			}
			if v.Labels["grafana_dashboard"] != "1" {
				t.Errorf("dashboard labels %v", v.Labels)
			}
		}
	}
}

// checkPod checks the pod: non-root with a read-only root file system,
// probes on /-/healthy and /-/ready, a grace period to flush, and every
// flag one `promhbase serve --help` lists.
func checkPod(t *testing.T, pod *corev1.PodSpec, serveHelp string) {
	t.Helper()
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("pod security context %+v", pod.SecurityContext)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 60 {
		t.Errorf("termination grace %v", pod.TerminationGracePeriodSeconds)
	}
	c := pod.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container security context %+v", c.SecurityContext)
	}
	probes := map[string]string{}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
			continue
		}
		probes[name] = p.HTTPGet.Path
	}
	if probes["readiness"] != "/-/ready" || probes["liveness"] != "/-/healthy" {
		t.Errorf("probes %v", probes)
	}
	if c.Args[0] != "serve" {
		t.Errorf("args %q", c.Args)
	}
	for _, a := range c.Args[1:] {
		flag, _, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(flag, "--") || !strings.Contains(serveHelp, flag+"=") && !strings.Contains(serveHelp, flag+" ") && !strings.Contains(serveHelp, "[no-]"+flag[2:]) {
			t.Errorf("flag %s is not one of promhbase serve's", flag)
		}
	}
	probePathsAnswer(t, slices.Sorted(mapValues(probes)))
}

var servedPaths = map[string]bool{}

// probePathsAnswer checks that each path answers 200 on a real serve
// (once a path, the serve of serveFlags).
func probePathsAnswer(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if servedPaths[p] {
			continue
		}
		resp, err := http.Get(serveURL + p)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("probe %s: %d", p, resp.StatusCode)
			continue
		}
		servedPaths[p] = true
	}
}

// serveURL is the base URL of the serve that serveFlags starts.
var serveURL string

// serveFlags builds promhbase, returns `promhbase serve --help`, and
// starts a serve on an embedded store for the probes (stopped when the
// test ends).
func serveFlags(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "promhbase")
	build := exec.Command("go", "build", "-o", bin, "./cmd/promhbase")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build promhbase: %v\n%s", err, out)
	}
	help, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, help)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--web.listen-address=127.0.0.1:0", "--storage.embedded.path="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), `msg="promhbase serving" address=`); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		serveURL = "http://" + a
	case <-time.After(time.Minute):
		t.Fatal("serve did not log its address within a minute")
	}
	for range 100 {
		if resp, err := http.Get(serveURL + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(help)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(fmt.Sprintf("serve at %s not ready", serveURL))
	return ""
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestKubePrometheusStackExample: docs/kubernetes.md's remoteWrite and
// remoteRead entries decode strictly into the Prometheus Operator's
// types, and name the chart's Service.
func TestKubePrometheusStackExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## kube-prometheus-stack\n\n```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no kube-prometheus-stack yaml block in docs/kubernetes.md")
	}
	var doc struct {
		Prometheus struct {
			PrometheusSpec struct {
				RemoteWrite []monitoringv1.RemoteWriteSpec `json:"remoteWrite"`
				RemoteRead  []monitoringv1.RemoteReadSpec  `json:"remoteRead"`
			} `json:"prometheusSpec"`
		} `json:"prometheus"`
		Grafana any `json:"grafana"`
	}
	if err := yaml.UnmarshalStrict([]byte(block), &doc); err != nil {
		t.Fatalf("docs/kubernetes.md's example: %v", err)
	}
	spec := doc.Prometheus.PrometheusSpec
	if len(spec.RemoteWrite) != 1 || len(spec.RemoteRead) != 1 || !strings.HasPrefix(string(spec.RemoteWrite[0].URL), "http://metrics-promhbase.monitoring:9201/") {
		t.Errorf("example %+v", spec)
	}
}

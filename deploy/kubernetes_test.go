package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const kubeDir = "kubernetes"

// newObject returns the Go type of the Kubernetes API (or kustomize's) for
// a document's apiVersion and kind; a kind the test does not know fails, so
// that a new manifest cannot slip past the strict decoding.
func newObject(apiVersion, kind string) (any, bool) {
	switch apiVersion + "/" + kind {
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	case "kustomize.config.k8s.io/v1beta1/Kustomization":
		return &types.Kustomization{}, true
	}
	return nil, false
}

// decodeAll splits a YAML stream into documents and decodes each strictly
// (unknown or duplicate fields fail) into its API type.
func decodeAll(t *testing.T, name string, stream []byte) []any {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var out []any
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: document %d: %v", name, i, err)
		}
		obj, ok := newObject(tm.APIVersion, tm.Kind)
		if !ok {
			t.Errorf("%s: document %d: unknown apiVersion %q kind %q", name, i, tm.APIVersion, tm.Kind)
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Errorf("%s: document %d (%s): %v", name, i, tm.Kind, err)
			continue
		}
		out = append(out, obj)
	}
	return out
}

var commentLine = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(b []byte) []byte { return commentLine.ReplaceAll(b, nil) }

// TestKubernetesManifestsDecodeStrictly decodes every YAML file under
// deploy/kubernetes into the real API types, and finds each file listed in
// the kustomization, so that no manifest lies there unused.
func TestKubernetesManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.y*ml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var kust *types.Kustomization
	var resources []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeAll(t, f, b)
		if len(objs) == 0 {
			t.Errorf("%s: no document", f)
		}
		for _, o := range objs {
			if k, ok := o.(*types.Kustomization); ok {
				kust = k
			}
		}
		if filepath.Base(f) != "kustomization.yaml" {
			resources = append(resources, filepath.Base(f))
		}
	}
	if kust == nil {
		t.Fatal("no kustomization.yaml")
	}
	for _, r := range resources {
		if !slices.Contains(kust.Resources, r) {
			t.Errorf("%s is not among the kustomization's resources %v", r, kust.Resources)
		}
	}
}

// built is what kustomize builds from deploy/kubernetes, by kind.
type built struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func kustomizeBuild(t *testing.T) built {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), kubeDir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", kubeDir, err)
	}
	out, err := rm.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	b := built{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, o := range decodeAll(t, "kustomize build output", out) {
		switch o := o.(type) {
		case *appsv1.Deployment:
			if b.deployment != nil {
				t.Error("two Deployments")
			}
			b.deployment = o
		case *corev1.Service:
			b.service = o
		case *policyv1.PodDisruptionBudget:
			b.pdb = o
		case *corev1.ConfigMap:
			b.configMaps[o.Name] = o
		case *corev1.Secret:
			b.secrets[o.Name] = o
		default:
			t.Errorf("unexpected object %T in the build", o)
		}
	}
	if b.deployment == nil || b.service == nil || b.pdb == nil || len(b.configMaps) != 1 || len(b.secrets) != 1 {
		t.Fatalf("build lacks objects: %+v", b)
	}
	return b
}

// TestKustomizeBuild builds deploy/kubernetes with the kustomize library,
// decodes the result strictly and checks what an operator relies on.
func TestKustomizeBuild(t *testing.T) {
	b := kustomizeBuild(t)
	d := b.deployment
	pod := d.Spec.Template.Spec
	known := binaryEnvNames(t)

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %s, want 2", ptrString(d.Spec.Replicas))
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("rolling update %+v: want maxUnavailable 0", ru)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", d.Spec.Selector, d.Spec.Template.Labels)
	}
	if !labels.SelectorFromSet(b.service.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the Service's selector %v does not select the pods %v", b.service.Spec.Selector, d.Spec.Template.Labels)
	}
	pdbSel, err := metav1.LabelSelectorAsSelector(b.pdb.Spec.Selector)
	if err != nil || !pdbSel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget's selector %v does not select the pods", b.pdb.Spec.Selector)
	}
	if b.pdb.Spec.MinAvailable == nil || b.pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1", b.pdb.Spec.MinAvailable)
	}

	// The pod runs as the image's non-root user under the runtime's
	// default seccomp profile.
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v", psc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token it does not use")
	}

	if len(pod.InitContainers) != 1 || !slices.Equal(pod.InitContainers[0].Args, []string{"migrate"}) {
		t.Fatalf("init containers %+v: want one running migrate", pod.InitContainers)
	}
	if len(pod.Containers) != 1 || !slices.Equal(pod.Containers[0].Args, []string{"serve"}) {
		t.Fatalf("containers %+v: want one running serve", pod.Containers)
	}
	serve := pod.Containers[0]
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if c.Image != "localhost/schedbridge:latest" {
			t.Errorf("%s: image %q, want the one kustomize's images set", c.Name, c.Image)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("%s: securityContext %+v", c.Name, sc)
		}
		// A read-only root needs the data directory (spool files) and
		// /tmp writable.
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			if _, ok := volumes[m.Name]; !ok {
				t.Errorf("%s mounts the undefined volume %s", c.Name, m.Name)
			}
			mounts[m.MountPath] = m.Name
		}
		for _, p := range []string{"/var/lib/schedbridge", "/tmp"} {
			if v, ok := volumes[mounts[p]]; !ok || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil {
				t.Errorf("%s: %s is not a size-limited emptyDir", c.Name, p)
			}
		}
		// Configuration from the ConfigMap and the Secret, both in the build.
		var fromCM, fromSecret bool
		for _, e := range c.EnvFrom {
			switch {
			case e.ConfigMapRef != nil:
				_, fromCM = b.configMaps[e.ConfigMapRef.Name]
			case e.SecretRef != nil:
				_, fromSecret = b.secrets[e.SecretRef.Name]
			}
		}
		if !fromCM || !fromSecret {
			t.Errorf("%s: envFrom %+v does not name the built ConfigMap and Secret", c.Name, c.EnvFrom)
		}
		for _, e := range c.Env {
			checkEnvName(t, known, c.Name+" env", e.Name)
		}
		lim, req := c.Resources.Limits, c.Resources.Requests
		if lim.Memory().IsZero() || req.Memory().IsZero() || req.Cpu().IsZero() || req.Memory().Cmp(*lim.Memory()) > 0 {
			t.Errorf("%s: resources %+v: want memory and cpu requests, a memory limit, requests <= limits", c.Name, c.Resources)
		}
	}

	// Probes: liveness on the process alone, readiness on its checks.
	probePath := func(p *corev1.Probe) string {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "http" {
			return ""
		}
		return p.HTTPGet.Path
	}
	if probePath(serve.LivenessProbe) != "/livez" || probePath(serve.ReadinessProbe) != "/readyz" {
		t.Errorf("probes: liveness %q, readiness %q", probePath(serve.LivenessProbe), probePath(serve.ReadinessProbe))
	}
	// The readiness checks time out after 2 s each (api/probes.go); the
	// probe must wait longer, or a slow check reads as a probe timeout.
	if serve.ReadinessProbe.TimeoutSeconds <= 2 {
		t.Errorf("readiness timeout %d s: want more than the checks' 2 s", serve.ReadinessProbe.TimeoutSeconds)
	}
	var http, metrics *corev1.ContainerPort
	for i, p := range serve.Ports {
		switch p.Name {
		case "http":
			http = &serve.Ports[i]
		case "metrics":
			metrics = &serve.Ports[i]
		}
	}
	if http == nil || http.ContainerPort != 8080 {
		t.Errorf("port %+v: want http 8080", http)
	}
	// The metrics are served on a port of their own, named for a
	// PodMonitor, scraped at the pod's address and not exposed by the
	// Service that the API's clients use.
	ann := d.Spec.Template.Annotations
	if metrics == nil || metrics.ContainerPort == 8080 || ann["prometheus.io/scrape"] != "true" ||
		ann["prometheus.io/port"] != fmt.Sprint(metrics.ContainerPort) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("port %+v, annotations %v: want a port named metrics, apart from http, scraped at /metrics", metrics, ann)
	}
	for _, p := range b.service.Spec.Ports {
		if metrics != nil && (p.TargetPort.String() == "metrics" || p.TargetPort.IntValue() == int(metrics.ContainerPort) ||
			(p.TargetPort.String() == "" && p.Port == metrics.ContainerPort)) {
			t.Errorf("the Service exposes the metrics port: %+v", p)
		}
	}

	// Memory from the measured peak: the request covers the highest peak
	// RSS in docs/benchmarks.md (the day-ahead chain).
	peak := peakRSS(t)
	if req := serve.Resources.Requests.Memory(); req.Cmp(peak) < 0 {
		t.Errorf("memory request %s is below the measured peak RSS %s", req, &peak)
	}

	// The configuration: names the binary reads, the drain shorter than
	// the grace period, placeholders only in the example Secret.
	var cm *corev1.ConfigMap
	for _, c := range b.configMaps {
		cm = c
	}
	for name := range cm.Data {
		checkEnvName(t, known, "ConfigMap "+cm.Name, name)
	}
	// The binary listens for the metrics where the pod's port says, and on
	// the pod's address, not its default of loopback that no scraper reaches.
	if host, port, err := net.SplitHostPort(cm.Data["SCHEDBRIDGE_METRICS_ADDR"]); err != nil || metrics == nil ||
		port != fmt.Sprint(metrics.ContainerPort) || (host != "" && host != "0.0.0.0" && host != "::") {
		t.Errorf("SCHEDBRIDGE_METRICS_ADDR %q (%v): want every interface on the port named metrics", cm.Data["SCHEDBRIDGE_METRICS_ADDR"], err)
	}
	if goMem, ok := cm.Data["GOMEMLIMIT"]; ok {
		q, err := resource.ParseQuantity(strings.TrimSuffix(goMem, "B"))
		if err != nil || q.Cmp(*serve.Resources.Limits.Memory()) >= 0 {
			t.Errorf("GOMEMLIMIT %s (%v) must sit below the memory limit %s", goMem, err, serve.Resources.Limits.Memory())
		}
	}
	drain := durationOr(t, cm.Data["SCHEDBRIDGE_DRAIN_GRACE"], 0)
	shutdown := durationOr(t, cm.Data["SCHEDBRIDGE_SHUTDOWN_TIMEOUT"], 30*time.Second)
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= drain+shutdown {
		t.Errorf("terminationGracePeriodSeconds %v: want more than drain %s + shutdown %s", pod.TerminationGracePeriodSeconds, drain, shutdown)
	}
	for _, s := range b.secrets {
		for name, v := range s.StringData {
			checkEnvName(t, known, "Secret "+s.Name, name)
			if !strings.Contains(v, "CHANGE-ME") {
				t.Errorf("Secret %s: %s is not an obvious placeholder", s.Name, name)
			}
		}
		if len(s.Data) != 0 {
			t.Errorf("Secret %s: data %v; the example holds placeholders in stringData only", s.Name, s.Data)
		}
	}
}

func durationOr(t *testing.T, s string, def time.Duration) time.Duration {
	t.Helper()
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// peakRSS reads the chain's peak RSS from docs/benchmarks.md, the figure
// the memory request is derived from.
func peakRSS(t *testing.T) resource.Quantity {
	t.Helper()
	b, err := os.ReadFile("../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`peak RSS of the chain \| \*\*(\d+) MiB\*\*`).FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/benchmarks.md: no 'peak RSS of the chain' row")
	}
	return resource.MustParse(string(m[1]) + "Mi")
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

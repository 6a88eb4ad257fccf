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
	"strconv"
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
	case "kustomize.config.k8s.io/v1beta1/Kustomization", "kustomize.config.k8s.io/v1alpha1/Component":
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

// exampleSecretDir is the optional component with the example Secret.
const exampleSecretDir = kubeDir + "/example-secret"

// TestKubernetesManifestsDecodeStrictly decodes every YAML file of the base
// and of its component into the real API types, and finds each file listed
// in its kustomization (the configuration among the base's generated
// ConfigMap's files), so that no manifest lies there unused.
func TestKubernetesManifestsDecodeStrictly(t *testing.T) {
	for _, dir := range []string{kubeDir, exampleSecretDir} {
		t.Run(filepath.Base(dir), func(t *testing.T) { decodeDir(t, dir) })
	}
}

func decodeDir(t *testing.T, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
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
	others, _ := filepath.Glob(filepath.Join(dir, "*.env"))
	for _, f := range others {
		used := false
		for _, g := range kust.ConfigMapGenerator {
			used = used || slices.Contains(g.EnvSources, filepath.Base(f))
		}
		if !used {
			t.Errorf("%s is not among the files of a configMapGenerator", f)
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

// kustomizeBuild builds a kustomization directory: the base, or an overlay
// that a test writes.
func kustomizeBuild(t *testing.T, dir string) built {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
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
	if b.deployment == nil || b.service == nil || b.pdb == nil || len(b.configMaps) != 1 {
		t.Fatalf("build lacks objects: %+v", b)
	}
	return b
}

// overlay writes an overlay of the base into a temporary directory, with
// the extra lines of its kustomization, and returns the directory.
func overlay(t *testing.T, extra string) string {
	t.Helper()
	// kustomize takes the base by a relative path only.
	abs, err := filepath.Abs(kubeDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	text := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + base + "\n" +
		strings.ReplaceAll(extra, "BASE", base)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// configMap is the one ConfigMap of a build.
func (b built) configMap() *corev1.ConfigMap {
	for _, c := range b.configMaps {
		return c
	}
	return nil
}

// TestKustomizeSecretsAndConfig: the base renders no Secret, so that
// `kubectl apply -k` of the base or an overlay never puts placeholders over
// the credentials created from a secret store; the example Secret comes
// only with the component example-secret/. The configuration is a
// generated ConfigMap whose name changes with its content, so that an
// overlay that changes a value changes the pod template and rolls the pods.
func TestKustomizeSecretsAndConfig(t *testing.T) {
	base := kustomizeBuild(t, kubeDir)
	if len(base.secrets) != 0 {
		for name, s := range base.secrets {
			t.Errorf("the base renders the Secret %s with values for %d keys", name, len(s.StringData)+len(s.Data))
		}
	}
	cm := base.configMap()
	pod := base.deployment.Spec.Template.Spec
	if !strings.HasPrefix(cm.Name, "schedbridge-config-") {
		t.Errorf("ConfigMap %s: want the name of a configMapGenerator, with its content's hash", cm.Name)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		var cmRef, secretRef string
		for _, e := range c.EnvFrom {
			switch {
			case e.ConfigMapRef != nil:
				cmRef = e.ConfigMapRef.Name
			case e.SecretRef != nil:
				secretRef = e.SecretRef.Name
			}
		}
		if cmRef != cm.Name || secretRef != "schedbridge-secrets" {
			t.Errorf("%s: envFrom ConfigMap %q Secret %q, want %q and schedbridge-secrets", c.Name, cmRef, secretRef, cm.Name)
		}
	}

	// The component: the example Secret, placeholders only, of the name
	// the pods read.
	withExample := kustomizeBuild(t, overlay(t, "components:\n  - BASE/example-secret\n"))
	s, ok := withExample.secrets["schedbridge-secrets"]
	if !ok || len(withExample.secrets) != 1 {
		t.Fatalf("the component example-secret renders %v, want the Secret schedbridge-secrets", withExample.secrets)
	}
	known := binaryEnvNames(t)
	for name, v := range s.StringData {
		checkEnvName(t, known, "Secret "+s.Name, name)
		if !strings.Contains(v, "CHANGE-ME") {
			t.Errorf("Secret %s: %s is not an obvious placeholder", s.Name, name)
		}
	}
	if len(s.Data) != 0 || len(s.StringData) == 0 {
		t.Errorf("Secret %s: data %v; the example holds placeholders in stringData only", s.Name, s.Data)
	}

	// An overlay that changes one value: another ConfigMap name, and the
	// pod template names it, so the Deployment rolls.
	changed := kustomizeBuild(t, overlay(t, "configMapGenerator:\n  - name: schedbridge-config\n    behavior: merge\n    literals:\n      - SCHEDBRIDGE_LOG_LEVEL=debug\n"))
	ccm := changed.configMap()
	if ccm.Data["SCHEDBRIDGE_LOG_LEVEL"] != "debug" || ccm.Name == cm.Name {
		t.Errorf("after a change of the log level: ConfigMap %s %v, the base's %s", ccm.Name, ccm.Data["SCHEDBRIDGE_LOG_LEVEL"], cm.Name)
	}
	if ref := changed.deployment.Spec.Template.Spec.Containers[0].EnvFrom; !slices.ContainsFunc(ref, func(e corev1.EnvFromSource) bool {
		return e.ConfigMapRef != nil && e.ConfigMapRef.Name == ccm.Name
	}) {
		t.Errorf("the changed build's pod template reads %+v, not the new ConfigMap %s", ref, ccm.Name)
	}
}

// TestKustomizeBuild builds deploy/kubernetes with the kustomize library,
// decodes the result strictly and checks what an operator relies on.
func TestKustomizeBuild(t *testing.T) {
	b := kustomizeBuild(t, kubeDir)
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
	// Service links would put SCHEDBRIDGE_SERVICE_HOST, SCHEDBRIDGE_PORT
	// and more (from the Service named schedbridge) into the binary's own
	// prefix of variables.
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Errorf("enableServiceLinks %s, want false", ptrString(pod.EnableServiceLinks))
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
		// Configuration from the built ConfigMap and from the Secret that
		// the operator creates (TestKustomizeSecretsAndConfig).
		var fromCM, fromSecret bool
		for _, e := range c.EnvFrom {
			switch {
			case e.ConfigMapRef != nil:
				_, fromCM = b.configMaps[e.ConfigMapRef.Name]
			case e.SecretRef != nil:
				fromSecret = e.SecretRef.Name != ""
			}
		}
		if !fromCM || !fromSecret {
			t.Errorf("%s: envFrom %+v does not name the built ConfigMap and a Secret", c.Name, c.EnvFrom)
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
	// the grace period.
	cm := b.configMap()
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

// peakRSS reads the highest peak RSS of the chain that docs/benchmarks.md
// reports (rows "peak RSS of the chain..." with the figure in bold, at
// every measured size), the figure the memory request is derived from.
func peakRSS(t *testing.T) resource.Quantity {
	t.Helper()
	b, err := os.ReadFile("../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`\| peak RSS of the chain[^|\n]*\| \*\*(\d+) MiB\*\*`).FindAllSubmatch(b, -1)
	if ms == nil {
		t.Fatal("docs/benchmarks.md: no 'peak RSS of the chain' row")
	}
	peak := 0
	for _, m := range ms {
		peak = max(peak, atoi(t, string(m[1])))
	}
	return resource.MustParse(strconv.Itoa(peak) + "Mi")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

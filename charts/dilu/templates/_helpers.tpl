{{/*
The Kubernetes version rendered for, as MAJOR.MINOR.PATCH without a leading v or a vendor suffix
("v1.25.3+k3s1", "v1.27.9-eks-5e0fdde" and "v1.28.5-gke.1217000" give 1.25.3, 1.27.9, 1.28.5): the value
kubeVersion when set, else what Helm reports for the cluster.
*/}}
{{- define "dilu.kubeVersion" -}}
{{- $raw := .Values.kubeVersion | default .Capabilities.KubeVersion.Version | toString -}}
{{- $v := regexFind "[0-9]+\\.[0-9]+(\\.[0-9]+)?" $raw -}}
{{- if not $v -}}
{{- fail (printf "kubeVersion %q is no Kubernetes version (expected e.g. 1.25.3)" $raw) -}}
{{- end -}}
{{- if eq (len (splitList "." $v)) 2 -}}{{- $v = printf "%s.0" $v -}}{{- end -}}
{{- $v -}}
{{- end -}}

{{/*
The KubeSchedulerConfiguration API version for that Kubernetes version: the newest one it serves.
  kubescheduler.config.k8s.io/v1beta1  1.19 (introduced) – 1.22; removed in 1.23 (kubernetes/kubernetes#104782)
  kubescheduler.config.k8s.io/v1beta2  1.22 (introduced) – 1.27; removed in 1.28 (kubernetes/kubernetes#117649)
  kubescheduler.config.k8s.io/v1beta3  1.23 (introduced) – 1.28; removed in 1.29 (kubernetes/kubernetes#119994)
  kubescheduler.config.k8s.io/v1       1.25 (GA) –
Source: KEP-785, "Scheduler Component Config API" (kubernetes/enhancements,
keps/sig-scheduling/785-scheduler-component-config-api), and the removal PRs above. So: v1beta1 for 1.19–1.21,
v1beta2 for 1.22, v1beta3 for 1.23–1.24, v1 from 1.25.
*/}}
{{- define "dilu.schedulerConfigApiVersion" -}}
{{- if .Values.scheduler.configApiVersion -}}
{{- .Values.scheduler.configApiVersion -}}
{{- else -}}
{{- $v := include "dilu.kubeVersion" . -}}
{{- if semverCompare ">=1.25.0-0" $v -}}kubescheduler.config.k8s.io/v1
{{- else if semverCompare ">=1.23.0-0" $v -}}kubescheduler.config.k8s.io/v1beta3
{{- else if semverCompare ">=1.22.0-0" $v -}}kubescheduler.config.k8s.io/v1beta2
{{- else if semverCompare ">=1.19.0-0" $v -}}kubescheduler.config.k8s.io/v1beta1
{{- else -}}
{{- fail (printf "Kubernetes %s has no KubeSchedulerConfiguration the dilu-scheduler can use: Dilu needs 1.19 or newer" $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Whether kube-scheduler still has the --port flag. It chose the insecure HTTP port; since 1.23 it has no effect
(and may only be 0, kubernetes/kubernetes#96345), and it was deleted in 1.24 ("will be removed in v1.24", the
flag's deprecation text in cmd/kube-scheduler/app/options/deprecated.go). Passed as --port=0 only before 1.23.
*/}}
{{- define "dilu.kubeSchedulerHasPortFlag" -}}
{{- if semverCompare "<1.23.0-0" (include "dilu.kubeVersion" .) -}}true{{- end -}}
{{- end -}}

{{/* An image reference: dict "image" (registry, repository, tag) "root" $. */}}
{{- define "dilu.image" -}}
{{- $registry := .image.registry | default .root.Values.image.registry -}}
{{- $tag := .image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s/%s:%s" $registry .image.repository $tag -}}
{{- end -}}

{{/* kube-scheduler's image: by default the cluster's own version from registry.k8s.io. */}}
{{- define "dilu.kubeSchedulerImage" -}}
{{- $image := .Values.scheduler.kubeScheduler.image -}}
{{- $tag := $image.tag | default (printf "v%s" (include "dilu.kubeVersion" .)) -}}
{{- printf "%s/%s:%s" $image.registry $image.repository $tag -}}
{{- end -}}

{{/* The labels every object has in manifests/: dict "name" NAME. */}}
{{- define "dilu.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/part-of: dilu
{{- end -}}

{{/* The prefix of every object's name: namePrefix, or the release's name. */}}
{{- define "kro.prefix" -}}
{{- default .Release.Name .Values.namePrefix | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* The operator's own objects: Deployment, ServiceAccount, its ClusterRole and binding. */}}
{{- define "kro.name" -}}
{{- include "kro.prefix" . }}-operator
{{- end -}}

{{- define "kro.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{/* The labels manifests/base puts on every object, and helm's own. */}}
{{- define "kro.labels" -}}
app.kubernetes.io/name: kafka-retention-operator
app.kubernetes.io/part-of: kafka-retention-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The operator's pods: the instance label keeps two releases' selectors apart. */}}
{{- define "kro.selectorLabels" -}}
app.kubernetes.io/name: kafka-retention-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* A ClusterRoleBinding's subject: the operator's service account. */}}
{{- define "kro.subject" -}}
- kind: ServiceAccount
  name: {{ include "kro.name" . }}
  namespace: {{ include "kro.namespace" . }}
{{- end -}}

{{/* `kafka-retention run`'s arguments, in manifests/'s order. */}}
{{- define "kro.args" -}}
- run
{{- if .Values.watch.allNamespaces }}
- --all-namespaces
{{- else }}
{{- range .Values.watch.namespaces }}
- --namespace
- {{ . | quote }}
{{- end }}
{{- end }}
{{- if .Values.peering.enabled }}
- --peering
- {{ default (include "kro.prefix" .) .Values.peering.name | quote }}
{{- end }}
- --liveness
- {{ printf "http://0.0.0.0:%d/healthz" (int .Values.health.port) | quote }}
{{- if .Values.metrics.port }}
- --metrics-port
- {{ .Values.metrics.port | toString | quote }}
{{- end }}
{{- if .Values.sparkOnKubernetes.enabled }}
- --spark-mode
- {{ .Values.sparkOnKubernetes.mode | quote }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

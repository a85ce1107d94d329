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

{{/* A binding's subject: the operator's service account. */}}
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
- {{ printf "--tenancy=%s" .Values.tenancy | quote }}
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
- --spark-service-account
- {{ printf "%s-spark" (include "kro.prefix" .) | quote }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}


{{/* The rules on the operator's own namespaced resources: in the ClusterRole when it
watches every namespace, in a Role in each watched namespace otherwise. */}}
{{- define "kro.namespacedRules" -}}
# The operator's own resources: watch, record progress, write status.
- apiGroups: [kafka-retention.io]
  resources: [recordpurges, retentionpolicies, recorderasures]
  verbs: [get, list, watch, patch, update]
- apiGroups: [kafka-retention.io]
  resources: [recordpurges/status, retentionpolicies/status, recorderasures/status]
  verbs: [get, patch, update]
{{- end -}}

{{/* The cluster-scoped reads every install needs. */}}
{{- define "kro.clusterReadRules" -}}
# The administrator's KafkaClusterBindings (cluster-scoped): which namespaces may use
# which Kafka cluster, with which operations and topics. Read only.
- apiGroups: [kafka-retention.io]
  resources: [kafkaclusterbindings]
  verbs: [get, list, watch]
# Kopf discovers the resources it serves and the namespaces it watches; a binding's
# namespaceSelector is matched against the namespaces' labels.
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
{{- end -}}

{{/* Events, plan ConfigMaps and peering objects, in the namespaces served. */}}
{{- define "kro.servedRules" -}}
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
# The purge's plan and results ledger ConfigMaps when too large for status.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, create, update, deletecollection]
{{- end -}}

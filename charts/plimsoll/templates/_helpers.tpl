{{/* The release's full name: <release>-plimsoll, or the release name when it already says plimsoll. */}}
{{- define "plimsoll.fullname" -}}
{{- if contains "plimsoll" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-plimsoll" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object of the chart. */}}
{{- define "plimsoll.labels" -}}
app.kubernetes.io/name: plimsoll
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Labels that select the daemon's pods. */}}
{{- define "plimsoll.selectorLabels" -}}
app.kubernetes.io/name: plimsoll
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The ServiceAccount the daemon runs as. */}}
{{- define "plimsoll.serviceAccountName" -}}
{{- default (include "plimsoll.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The verbs the daemon gets where it writes: every verb; with syncs.enabled,
every verb but impersonate, which it gets only on syncs.serviceAccounts. */}}
{{- define "plimsoll.verbs" -}}
{{- if .Values.syncs.enabled -}}
["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind", "escalate"]
{{- else -}}
["*"]
{{- end -}}
{{- end -}}

{{/* The namespace sync declarations are taken from. */}}
{{- define "plimsoll.syncsNamespace" -}}
{{- default .Release.Namespace .Values.syncs.namespace -}}
{{- end -}}

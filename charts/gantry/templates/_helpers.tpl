{{/*
Prefix of every object's name: fullnameOverride, else the release name, with "-gantry" appended unless it contains
"gantry". At most 52 characters, so that <prefix>-controller fits the 63 of a Service name.
*/}}
{{- define "gantry.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The controller's ServiceAccount, ClusterRole, Deployment, Service: gantry-controller for the release gantry. */}}
{{- define "gantry.controller.name" -}}
{{- include "gantry.fullname" . }}-controller
{{- end -}}

{{/* The Deployment's selector: install/'s app.kubernetes.io/name, and the release, so that two releases never overlap. */}}
{{- define "gantry.controller.selectorLabels" -}}
app.kubernetes.io/name: gantry-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The controller's Pods: the selector and install/'s part-of, no version, so that a chart upgrade alone restarts nothing. */}}
{{- define "gantry.controller.podLabels" -}}
{{ include "gantry.controller.selectorLabels" . }}
app.kubernetes.io/part-of: gantry
{{- end -}}

{{/* Every object's labels: install/'s, and Helm's recommended ones. */}}
{{- define "gantry.controller.labels" -}}
{{ include "gantry.controller.podLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* repository@digest when a digest is given, else repository:tag (the chart's appVersion by default). */}}
{{- define "gantry.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The Secret whose key `token` the git webhook receiver checks. */}}
{{- define "gantry.webhookSecretName" -}}
{{- if and .Values.webhook.existingSecret .Values.webhook.token -}}
{{- fail "webhook: give existingSecret or token, not both" -}}
{{- end -}}
{{- .Values.webhook.existingSecret | default (printf "%s-webhook-token" (include "gantry.fullname" .)) -}}
{{- end -}}

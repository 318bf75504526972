{{/* The image every cairn pod runs, data movers included. */}}
{{- define "cairn.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "cairn.labels" -}}
app.kubernetes.io/name: cairn
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "cairn.selector" -}}
app.kubernetes.io/name: cairn
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cairn.repositorySecret" -}}
{{ .Values.repository.existingSecret | default "cairn-repository" }}
{{- end -}}

{{/* key=value,key=value of a map, for cairn's stringToString flags */}}
{{- define "cairn.pairs" -}}
{{- $pairs := list -}}
{{- range $k, $v := . -}}{{- $pairs = append $pairs (printf "%s=%v" $k $v) -}}{{- end -}}
{{- join "," $pairs -}}
{{- end -}}

{{/* What cairn's pods share: non-root, read-only root, nothing more. */}}
{{- define "cairn.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "cairn.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
{{- end -}}

{{/* The Temporal connection and the location, as CAIRN_ variables. */}}
{{- define "cairn.commonEnv" -}}
- {name: CAIRN_TEMPORAL_ADDRESS, value: {{ .Values.temporal.address | quote }}}
- {name: CAIRN_TEMPORAL_NAMESPACE, value: {{ .Values.temporal.namespace | quote }}}
- {name: CAIRN_LOG_FORMAT, value: json}
- {name: CAIRN_DATA_DIR, value: /data}
{{- with .Values.location.url }}
- {name: CAIRN_LOCATION, value: {{ . | quote }}}
{{- end }}
{{- with .Values.temporal.uiURL }}
- {name: CAIRN_UI_URL, value: {{ . | quote }}}
{{- end }}
{{- if .Values.temporal.tlsSecret }}
- {name: CAIRN_TLS_CERT, value: /etc/cairn/temporal-tls/tls.crt}
- {name: CAIRN_TLS_KEY, value: /etc/cairn/temporal-tls/tls.key}
- {name: CAIRN_TLS_CA, value: /etc/cairn/temporal-tls/ca.crt}
{{- with .Values.temporal.tlsServerName }}
- {name: CAIRN_TLS_SERVER_NAME, value: {{ . | quote }}}
{{- end }}
{{- end }}
{{- if .Values.encryption.existingSecret }}
- {name: CAIRN_ENCRYPTION_KEY, value: /etc/cairn/encryption/key.txt}
{{- end }}
{{- if .Values.temporal.apiKeySecret.name }}
- name: CAIRN_API_KEY
  valueFrom: {secretKeyRef: {name: {{ .Values.temporal.apiKeySecret.name }}, key: {{ .Values.temporal.apiKeySecret.key }}}}
{{- end }}
{{- end -}}

{{- define "cairn.commonEnvFrom" -}}
{{- with .Values.location.credentialsSecret }}
envFrom:
  - secretRef: {name: {{ . }}}
{{- end }}
{{- end -}}

{{- define "cairn.commonMounts" -}}
- {name: data, mountPath: /data}
- {name: tmp, mountPath: /tmp}
{{- if .Values.temporal.tlsSecret }}
- {name: temporal-tls, mountPath: /etc/cairn/temporal-tls, readOnly: true}
{{- end }}
{{- if .Values.encryption.existingSecret }}
- {name: encryption-key, mountPath: /etc/cairn/encryption, readOnly: true}
{{- end }}
{{- with .Values.location.hostPath }}
- {name: location, mountPath: {{ . }}}
{{- end }}
{{- range .Values.locations }}{{ if .credentialsSecret }}
- {name: location-{{ .name }}, mountPath: /etc/cairn/locations/{{ .name }}, readOnly: true}
{{- end }}{{ end }}
{{- end -}}

{{- define "cairn.commonVolumes" -}}
- {name: data, emptyDir: {}}
- {name: tmp, emptyDir: {}}
{{- if .Values.temporal.tlsSecret }}
- {name: temporal-tls, secret: {secretName: {{ .Values.temporal.tlsSecret }}}}
{{- end }}
{{- with .Values.encryption.existingSecret }}
- {name: encryption-key, secret: {secretName: {{ . }}, items: [{key: key.txt, path: key.txt}]}}
{{- end }}
{{- with .Values.location.hostPath }}
- {name: location, hostPath: {path: {{ . }}, type: Directory}}
{{- end }}
{{- range .Values.locations }}{{ if .credentialsSecret }}
- {name: location-{{ .name }}, secret: {secretName: {{ .credentialsSecret }}}}
{{- end }}{{ end }}
{{- end -}}

{{/* The Secrets data mover pods use, which the worker copies into their
namespace: a comma-separated list, empty when none. */}}
{{- define "cairn.dataMoverSecrets" -}}
{{- $names := list -}}
{{- with .Values.temporal.tlsSecret }}{{ $names = append $names . }}{{ end -}}
{{- with .Values.encryption.existingSecret }}{{ $names = append $names . }}{{ end -}}
{{- with .Values.temporal.apiKeySecret.name }}{{ $names = append $names . }}{{ end -}}
{{- with .Values.location.credentialsSecret }}{{ $names = append $names . }}{{ end -}}
{{- range .Values.locations }}{{ with .credentialsSecret }}{{ $names = append $names . }}{{ end }}{{ end -}}
{{- join "," (uniq $names) -}}
{{- end -}}

{{/* The named locations, as --location-name arguments. */}}
{{- define "cairn.locationArgs" -}}
{{- range $i, $l := .Values.locations }}
{{- $opts := "" }}
{{- if $l.readOnly }}{{ $opts = print $opts ";readonly" }}{{ end }}
{{- if $l.credentialsSecret }}{{ $opts = printf "%s;credentials=/etc/cairn/locations/%s" $opts $l.name }}{{ end }}
{{- if $l.immutable }}{{ $opts = printf "%s;immutable=%s" $opts $l.immutable }}{{ end }}
{{- if $l.lockMode }}{{ $opts = printf "%s;lock-mode=%s" $opts $l.lockMode }}{{ end }}
{{- if $i }}{{ "\n" }}{{ end -}}
- {{ printf "--location-name=%s=%s%s" $l.name $l.url $opts | quote }}
{{- end }}
{{- end -}}

{{/* The Secret the API serves HTTPS with; empty when it serves plain HTTP. */}}
{{- define "cairn.apiTLSSecret" -}}
{{- if .Values.api.tlsSecret }}{{ .Values.api.tlsSecret }}{{ else if not .Values.api.allowPlainHTTP }}cairn-api-tls{{ end }}
{{- end }}

{{- /* The MutatingWebhookConfiguration of cairn's admission webhook. */}}
{{- define "cairn.webhookConfiguration" -}}
{{ .Release.Name }}-resources
{{- end }}

{{- define "cairn.webhookEnabled" -}}
{{- if and .Values.api.enabled .Values.api.controller .Values.api.webhook.enabled }}true{{ end }}
{{- end }}

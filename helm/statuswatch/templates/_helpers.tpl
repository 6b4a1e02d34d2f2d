{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "statuswatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, plus the chart name unless it already has it. */}}
{{- define "statuswatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "statuswatch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "statuswatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "statuswatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "statuswatch.labels" -}}
helm.sh/chart: {{ include "statuswatch.chart" . }}
{{ include "statuswatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: statuswatch
{{- end }}

{{- define "statuswatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "statuswatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "statuswatch.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The ops port: config.server.port (the daemon listens there), 8080 when unset. */}}
{{- define "statuswatch.opsPort" -}}
{{- $server := .Values.config.server | default dict }}
{{- $port := $server.port | default 8080 }}
{{- if or (not (regexMatch "^[0-9]+$" (toString $port))) (lt (int $port) 1) (gt (int $port) 65535) }}
{{- fail "config.server.port must be a fixed integer port between 1 and 65535 (the container port, probes and Service follow it)" }}
{{- end }}
{{- $port | int }}
{{- end }}

{{/* The Secret the pod reads its environment from: the existing one, the chart's, or none (""). */}}
{{- define "statuswatch.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else if .Values.secrets.create }}
{{- include "statuswatch.fullname" . }}
{{- end }}
{{- end }}

{{/* True ("true") when the chart renders its own Secret. */}}
{{- define "statuswatch.createSecret" -}}
{{- if and .Values.secrets.create (not .Values.secrets.existingSecret) }}true{{ end }}
{{- end }}

{{/* The statuswatch config file as YAML. */}}
{{- define "statuswatch.configYaml" -}}
{{- toYaml .Values.config }}
{{- end }}

{{/*
Environment variables the chart itself provides to the container, as a dict name → source.
Used to check that every required ${VAR} in the config will be set.
*/}}
{{- define "statuswatch.providedEnv" -}}
{{- $env := dict "STATUSWATCH_CONFIG" "chart" "LOG_LEVEL" "chart" "STATUSWATCH_GRACE_MS" "chart" "NODE_ENV" "image" }}
{{- if .Values.redis.url }}
{{- $_ := set $env "REDIS_URL" "redis.url" }}
{{- end }}
{{- if include "statuswatch.createSecret" . }}
{{- range $key, $value := .Values.secrets.values }}
{{- if $value }}
{{- $_ := set $env $key (printf "secrets.values.%s" $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- range .Values.extraEnv }}
{{- $_ := set $env .name "extraEnv" }}
{{- end }}
{{- toJson $env }}
{{- end }}

{{/* Names of the variables the config requires (${VAR} without a default), sorted, as JSON. */}}
{{- define "statuswatch.requiredEnv" -}}
{{- $names := list }}
{{- range regexFindAll "\\$?\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}" (include "statuswatch.configYaml" .) -1 }}
{{- if not (hasPrefix "$$" .) }}
{{- $names = append $names (trimSuffix "}" (trimPrefix "${" .)) }}
{{- end }}
{{- end }}
{{- toJson ($names | uniq | sortAlpha) }}
{{- end }}

{{/*
Required variables nothing visible to the chart provides, as JSON. Variables from an existing
Secret or extraEnvFrom cannot be seen at render time; those are listed in NOTES.txt instead.
*/}}
{{- define "statuswatch.missingEnv" -}}
{{- $provided := include "statuswatch.providedEnv" . | fromJson }}
{{- $missing := list }}
{{- range include "statuswatch.requiredEnv" . | fromJsonArray }}
{{- if not (hasKey $provided .) }}
{{- $missing = append $missing . }}
{{- end }}
{{- end }}
{{- toJson $missing }}
{{- end }}

{{/* Fails rendering when the config requires a variable that provably nothing sets. */}}
{{- define "statuswatch.validate" -}}
{{- /* An explicit env entry beats envFrom: redis.url would silently win over the Secret's REDIS_URL. */}}
{{- $secretValues := .Values.secrets.values | default dict }}
{{- if and .Values.redis.url (get $secretValues "REDIS_URL") }}
{{- fail "redis.url and secrets.values.REDIS_URL are both set, and redis.url would win: set redis.url to an empty string (redis.url=) to use the Secret's REDIS_URL" }}
{{- end }}
{{- $opaque := or .Values.secrets.existingSecret .Values.extraEnvFrom }}
{{- $missing := include "statuswatch.missingEnv" . | fromJsonArray }}
{{- if and $missing (not $opaque) }}
{{- fail (printf "config requires environment variable(s) %s, but nothing sets them: add them to secrets.values (with secrets.create), extraEnv, or an existing Secret (secrets.existingSecret)" (join ", " $missing)) }}
{{- end }}
{{- end }}

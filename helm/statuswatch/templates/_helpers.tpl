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

{{/* The delivery Deployment's name (delivery.separate). */}}
{{- define "statuswatch.deliveryFullname" -}}
{{- printf "%s-delivery" (include "statuswatch.fullname" .) | trunc 63 | trimSuffix "-" }}
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

{{/*
The delivery Deployment's pods (delivery.separate). A Deployment's selector is immutable and the
main one selects name + instance, so these pods carry another name ("<name>-delivery"): any pod
with the main name and instance would be counted, and scaled away, by the main Deployment.
*/}}
{{- define "statuswatch.deliverySelectorLabels" -}}
app.kubernetes.io/name: {{ printf "%s-delivery" (include "statuswatch.name" .) | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "statuswatch.deliveryLabels" -}}
helm.sh/chart: {{ include "statuswatch.chart" . }}
{{ include "statuswatch.deliverySelectorLabels" . }}
app.kubernetes.io/component: delivery
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: statuswatch
{{- end }}

{{/*
The Service's selector: the main pods; with delivery.separate, every pod of the release (both
Deployments carry part-of: statuswatch), so /metrics of the delivery pods is scraped too (the
ServiceMonitor follows the Service) and the API, served by every pod, is spread over all of them.
*/}}
{{- define "statuswatch.serviceSelectorLabels" -}}
{{- if .Values.delivery.separate }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: statuswatch
{{- else }}
{{- include "statuswatch.selectorLabels" . }}
{{- end }}
{{- end }}

{{/* A `--threads` value: "auto" or a count (values.yaml numbers are floats: printed as integers). */}}
{{- define "statuswatch.threadsArg" -}}
{{- if eq (toString .) "auto" }}auto{{ else }}{{ int64 . }}{{ end }}
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

{{/*
The pod template of both Deployments; they differ only in their labels, arguments and resources.
Takes a dict: root (the chart's context), labels (the pods' labels, YAML), args (the container's
arguments after the image's `node dist/cli.js`, a list) and resources.
*/}}
{{- define "statuswatch.podTemplate" -}}
{{- $root := .root -}}
metadata:
  annotations:
    # A config change rolls the pods (the daemon also reloads the mounted file on change).
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- if include "statuswatch.createSecret" $root }}
    # Environment variables are read at start only: a Secret change needs new pods.
    checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
    {{- end }}
    {{- with $root.Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  labels:
    {{- .labels | nindent 4 }}
    {{- with $root.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  serviceAccountName: {{ include "statuswatch.serviceAccountName" $root }}
  automountServiceAccountToken: false
  {{- with $root.Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ $root.Values.terminationGracePeriodSeconds }}
  containers:
    - name: statuswatch
      image: {{ include "statuswatch.image" $root | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      # The image's entrypoint is `node dist/cli.js`.
      args: {{ toJson .args }}
      ports:
        - name: http
          containerPort: {{ include "statuswatch.opsPort" $root }}
          protocol: TCP
      env:
        - name: STATUSWATCH_CONFIG
          value: /etc/statuswatch/statuswatch.yaml
        - name: LOG_LEVEL
          value: {{ $root.Values.logLevel | quote }}
        # The daemon's own drain deadline, kept inside terminationGracePeriodSeconds so it
        # exits cleanly before the kubelet's SIGKILL.
        {{- $grace := int $root.Values.terminationGracePeriodSeconds }}
        - name: STATUSWATCH_GRACE_MS
          value: {{ ternary (mul (sub $grace 5) 1000) (mul $grace 800) (gt $grace 10) | quote }}
        {{- with $root.Values.redis.url }}
        - name: REDIS_URL
          value: {{ . | quote }}
        {{- end }}
        {{- with $root.Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- $secretName := include "statuswatch.secretName" $root }}
      {{- if or $secretName $root.Values.extraEnvFrom }}
      envFrom:
        {{- if $secretName }}
        - secretRef:
            name: {{ $secretName }}
        {{- end }}
        {{- with $root.Values.extraEnvFrom }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: http
        {{- toYaml $root.Values.livenessProbe | nindent 8 }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: http
        {{- toYaml $root.Values.readinessProbe | nindent 8 }}
      resources:
        {{- toYaml .resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        # The whole directory, not a subPath: subPath mounts never see ConfigMap updates.
        - name: config
          mountPath: /etc/statuswatch
          readOnly: true
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: config
      configMap:
        name: {{ include "statuswatch.fullname" $root }}
    - name: tmp
      emptyDir:
        {{- with $root.Values.tmpVolume.sizeLimit }}
        sizeLimit: {{ . }}
        {{- else }} {}
        {{- end }}
  {{- with $root.Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $root.Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

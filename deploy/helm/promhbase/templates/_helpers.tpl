{{/* The chart's names and labels. */}}
{{- define "promhbase.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "promhbase.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "promhbase.labels" -}}
{{ include "promhbase.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "promhbase.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "promhbase.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The flags of `promhbase serve`. */}}
{{- define "promhbase.args" -}}
- serve
- --web.listen-address=:{{ .Values.service.port }}
{{- if eq .Values.store "embedded" }}
- --storage.embedded.path=/data
{{- else }}
- --storage.backend=hbase
- --hbase.zookeeper.quorum={{ required "hbase.zookeeperQuorum is required with store: hbase" .Values.hbase.zookeeperQuorum }}
{{- with .Values.hbase.tables.data }}
- --hbase.table.data={{ . }}
{{- end }}
{{- with .Values.hbase.tables.uid }}
- --hbase.table.uid={{ . }}
{{- end }}
{{- end }}
- --auto-gomemlimit.ratio={{ .Values.memLimitRatio }}
{{- with .Values.retention }}
- --storage.retention.time={{ . }}
{{- end }}
{{- if .Values.tenants.enabled }}
- --auth.multitenancy-enabled
{{- if .Values.tenants.createOnFirstWrite }}
- --tenant.create-on-first-write
{{- end }}
{{- end }}
{{- if .Values.runtimeConfig }}
- --runtime-config.file=/etc/promhbase/runtime/runtime.yaml
{{- end }}
{{- if .Values.webConfigSecret }}
- --web.config.file=/etc/promhbase/web/web.yml
{{- end }}
{{- if .Values.opentsdb.enabled }}
- --opentsdb.listen-address=:{{ .Values.opentsdb.port }}
{{- if .Values.opentsdb.autoCreateMetrics }}
- --opentsdb.auto-create-metrics
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}

{{/* The pod's spec, shared by the StatefulSet and the Deployment. */}}
{{- define "promhbase.podSpec" -}}
serviceAccountName: {{ include "promhbase.serviceAccountName" . }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
containers:
  - name: promhbase
    image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    args:
      {{- include "promhbase.args" . | nindent 6 }}
    {{- with .Values.extraEnv }}
    env:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    ports:
      - name: http
        containerPort: {{ .Values.service.port }}
        protocol: TCP
      {{- if .Values.opentsdb.enabled }}
      - name: opentsdb
        containerPort: {{ .Values.opentsdb.port }}
        protocol: TCP
      {{- end }}
    startupProbe:
      httpGet:
        path: /-/healthy
        port: http
        {{- if .Values.webConfigSecret }}
        scheme: HTTPS
        {{- end }}
      periodSeconds: 5
      failureThreshold: 120
    livenessProbe:
      httpGet:
        path: /-/healthy
        port: http
        {{- if .Values.webConfigSecret }}
        scheme: HTTPS
        {{- end }}
      periodSeconds: 10
      failureThreshold: 6
    readinessProbe:
      httpGet:
        path: /-/ready
        port: http
        {{- if .Values.webConfigSecret }}
        scheme: HTTPS
        {{- end }}
      periodSeconds: 5
      failureThreshold: 3
    resources:
      {{- toYaml .Values.resources | nindent 6 }}
    securityContext:
      {{- toYaml .Values.securityContext | nindent 6 }}
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      {{- if eq .Values.store "embedded" }}
      - name: data
        mountPath: /data
      {{- end }}
      {{- if .Values.runtimeConfig }}
      - name: runtime-config
        mountPath: /etc/promhbase/runtime
        readOnly: true
      {{- end }}
      {{- if .Values.webConfigSecret }}
      - name: web-config
        mountPath: /etc/promhbase/web
        readOnly: true
      {{- end }}
volumes:
  - name: tmp
    emptyDir: {}
  {{- if .Values.runtimeConfig }}
  - name: runtime-config
    configMap:
      name: {{ include "promhbase.fullname" . }}-runtime
  {{- end }}
  {{- if .Values.webConfigSecret }}
  - name: web-config
    secret:
      secretName: {{ .Values.webConfigSecret }}
  {{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

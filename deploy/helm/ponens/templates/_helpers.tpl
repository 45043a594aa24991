{{/* The name of a part's objects: <release>-ponens-<part>. */}}
{{- define "ponens.name" -}}
{{- printf "%s-ponens-%s" .root.Release.Name .part | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of a part. */}}
{{- define "ponens.labels" -}}
app.kubernetes.io/name: ponens
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .part }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The selector of a part. */}}
{{- define "ponens.selector" -}}
app.kubernetes.io/name: ponens
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .part }}
{{- end -}}

{{/* The image of every part. */}}
{{- define "ponens.image" -}}
image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- end -}}

{{/* The environment every part shares: the NATS servers. */}}
{{- define "ponens.natsEnv" -}}
- name: PONENS_NATS_URL
  value: {{ tpl .Values.ponens.natsURL . | quote }}
{{- end -}}

{{/* A part's NATS user (its role) and its password from the Secret. */}}
{{- define "ponens.natsUser" -}}
- name: PONENS_NATS_USER
  value: {{ .role }}
- name: PONENS_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .root.Values.ponens.secretName }}
      key: nats-{{ .role }}-password
{{- end -}}

{{/* The config and rules volumes, and their mounts. */}}
{{- define "ponens.volumes" -}}
- name: config
  configMap:
    name: {{ include "ponens.name" (dict "root" . "part" "config") }}
{{- if .Values.ponens.rulesConfigMap }}
- name: rules
  configMap:
    name: {{ .Values.ponens.rulesConfigMap }}
{{- end }}
{{- end -}}

{{- define "ponens.mounts" -}}
- name: config
  mountPath: /etc/ponens/config
  readOnly: true
{{- if .Values.ponens.rulesConfigMap }}
- name: rules
  mountPath: /etc/ponens/rules
  readOnly: true
{{- end }}
{{- end -}}

{{/* The pod security every part runs with. */}}
{{- define "ponens.securityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end -}}

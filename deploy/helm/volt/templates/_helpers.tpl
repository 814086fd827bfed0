{{/* The Volt image; gpu: the CUDA build of the same tag. */}}
{{- define "volt.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- define "volt.imageCuda" -}}
{{ include "volt.image" . }}{{ .Values.image.cudaSuffix }}
{{- end -}}

{{- define "volt.labels" -}}
app.kubernetes.io/part-of: volt
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The object store's endpoint: the value, or the chart's MinIO Service. */}}
{{- define "volt.s3Endpoint" -}}
{{- if .Values.s3.endpoint -}}
{{ .Values.s3.endpoint }}
{{- else if .Values.minio.enabled -}}
http://volt-minio.{{ .Values.namespaces.volt }}.svc:9000
{{- else -}}
{{ fail "s3.endpoint is required when minio.enabled is false" }}
{{- end -}}
{{- end -}}

{{/* An env entry from one of the chart's Secrets: (list $ "VAR" "secretValuesName" "key" [optional]). */}}
{{- define "volt.secretEnv" -}}
{{- $root := index . 0 -}}
{{- $secret := index $root.Values.secrets (index . 2) -}}
- name: {{ index . 1 }}
  valueFrom:
    secretKeyRef: { name: {{ $secret.name }}, key: {{ index . 3 }}{{ if gt (len .) 4 }}, optional: true{{ end }} }
{{- end -}}

{{/* The S3 credentials every Volt process reads. */}}
{{- define "volt.s3Env" -}}
{{ include "volt.secretEnv" (list . "VOLT_S3_ACCESS_KEY" "s3" "access-key") }}
{{ include "volt.secretEnv" (list . "VOLT_S3_SECRET_KEY" "s3" "secret-key") }}
{{- end -}}

{{/* The pod security context of Volt's own pods: the image's uid 1000. */}}
{{- define "volt.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  seccompProfile:
    type: RuntimeDefault
{{- end -}}

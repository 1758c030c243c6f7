{{/*
The labels helm adds to every object it renders. The pods' selectors and template labels stay
the manifests' own `app: ...`: a chart upgrade never changes a selector or restarts a pod by
itself. deploy/helm/check drops these before comparing the chart with the manifests.
*/}}
{{- define "contour.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The contour-rs image. */}}
{{- define "contour.image" -}}
{{ .Values.contour.image.repository }}:{{ .Values.contour.image.tag }}
{{- end }}

{{/* Envoy's image. */}}
{{- define "contour.envoyImage" -}}
{{ .Values.envoy.image.repository }}:{{ .Values.envoy.image.tag }}
{{- end }}

{{/* A Deployment's Envoys on different nodes where the scheduler can. */}}
{{- define "contour.envoySpread" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          app: envoy
{{- end }}

{{/* The pod security context every pod of the chart runs with: the image's user nobody. */}}
{{- define "contour.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65534
runAsGroup: 65534
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The container security context of the contour-rs containers. */}}
{{- define "contour.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end }}

{{/*
A pod's scheduling and pull settings: nodeSelector, tolerations, affinity (each when set) and
imagePullSecrets. Takes a dict: `root` (the chart's context) and `values` (the component's).
*/}}
{{- define "contour.scheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

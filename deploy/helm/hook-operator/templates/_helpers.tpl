{{/* The release's full name: the release name, with the chart's name unless it contains it. */}}
{{- define "hook-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hook-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hook-operator.labels" -}}
{{ include "hook-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "hook-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "hook-operator.fullname" .) -}}
{{- else -}}
{{- required "serviceAccount.name: name the existing ServiceAccount to run as, or set serviceAccount.create" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The port of listenAddress (host:port or :port). */}}
{{- define "hook-operator.port" -}}
{{- $port := regexFind "[0-9]+$" .Values.listenAddress -}}
{{- if not $port -}}
{{- fail (printf "listenAddress %q: give host:port or :port, such as \":9115\"" .Values.listenAddress) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/* The port of healthListenAddress, the probes'. */}}
{{- define "hook-operator.healthPort" -}}
{{- $port := regexFind "[0-9]+$" .Values.healthListenAddress -}}
{{- if not $port -}}
{{- fail (printf "healthListenAddress %q: give host:port or :port, such as \":9116\"" .Values.healthListenAddress) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/* The webhook client CA's volume source, or "" without one; fails when
the client CA is on and names neither a ConfigMap nor a Secret. */}}
{{- define "hook-operator.clientCA" -}}
{{- with .Values.webhook.clientCA -}}
{{- if and .configMap .secret -}}
{{- fail "webhook.clientCA: give configMap or secret, not both" -}}
{{- end -}}
{{- if .enabled -}}
{{- if .configMap -}}
configMap: {name: {{ .configMap | quote }}}
{{- else if .secret -}}
secret: {secretName: {{ .secret | quote }}}
{{- else -}}
{{- fail "webhook.clientCA: name the ConfigMap (webhook.clientCA.configMap) or Secret (webhook.clientCA.secret) holding the CA of the API server's client certificate, so that only the API server may call the webhooks (docs/deploy.md, \"Who may call the webhooks\"); where the API server cannot present one, set webhook.clientCA.enabled=false" -}}
{{- end -}}
{{- else if or .configMap .secret -}}
{{- fail "webhook.clientCA.enabled=false with a configMap or secret: drop one of them" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The webhook certificate Secret: the one given, or the self-signed one. */}}
{{- define "hook-operator.webhookSecret" -}}
{{- if eq .Values.webhook.certificates "selfSigned" -}}
{{- printf "%s-webhook-certs" (include "hook-operator.fullname" .) -}}
{{- else if eq .Values.webhook.certificates "certManager" -}}
{{- printf "%s-webhook-tls" (include "hook-operator.fullname" .) -}}
{{- else if eq .Values.webhook.certificates "secret" -}}
{{- required "webhook.secretName: name the kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt) of the webhook server" .Values.webhook.secretName -}}
{{- else -}}
{{- fail (printf "webhook.certificates %q: use selfSigned, certManager or secret" .Values.webhook.certificates) -}}
{{- end -}}
{{- end -}}

{{/* The name of the ConfigMap of the user's hooks, or "" when there is none. */}}
{{- define "hook-operator.hooksConfigMap" -}}
{{- if and .Values.hooks.inline .Values.hooks.configMap -}}
{{- fail "hooks: give either inline or configMap, not both" -}}
{{- else if .Values.hooks.inline -}}
{{- printf "%s-hooks" (include "hook-operator.fullname" .) -}}
{{- else -}}
{{- .Values.hooks.configMap -}}
{{- end -}}
{{- end -}}

{{/* Fails on a rule that grants "*": the chart grants named permissions only. */}}
{{- define "hook-operator.checkRules" -}}
{{- range $i, $rule := . -}}
{{- range $key := list "apiGroups" "resources" "verbs" "resourceNames" "nonResourceURLs" -}}
{{- if has "*" (get $rule $key | default list) -}}
{{- fail (printf "rbac: rule %d grants \"*\" in %s; list what the hooks need (hook-operator rbac --hooks-dir DIR prints it)" $i $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* How a ServiceMonitor scrapes --metrics-secure: with the Prometheus
ServiceAccount's token, over TLS to the self-signed certificate. (A
PodMonitor cannot read Prometheus's files: it sends a Secret's token.) */}}
{{- define "hook-operator.secureScrape" -}}
bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
tlsConfig:
  insecureSkipVerify: true
{{- end }}

{{/*
kick.fullname: the release name when it already contains "kick", else
RELEASE-kick. Every object is named after it, so the ClusterRoles of two
releases do not collide.
*/}}
{{- define "kick.fullname" -}}
{{- if contains "kick" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-kick" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* kick.manager: name of the manager's Deployment, ServiceAccount and core roles ("kick-manager" for a release named kick, as in the kustomize install). */}}
{{- define "kick.manager" -}}
{{- printf "%s-manager" (include "kick.fullname" .) -}}
{{- end -}}

{{/* kick.namespace: the release namespace; namespace.name may only repeat it. */}}
{{- define "kick.namespace" -}}
{{- $ns := .Release.Namespace -}}
{{- with .Values.namespace -}}
{{- if and .name (ne .name $ns) -}}
{{- fail (printf "namespace.name is %q but the release namespace is %q: install with --namespace %s" .name $ns .name) -}}
{{- end -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{- define "kick.selectorLabels" -}}
app.kubernetes.io/name: kick
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{- define "kick.labels" -}}
{{ include "kick.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kick.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
kick.integrations: the optional integrations as "valuesKey=name" pairs. name
is the file under files/rbac (copied from deploy/rbac/NAME/role.yaml by make
generate) and the suffix of the ClusterRole.
*/}}
{{- define "kick.integrations" -}}
argocd=argocd flux=flux kargo=kargo argoRollouts=argo-rollouts secretsStoreCSI=secrets-store-csi
{{- end -}}

{{/*
kick.generatedRules: the rules of the document of KIND in files/rbac/FILE,
a copy of controller-gen's output (deploy/rbac). The core file holds a
ClusterRole and a namespaced Role separated by "---". The rules are never
restated here, so the chart grants exactly what the code's markers ask for.
Usage: include "kick.generatedRules" (list $ "core.yaml" "ClusterRole")
*/}}
{{- define "kick.generatedRules" -}}
{{- $root := index . 0 -}}
{{- $file := index . 1 -}}
{{- $kind := index . 2 -}}
{{- $content := $root.Files.Get (printf "files/rbac/%s" $file) -}}
{{- if not $content -}}
{{- fail (printf "files/rbac/%s is missing from the chart: run make generate" $file) -}}
{{- end -}}
{{- $rules := list -}}
{{- $found := false -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" $content -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if eq (toString (get $obj "kind")) $kind -}}
{{- $rules = get $obj "rules" -}}
{{- $found = true -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "files/rbac/%s holds no %s: run make generate" $file $kind) -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}

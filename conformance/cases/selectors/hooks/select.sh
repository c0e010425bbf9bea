#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: by-name
  kind: configmap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  nameSelector: {matchNames: [a, c]}
  jqFilter: .metadata.labels
- name: by-expressions
  apiVersion: v1
  kind: configmaps
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector:
    matchExpressions:
    - {key: tier, operator: In, values: [web]}
    - {key: skip, operator: DoesNotExist}
  jqFilter: .metadata.name
- name: by-exists
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector:
    matchExpressions:
    - {key: tier, operator: Exists}
    - {key: tier, operator: NotIn, values: [db]}
  jqFilter: .metadata.name
- name: by-field
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  fieldSelector:
    matchExpressions:
    - {field: metadata.name, operator: NotEquals, value: b}
    - {field: metadata.namespace, operator: Equals, value: $CONFORMANCE_NS}
  labelSelector: {matchLabels: {tier: web}}
  jqFilter: .metadata.name
CONFIG
  exit 0
fi

#!/usr/bin/env bash
# The SampleDB operator, backups: for a SampleDB with spec.backupSchedule,
# a CronJob <name>-backup (owned by the SampleDB) with that schedule.
# Kubernetes' CronJob controller then starts a backup Job at each scheduled
# time; this hook only declares the CronJob and reports
# status.lastBackup: when the newest successful backup Job finished.
#
# A SampleDB without a schedule has no CronJob: one left from an earlier
# schedule is deleted. lastBackup never goes back: backup Jobs are pruned by
# the CronJob's history limit (and deleted with the CronJob), so the hook
# keeps the newer of status.lastBackup and the newest Job's completion time.
# Backups run the image of the version the database runs (status.version),
# sampledb:<version>, with the connection settings and password of the
# database.
#
# Bindings:
# - databases: the SampleDBs, through a jqFilter of what the CronJob depends
#   on (schedule, running version) and whether the database is being
#   deleted: the status writes of sampledb.sh cause no run unless the
#   version changes, and this hook's own lastBackup writes none at all.
# - backups: the Jobs the CronJob starts (they carry the labels of its
#   jobTemplate), reduced to whether and when they succeeded.
# Backups of a SampleDB being deleted are left alone: the CronJob goes with
# the SampleDB, after snapshot.sh has taken the final snapshot.
set -euo pipefail
source "$(dirname "$0")/../lib/hook.sh"
source "$(dirname "$0")/lib/sampledb.sh"

hook::config "$@" <<CONFIG
configVersion: v1
kubernetes:
- name: databases
  apiVersion: db.example.com/v1
  kind: SampleDB
  jqFilter: >-
    {schedule: .spec.backupSchedule, version: (.status.version // .spec.version),
    deleting: (.metadata.deletionTimestamp != null)}
  queue: sampledb
  includeSnapshotsFrom: [databases, backups]
- name: backups
  apiVersion: batch/v1
  kind: Job
  labelSelector:
    matchExpressions:
    - {key: db.example.com/sampledb, operator: Exists}
    - {key: app.kubernetes.io/component, operator: In, values: [backup]}
  jqFilter: '$SAMPLEDB_JOB_FILTER'
  keepFullObjectsInMemory: false
  executeHookOnSynchronization: false
  queue: sampledb
  includeSnapshotsFrom: [databases, backups]
# What the operations write, for "hook-operator rbac" (extension): Apply and
# deletion of the CronJob, Status, and update on the SampleDBs' finalizers
# for the owner reference's blockOwnerDeletion, where the API server checks it.
writes:
- {apiVersion: batch/v1, kind: CronJob, verbs: [create, patch, delete]}
- {apiVersion: db.example.com/v1, kind: SampleDB, subresource: status, verbs: [get, update]}
- {apiVersion: db.example.com/v1, kind: SampleDB, subresource: finalizers, verbs: [update]}
CONFIG

# cronjob_jq builds the CronJob of a SampleDB (the input).
# shellcheck disable=SC2016 # jq variables, not shell ones
cronjob_jq='
  def cronjob:
    (.status.version // .spec.version) as $version
    | {apiVersion: "batch/v1", kind: "CronJob",
       metadata: {name: "\(.metadata.name)-backup", namespace: .metadata.namespace, labels: labels("backup")},
       spec: {schedule: .spec.backupSchedule, concurrencyPolicy: "Forbid",
              successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1,
              jobTemplate: {metadata: {labels: labels("backup")},
                            spec: job_spec("backup"; $version; ["sampledb-backup"])}}};
'

# reconcile ITEM: ITEM is {db, lastBackup}, the SampleDB and the completion
# time of its newest successful backup Job (null when none).
reconcile() {
  local item=$1 db ns name schedule newest newer
  db=$(hook::get "$item" .db -c)
  # RFC 3339 times in UTC compare as strings.
  hook::read "$item" '[.db.metadata.namespace, .db.metadata.name, .db.spec.backupSchedule, .lastBackup,
    (.lastBackup != null and .lastBackup > (.db.status.lastBackup // ""))]' ns name schedule newest newer

  if [[ -n "$schedule" ]]; then
    hook::apply "$(jq -c "$sampledb_jq $cronjob_jq cronjob" <<<"$db")" "$db"
  else
    hook::delete --background batch/v1/CronJob "$ns" "$name-backup"
  fi

  if [[ "$newer" == true ]]; then
    hook::log info "backup finished" sampledb="$ns/$name" lastBackup="$newest"
    hook::status --ignore-missing "$SAMPLEDB_KIND" "$ns" "$name" "$(jq -nc --arg t "$newest" '{lastBackup: $t}')"
  fi
}

# The SampleDBs this run is about, each with the completion time of its
# newest successful backup Job, one {db, lastBackup} per line.
{
  hook::snapshots
  hook::objects
} | jq -cn "$SAMPLEDB_AFFECTED"'
  input as $snap
  | affected($snap; [inputs]) as [$ns, $name, $db]
  | {db: $db,
     lastBackup: ([($snap.backups // [])[].filterResult
                   | select(.namespace == $ns and .db == $name and .uid == $db.metadata.uid
                            and .succeeded and .completionTime != null)
                   | .completionTime] | max)}
' | while read -r item; do
  reconcile "$item"
done

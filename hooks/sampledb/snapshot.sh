#!/usr/bin/env bash
# The SampleDB operator, deletion: a final snapshot before a SampleDB goes.
#
# The binding keeps the finalizer db.example.com/snapshot on every
# SampleDB, so `kubectl delete sampledb x` only marks x as being deleted and
# the runtime runs this hook with a Finalize event. The hook then:
#
# 1. creates the snapshot Job <name>-snapshot (CreateIfNotExists), reports
#    phase Deleting, and asks to be run again in 2 seconds (Requeue). A
#    Finalize run that requeues the object it finalizes keeps the
#    finalizer, and the requeued run arrives as a Finalize event again;
# 2. on each such run, while the Job has not succeeded, requeues again;
# 3. once the Job has succeeded, writes nothing: the run succeeds without
#    a requeue, the runtime removes the finalizer, the SampleDB disappears,
#    and the garbage collector deletes what it owned (StatefulSet, volume
#    claim, Service, Secret, ConfigMap, CronJob, Jobs).
#
# A snapshot Job that failed (its pods failed backoffLimit times) keeps the
# SampleDB, with a message, and is looked at every 30 seconds: delete the
# Job to try again, or, to delete the database without a snapshot, remove
# the finalizer by hand.
#
# The snapshot Job is not owned by the SampleDB. An owned Job would be
# deleted with the SampleDB's other dependents, and with
# `kubectl delete --cascade=foreground` the garbage collector deletes the
# dependents first, while the finalizer still holds the SampleDB: it would
# delete the snapshot Job as it runs. Unowned, the Job also stays as the
# record of the final snapshot. Its db.example.com/uid label says which
# SampleDB it snapshot: a Job left by an earlier SampleDB of the same name is
# deleted and made again.
#
# Note that a foreground deletion also deletes the StatefulSet before the
# snapshot is taken; delete SampleDBs in the background (kubectl's default).
#
# Bindings:
# - databases: executeHookOnEvent [] and no Synchronization run: the hook
#   runs only for Finalize events (and its own requeues).
# - snapshots: the snapshot Jobs, for the snapshot only.
set -euo pipefail
source "$(dirname "$0")/../lib/hook.sh"
source "$(dirname "$0")/lib/sampledb.sh"

hook::config "$@" <<CONFIG
configVersion: v1
kubernetes:
- name: databases
  apiVersion: db.example.com/v1
  kind: SampleDB
  finalizer: db.example.com/snapshot
  executeHookOnEvent: []
  executeHookOnSynchronization: false
  queue: sampledb
  includeSnapshotsFrom: [snapshots]
- name: snapshots
  apiVersion: batch/v1
  kind: Job
  labelSelector:
    matchExpressions:
    - {key: db.example.com/sampledb, operator: Exists}
    - {key: app.kubernetes.io/component, operator: In, values: [snapshot]}
  jqFilter: '$SAMPLEDB_JOB_FILTER'
  keepFullObjectsInMemory: false
  executeHookOnEvent: []
  executeHookOnSynchronization: false
  queue: sampledb
# What the operations write, for "hook-operator rbac" (extension): the
# snapshot Job (created; one of an earlier SampleDB deleted) and Status.
writes:
- {apiVersion: batch/v1, kind: Job, verbs: [create, delete]}
- {apiVersion: db.example.com/v1, kind: SampleDB, subresource: status, verbs: [get, update]}
CONFIG

# finalize ITEM: ITEM is {db, job}, a SampleDB being deleted and the filter
# result of its snapshot Job (null when there is none).
finalize() {
  local item=$1 db ns name job_uid succeeded failed uid
  db=$(hook::get "$item" .db -c)
  hook::read "$item" '[.db.metadata.namespace, .db.metadata.name, .db.metadata.uid,
    .job.uid, .job.succeeded, .job.failed]' ns name uid job_uid succeeded failed
  local job="$name-snapshot"

  if [[ -n "$job_uid" && "$job_uid" != "$uid" ]]; then
    hook::log info "deleting the snapshot Job of an earlier SampleDB of this name" sampledb="$ns/$name" job="$job"
    hook::delete --background batch/v1/Job "$ns" "$job"
    hook::requeue "$ns" "$name" 2s databases
    return
  fi
  if [[ "$succeeded" == true ]]; then
    # Nothing more to write: the finalizer is released after this run.
    hook::log info "final snapshot taken; releasing the SampleDB" sampledb="$ns/$name" job="$job"
    return
  fi
  if [[ "$failed" == true ]]; then
    hook::status --ignore-missing "$SAMPLEDB_KIND" "$ns" "$name" "$(jq -nc --arg job "$job" \
      '{phase: "Deleting", message: "snapshot Job \($job) failed; delete it to try again, or remove the finalizer db.example.com/snapshot to delete without a snapshot"}')"
    hook::requeue "$ns" "$name" 30s databases
    return
  fi
  if [[ -z "$job_uid" ]]; then
    hook::log info "taking the final snapshot" sampledb="$ns/$name" job="$job"
    hook::create_if_not_exists "$(jq -c --arg job "$job" "$sampledb_jq"'
      job($job; "snapshot"; (.status.version // .spec.version); ["sampledb-snapshot"])' <<<"$db")"
  fi
  hook::status --ignore-missing "$SAMPLEDB_KIND" "$ns" "$name" "$(jq -nc --arg job "$job" \
    '{phase: "Deleting", message: "waiting for snapshot Job \($job)"}')"
  hook::requeue "$ns" "$name" 2s databases
}

# The SampleDBs to finalize in this run, with their snapshot Jobs.
{
  hook::snapshots
  hook::objects databases
} | jq -cn '
  input as $snap
  | [inputs | select(.event == "Finalize" and .object.metadata.deletionTimestamp != null) | .object]
  | unique_by([.metadata.namespace, .metadata.name])[]
  | . as $db
  | {db: $db,
     job: (first(($snap.snapshots // [])[].filterResult
                 | select(.namespace == $db.metadata.namespace and .name == "\($db.metadata.name)-snapshot"))
           // null)}
' | while read -r item; do
  finalize "$item"
done

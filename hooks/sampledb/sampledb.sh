#!/usr/bin/env bash
# The SampleDB operator, main controller: runs each SampleDB
# (db.example.com/v1, CRD in deploy/crds/sampledbs.db.example.com.yaml),
# upgrades it, and reports its phase and version. Two more hooks in this
# folder do the rest: backup.sh (scheduled backups, status.lastBackup) and
# snapshot.sh (a final snapshot before a SampleDB is deleted).
#
# For each SampleDB it writes, all owned by the SampleDB so that the garbage
# collector removes them with it:
#
#   Secret <name>-credentials      user and a random password; CreateIfNotExists,
#                                  so it is generated once and never replaced
#   ConfigMap <name>-connection    host <name>.<namespace>.svc, port, database,
#                                  user, and the Secret's name (not the password)
#   Service <name>                 headless, for the StatefulSet's pod
#   PersistentVolumeClaim <name>-data
#                                  spec.storage, spec.storageClassName;
#                                  CreateIfNotExists: a claim's spec is fixed
#   Job <name>-init                once, for a new database
#   StatefulSet <name>             1 replica of sampledb:<version>, mounting the
#                                  claim, configured from the ConfigMap and Secret
#   Job <name>-upgrade-<version>   when spec.version differs from the version the
#                                  StatefulSet runs (dots in the name become dashes)
#
# Upgrades: the StatefulSet keeps its version until the upgrade Job has
# succeeded; only then does it get the new image.
#
# status.phase:
#   Creating    the database was never ready: waiting for the init Job and the pod
#   Ready       the StatefulSet's pod runs the wanted version and is ready;
#               status.version says which
#   Upgrading   waiting for the upgrade Job, or for the new image to roll out
#   NotReady    was ready at this version, the pod is not ready now
#   Failed      the init or upgrade Job failed; delete it to try again
#   Deleting    written by snapshot.sh
#
# Bindings. The hook reconciles the SampleDB a context is about (for a
# StatefulSet or Job, the one named by its db.example.com/sampledb label)
# from the snapshots, which show everything as the run starts:
# - databases: the SampleDBs. The jqFilter is metadata.generation: the hook
#   acts on the spec, and the generation changes exactly when the spec does.
#   The hook's own status writes, the finalizer snapshot.sh keeps and the
#   status backup.sh writes therefore cause no runs.
# - statefulsets, jobs: the objects the hook made, reduced by their
#   jqFilters to what it needs (version and readiness; whether a Job
#   succeeded or failed). keepFullObjectsInMemory: false keeps only that in
#   memory. No Synchronization runs: the databases Synchronization already
#   reconciles every SampleDB.
# Everything runs in the queue "sampledb", so that a failing run of these
# hooks does not hold up the hooks in the main queue.
set -euo pipefail
source "$(dirname "$0")/../lib/hook.sh"
source "$(dirname "$0")/lib/sampledb.sh"

hook::config "$@" <<CONFIG
configVersion: v1
kubernetes:
- name: databases
  apiVersion: db.example.com/v1
  kind: SampleDB
  jqFilter: .metadata.generation
  queue: sampledb
  includeSnapshotsFrom: [databases, statefulsets, jobs]
- name: statefulsets
  apiVersion: apps/v1
  kind: StatefulSet
  labelSelector:
    matchExpressions:
    - {key: db.example.com/sampledb, operator: Exists}
  jqFilter: >-
    {namespace: .metadata.namespace, db: .metadata.labels["db.example.com/sampledb"],
    uid: .metadata.labels["db.example.com/uid"], version: .metadata.labels["db.example.com/version"],
    ready: ((.status.observedGeneration // 0) >= .metadata.generation
    and (.status.updatedReplicas // 0) >= 1 and (.status.readyReplicas // 0) >= 1)}
  keepFullObjectsInMemory: false
  executeHookOnSynchronization: false
  queue: sampledb
  includeSnapshotsFrom: [databases, statefulsets, jobs]
- name: jobs
  apiVersion: batch/v1
  kind: Job
  labelSelector:
    matchExpressions:
    - {key: db.example.com/sampledb, operator: Exists}
    - {key: app.kubernetes.io/component, operator: In, values: [init, upgrade]}
  jqFilter: '$SAMPLEDB_JOB_FILTER'
  keepFullObjectsInMemory: false
  executeHookOnSynchronization: false
  queue: sampledb
  includeSnapshotsFrom: [databases, statefulsets, jobs]
# What the operations write, for "hook-operator rbac" (extension): Apply
# (create, patch), CreateIfNotExists (create), Status; and update on the
# SampleDBs' finalizers for the owner references' blockOwnerDeletion, where
# the API server checks it.
writes:
- {kind: Secret, verbs: [create]}
- {kind: PersistentVolumeClaim, verbs: [create]}
- {apiVersion: batch/v1, kind: Job, verbs: [create]}
- {kind: ConfigMap, verbs: [create, patch]}
- {kind: Service, verbs: [create, patch]}
- {apiVersion: apps/v1, kind: StatefulSet, verbs: [create, patch]}
- {apiVersion: db.example.com/v1, kind: SampleDB, subresource: status, verbs: [get, update]}
- {apiVersion: db.example.com/v1, kind: SampleDB, subresource: finalizers, verbs: [update]}
CONFIG

# plan_jq decides, from {db, statefulset, jobs} (the SampleDB, the filter
# result of its StatefulSet or null, those of its Jobs), what the SampleDB
# needs: the version the StatefulSet runs now (target), whether to create
# the init or an upgrade Job, and the status to report.
# shellcheck disable=SC2016 # jq variables, not shell ones
plan_jq='
  def plan:
    .db as $db | .statefulset as $sts | .jobs as $jobs
    | $db.metadata.name as $name
    | $db.spec.version as $want
    | ($db.status // {}) as $status
    | ($sts.version // null) as $running
    | "\($name)-upgrade-\($want | name_version)" as $upgrade_name
    | (first($jobs[] | select(.name == $upgrade_name)) // null) as $upgrade
    | (first($jobs[] | select(.name == "\($name)-init")) // null) as $init
    | ($running != null and $running != $want) as $outdated
    | ($outdated and ($upgrade.succeeded | not)) as $waiting_for_upgrade
    | (if $waiting_for_upgrade then $running else $want end) as $target
    # A database that was ready once is initialized, even if its init Job
    # has been deleted since.
    | ($init.succeeded == true or $status.version != null) as $initialized
    | (if $waiting_for_upgrade then
         if $upgrade.failed then
           {phase: "Failed", message: "upgrade Job \($upgrade_name) failed; version \($running) keeps running. Delete the Job to try again"}
         else
           {phase: "Upgrading", message: "waiting for upgrade Job \($upgrade_name) before version \($want) is rolled out"}
         end
       elif $init.failed == true and ($initialized | not) then
         {phase: "Failed", message: "init Job \($name)-init failed; delete it to try again"}
       elif $sts.version == $target and $sts.ready and $initialized then
         {phase: "Ready", message: null, version: $target}
       elif $status.version == null then
         {phase: "Creating",
          message: ("waiting for " + ([if $initialized | not then "the init Job" else empty end,
                                       "the database pod"] | join(" and ")))}
       elif $status.version != $target then
         {phase: "Upgrading", message: "rolling out version \($target)"}
       else
         {phase: "NotReady", message: "waiting for the database pod to be ready"}
       end) as $new
    | {namespace: $db.metadata.namespace, name: $name, target: $target, running: $running,
       init: ($initialized | not),
       upgrade: (if $waiting_for_upgrade then $upgrade_name else null end),
       status: $new,
       changed: ($new.phase != $status.phase or $new.message != $status.message)};
'

# manifests_jq builds the objects of a SampleDB (the input) for a plan,
# one per line in a fixed order; the upgrade Job is null when none is due.
# shellcheck disable=SC2016 # jq variables, not shell ones
manifests_jq='
  def meta($name; $component): {name: $name, namespace: .metadata.namespace, labels: labels($component)};
  def credentials($password):
    {apiVersion: "v1", kind: "Secret",
     metadata: (meta("\(.metadata.name)-credentials"; "database") + {ownerReferences: owner}),
     type: "Opaque", stringData: {username: "sampledb", password: $password}};
  def connection:
    {apiVersion: "v1", kind: "ConfigMap", metadata: meta("\(.metadata.name)-connection"; "database"),
     data: {host: "\(.metadata.name).\(.metadata.namespace).svc", port: "5432", database: .metadata.name,
            user: "sampledb", secretName: "\(.metadata.name)-credentials"}};
  def selector: {"app.kubernetes.io/instance": .metadata.name, "app.kubernetes.io/component": "database"};
  def service:
    {apiVersion: "v1", kind: "Service", metadata: meta(.metadata.name; "database"),
     spec: {clusterIP: "None", selector: selector, ports: [{name: "sampledb", port: 5432, targetPort: 5432}]}};
  def claim:
    {apiVersion: "v1", kind: "PersistentVolumeClaim",
     metadata: (meta("\(.metadata.name)-data"; "database") + {ownerReferences: owner}),
     spec: ({accessModes: ["ReadWriteOnce"], resources: {requests: {storage: (.spec.storage // "1Gi")}}}
            + if (.spec.storageClassName // "") != "" then {storageClassName: .spec.storageClassName} else {} end)};
  def statefulset($version):
    {apiVersion: "apps/v1", kind: "StatefulSet",
     metadata: (meta(.metadata.name; "database") | .labels["db.example.com/version"] = $version),
     spec: {replicas: 1, serviceName: .metadata.name, selector: {matchLabels: selector},
            template: {metadata: {labels: labels("database")},
                       spec: {containers: [container($version; null)
                                           + {ports: [{name: "sampledb", containerPort: 5432}],
                                              volumeMounts: [{name: "data", mountPath: "/var/lib/sampledb"}]}],
                              volumes: [{name: "data", persistentVolumeClaim: {claimName: "\(.metadata.name)-data"}}]}}}};
  def owned_job($name; $component; $version; $command):
    owner as $owner | job($name; $component; $version; $command) | .metadata.ownerReferences = $owner;
  def manifests($plan; $password):
    credentials($password), connection, service, claim,
    (if $plan.init then owned_job("\(.metadata.name)-init"; "init"; .spec.version; ["sampledb-init"]) else null end),
    (if $plan.upgrade != null then
       owned_job($plan.upgrade; "upgrade"; .spec.version; ["sampledb-upgrade", "--from", $plan.running, "--to", .spec.version])
     else null end),
    statefulset($plan.target);
'

# reconcile ITEM brings one SampleDB to what its spec asks for. ITEM is
# {db, statefulset, jobs} as plan_jq takes it.
reconcile() {
  local item=$1 db plan
  db=$(hook::get "$item" .db -c)
  plan=$(jq -c "$sampledb_jq $plan_jq plan" <<<"$item")

  local password secret connection service claim init upgrade statefulset
  # A new password every run; CreateIfNotExists keeps the first one. It
  # reaches jq through the environment, which other users cannot read (a
  # command line they can).
  password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  {
    read -r secret
    read -r connection
    read -r service
    read -r claim
    read -r init
    read -r upgrade
    read -r statefulset
  } < <(SAMPLEDB_PASSWORD=$password jq -c --argjson plan "$plan" \
    "$sampledb_jq $manifests_jq"' manifests($plan; $ENV.SAMPLEDB_PASSWORD)' <<<"$db")

  hook::create_if_not_exists "$secret"
  hook::apply "$connection" "$db"
  hook::apply "$service" "$db"
  hook::create_if_not_exists "$claim"
  [[ "$init" == null ]] || hook::create_if_not_exists "$init"
  [[ "$upgrade" == null ]] || hook::create_if_not_exists "$upgrade"
  hook::apply "$statefulset" "$db"

  local ns name status changed phase message
  hook::read "$plan" '[.namespace, .name, .status, .changed, .status.phase, .status.message]' \
    ns name status changed phase message
  if [[ "$changed" == true ]]; then
    hook::log info "SampleDB $phase" sampledb="$ns/$name" message="$message"
  fi
  hook::status --ignore-missing "$SAMPLEDB_KIND" "$ns" "$name" "$status" observedGeneration
}

# The SampleDBs this run is about, each with its StatefulSet and Jobs from
# the snapshots, one {db, statefulset, jobs} per line. A SampleDB being
# deleted is left to snapshot.sh and the garbage collector.
{
  hook::snapshots
  hook::objects
} | jq -cn "$SAMPLEDB_AFFECTED"'
  input as $snap
  | affected($snap; [inputs]) as [$ns, $name, $db]
  | def mine: select(.namespace == $ns and .db == $name and .uid == $db.metadata.uid);
    {db: $db,
     statefulset: (first(($snap.statefulsets // [])[].filterResult | mine) // null),
     jobs: [($snap.jobs // [])[].filterResult | mine]}
' | while read -r item; do
  reconcile "$item"
done

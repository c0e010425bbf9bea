# shellcheck shell=bash disable=SC2016,SC2034 # jq programs use jq $variables; the variables are for the hooks
# sampledb.sh: what the three SampleDB hooks share. Sourced by
# sampledb.sh, backup.sh and snapshot.sh in the folder above (this folder
# is called lib, so the hooks folder does not take it for a hook).
#
# Every object made for a SampleDB carries these labels, which is how the
# hooks' bindings find them and tell which database they belong to:
#
#   app.kubernetes.io/name: sampledb
#   app.kubernetes.io/instance: <database>
#   app.kubernetes.io/component: database | init | upgrade | backup | snapshot
#   app.kubernetes.io/managed-by: hook-operator
#   db.example.com/sampledb: <database>
#   db.example.com/uid: <the SampleDB's uid>
#
# The uid label tells a database apart from an earlier one of the same
# name whose objects are still being garbage-collected (or, for the
# snapshot Job, which nothing collects).

# The SampleDB kind, as the operation helpers take it.
SAMPLEDB_KIND=db.example.com/v1/SampleDB

# sampledb_jq holds jq definitions of the objects the hooks write. Each
# takes the SampleDB object as its input.
sampledb_jq='
  def labels($component):
    {"app.kubernetes.io/name": "sampledb",
     "app.kubernetes.io/instance": .metadata.name,
     "app.kubernetes.io/component": $component,
     "app.kubernetes.io/managed-by": "hook-operator",
     "db.example.com/sampledb": .metadata.name,
     "db.example.com/uid": .metadata.uid};

  # The controller owner reference to the SampleDB, for objects written
  # with the Create operations (Apply takes the SampleDB as parent instead).
  def owner:
    [{apiVersion, kind, name: .metadata.name, uid: .metadata.uid, controller: true, blockOwnerDeletion: true}];

  # The database container: image sampledb:<version>, connection settings
  # from the ConfigMap, the password from the Secret.
  def container($version; $command):
    {name: "sampledb", image: "sampledb:\($version)",
     envFrom: [{configMapRef: {name: "\(.metadata.name)-connection"}}],
     env: [{name: "SAMPLEDB_PASSWORD",
            valueFrom: {secretKeyRef: {name: "\(.metadata.name)-credentials", key: "password"}}}]}
    + (if $command != null then {command: $command} else {} end);

  # A Job running $command in the database image, labelled as $component.
  def job_spec($component; $version; $command):
    {backoffLimit: 3,
     template: {metadata: {labels: labels($component)},
                spec: {restartPolicy: "Never", containers: [container($version; $command)]}}};
  def job($name; $component; $version; $command):
    {apiVersion: "batch/v1", kind: "Job",
     metadata: {name: $name, namespace: .metadata.namespace, labels: labels($component)},
     spec: job_spec($component; $version; $command)};

  # The version in an object name: dots become dashes ("1.2" -> "1-2").
  def name_version: gsub("\\."; "-");
'

# The jqFilter of a binding to the Jobs of SampleDBs: what the hooks need
# to know of a Job, and nothing that changes while it runs, so a Job causes
# runs when it starts, succeeds or fails, not on every pod status update.
SAMPLEDB_JOB_FILTER='{namespace: .metadata.namespace, name: .metadata.name, db: .metadata.labels["db.example.com/sampledb"], uid: .metadata.labels["db.example.com/uid"], component: .metadata.labels["app.kubernetes.io/component"], succeeded: ((.status.succeeded // 0) > 0), failed: any(.status.conditions[]?; .type == "Failed" and .status == "True"), completionTime: .status.completionTime}'

# A jq definition for the hooks that reconcile whole SampleDBs:
# affected($snap; $objects) yields [namespace, name, SampleDB] for each
# SampleDB the run's objects are about (a SampleDB itself, or the one a
# child's filterResult names in .namespace and .db), taken as it is now
# from the databases snapshot. SampleDBs being deleted are left out: they
# are snapshot.sh's and the garbage collector's.
SAMPLEDB_AFFECTED='
def affected($snap; $objects):
  [$objects[]
   | select(.binding != "databases" or .event != "Deleted")
   | if .binding == "databases" then .object | [.metadata.namespace, .metadata.name]
     else .filterResult | [.namespace, .db] end]
  | (unique | .[]) as [$ns, $name]
  | first($snap.databases[].object | select(.metadata.namespace == $ns and .metadata.name == $name)) as $db
  | select($db.metadata.deletionTimestamp == null)
  | [$ns, $name, $db];
'

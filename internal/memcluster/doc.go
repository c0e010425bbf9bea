// Package memcluster is an in-memory stand-in for the object storage of a
// Kubernetes API server. A *Cluster implements dynamic.Interface, so the
// code that writes to the cluster (internal/ops, internal/finalizer) runs
// unchanged against memory: `hook-operator replay` applies hooks'
// operations to objects from a fixture file, and client-side --dry-run
// applies them to memory that reads through to the live cluster and shows
// the recorded changes.
//
// Results are deterministic: the same objects and the same calls give
// byte-identical objects and changes (uids, resourceVersions and generated
// names come from counters, timestamps from Options.Now), so replay output
// can be compared in tests.
//
// # What is modelled
//
//   - Identity: objects are keyed by group, resource, namespace and name;
//     the version is not part of the key, so the same object may be asked
//     for under two versions. It is stored, and returned, as last written
//     (no conversion). A call through Namespace(ns) addresses namespaced
//     objects; a call without one addresses cluster-scoped objects, or all
//     namespaces for List and DeleteCollection (writing an object that
//     names a namespace through it is a BadRequest).
//   - Errors are k8s.io/apimachinery/pkg/api/errors values naming the
//     resource (NotFound, AlreadyExists, Conflict, BadRequest, Invalid), so
//     apierrors.IsNotFound and the like work on them.
//   - Create: AlreadyExists for a held object; generateName gets a suffix
//     of 5 characters from a counter; the server sets uid (a UUID from a
//     counter), resourceVersion, creationTimestamp (Options.Now, in
//     seconds) and generation 1 (for kinds that have one: custom
//     resources, and built-in kinds with a spec). apiVersion and kind are required; a
//     resourceVersion is refused.
//   - resourceVersion is one counter for the whole cluster, as a decimal
//     string; every write that changes an object takes the next value. The
//     counter is kept above every numeric resourceVersion added or read
//     through, so an object's versions increase. A write that changes
//     nothing is not a write, as on the API server: no new
//     resourceVersion, no change recorded.
//   - Optimistic concurrency: a write carrying a resourceVersion other than
//     the held one is a Conflict, as is one carrying another uid; an empty
//     resourceVersion writes unconditionally. Delete honours
//     Preconditions (uid, resourceVersion).
//   - metadata.generation goes up by one when a write to the object itself
//     changes anything outside metadata and status. Objects held without a
//     generation (read through from kinds that have none) keep none.
//   - The status subresource (Get, Update, UpdateStatus, Patch, Apply,
//     ApplyStatus): a write takes only .status from what it is given.
//     Writes to the object itself take the object as sent, status included
//     (the API server would ignore status there for kinds with a status
//     subresource); server-set metadata (uid, creationTimestamp,
//     deletionTimestamp, deletionGracePeriodSeconds, generation) is kept.
//   - The scale subresource: Get returns an autoscaling/v1 Scale with
//     spec.replicas and status.replicas (no selector); Update and Patch
//     take its spec.replicas into the object's spec.replicas.
//   - Patch: merge patch (RFC 7386) and JSON patch (RFC 6902). A patch that
//     sets metadata.resourceVersion makes the write conditional on it.
//     Patching a missing object is NotFound.
//   - Server-side apply, approximated: the applied configuration (JSON or
//     YAML) creates the object when it is missing; otherwise it is merged
//     into the object: maps merge key by key, any other value (lists
//     included) replaces, and a null is ignored. A field manager is
//     required, as on the API server.
//   - Delete: an object with finalizers gets deletionTimestamp
//     (Options.Now) and deletionGracePeriodSeconds 0 and stays until a
//     write leaves it without finalizers; that write records a single
//     Deleted. Deleting an object already being deleted changes nothing.
//     Deleted objects leave a tombstone, so they are never read through
//     again.
//   - Garbage collection, at once rather than eventually: with propagation
//     Background (the default), the objects whose ownerReferences hold the
//     uid of an object removed from memory are deleted in turn (each
//     respecting its own finalizers, recursively); Foreground deletes them
//     first, then the owner; Orphan removes the owner's reference from
//     them (recorded as Modified) when the owner is deleted.
//   - List: label selectors, and field selectors on metadata.name and
//     metadata.namespace. Items are sorted by namespace, then name; the
//     list's resourceVersion is the cluster's latest.
//   - Read-through (Options.ReadThrough): see Options.
//   - Every object returned is a copy, and every object given is copied
//     (through JSON, so ints become int64 as unstructured objects need).
//
// # What is not modelled
//
//   - Watches: Watch returns an error.
//   - Field ownership: there are no managedFields; apply neither removes
//     the fields a manager stopped applying nor reports conflicts, and
//     Force is ignored. Use --dry-run=server for the API server's exact
//     answer.
//   - Strategic merge patch: it is a BadRequest; use a merge patch.
//   - Schemas, validation, defaulting and admission: any object of any
//     resource is accepted as written (a Deployment gets no default
//     replicas), and every resource is served with status and scale
//     subresources, so a kind without them does not answer NotFound.
//   - Versions: there is no conversion; an object asked for under another
//     version is returned as stored.
//   - Deletion details: the orphan and foregroundDeletion finalizers are
//     not added; Foreground removes the owner after deleting its dependents
//     even when a dependent still has finalizers; grace periods are always
//     0; dependents are looked for only among the objects held in memory,
//     not read through.
//   - The dryRun option of writes is ignored (memory is not the cluster),
//     as are List's limit, continue and resourceVersion options.
package memcluster

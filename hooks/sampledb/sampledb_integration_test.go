// End-to-end test of the SampleDB operator (sampledb.sh, backup.sh,
// snapshot.sh): the real hook-operator binary runs the hooks against the
// local cluster.
//
// The local cluster has no storage provisioner, so a claim stays Pending
// unless a PersistentVolume matches it, and a pod that mounts a Pending
// claim is never scheduled. The test therefore makes a hostPath
// PersistentVolume of its own StorageClass name (no StorageClass object is
// needed for static binding), pre-bound to the claim the operator will
// create through claimRef, and gives the SampleDB that class in
// spec.storageClassName.
package sampledb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

var (
	sampledbsGVR = schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "sampledbs"}
	hooks        = []string{"sampledb/backup.sh", "sampledb/sampledb.sh", "sampledb/snapshot.sh"}
)

const name = "orders"

// persistentVolume makes a PersistentVolume of class class pre-bound to the
// claim ns/claim, and deletes it when the test ends.
func persistentVolume(t *testing.T, c *testcluster.Cluster, ns, claim, class string) {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "sampledb-" + ns},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/sampledb-" + ns}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
		},
	}
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PersistentVolume: %v", err)
	}
	t.Cleanup(func() {
		err := c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete PersistentVolume %s: %v", pv.Name, err)
		}
	})
}

// releaseFinalizers removes the finalizers of the SampleDBs left in ns when
// the test ends, after the operator has stopped: a test that fails half
// way must not leave its namespace stuck in Terminating.
func releaseFinalizers(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := c.Dynamic.Resource(sampledbsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("list SampleDBs: %v", err)
			return
		}
		for _, db := range list.Items {
			_, err := c.Dynamic.Resource(sampledbsGVR).Namespace(ns).Patch(ctx, db.GetName(), types.MergePatchType,
				[]byte(`{"metadata": {"finalizers": null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("release SampleDB %s: %v", db.GetName(), err)
			}
		}
	})
}

// getDB reads the SampleDB; nil when it is gone.
func getDB(ctx context.Context, c *testcluster.Cluster, ns string) (*unstructured.Unstructured, error) {
	db, err := c.Dynamic.Resource(sampledbsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return db, err
}

func status(db *unstructured.Unstructured, field string) string {
	s, _, _ := unstructured.NestedString(db.Object, "status", field)
	return s
}

// waitReady waits until the SampleDB is Ready at version, with a status
// that describes its current generation.
func waitReady(t *testing.T, c *testcluster.Cluster, ns, version string) *unstructured.Unstructured {
	t.Helper()
	var db *unstructured.Unstructured
	testoperator.Eventually(t, 90*time.Second, "SampleDB Ready at version "+version, func(ctx context.Context) (bool, error) {
		var err error
		if db, err = getDB(ctx, c, ns); err != nil || db == nil {
			return false, err
		}
		observed, _, _ := unstructured.NestedInt64(db.Object, "status", "observedGeneration")
		if status(db, "phase") != "Ready" || status(db, "version") != version || observed != db.GetGeneration() {
			return false, fmt.Errorf("status %v, generation %d", db.Object["status"], db.GetGeneration())
		}
		return true, nil
	})
	return db
}

func patchDB(t *testing.T, c *testcluster.Cluster, ns, patch string) {
	t.Helper()
	_, err := c.Dynamic.Resource(sampledbsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch SampleDB with %s: %v", patch, err)
	}
}

// ownedBy fails t unless refs is one controller reference to db.
func ownedBy(t *testing.T, what string, refs []metav1.OwnerReference, db *unstructured.Unstructured) {
	t.Helper()
	if len(refs) != 1 || refs[0].UID != db.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("%s: owner references %+v, want one controller reference to the SampleDB (uid %s)", what, refs, db.GetUID())
	}
}

func TestSampleDBIntegration(t *testing.T) {
	c := testcluster.Get(t)
	testoperator.InstallCRDs(t, c, "sampledbs.db.example.com.yaml")
	ns := c.Namespace(t)
	class := "sampledb-" + ns
	persistentVolume(t, c, ns, name+"-data", class)
	releaseFinalizers(t, c, ns)
	op := testoperator.Start(t, c, testoperator.Hooks(t, "sampledb"))
	ctx := context.Background()
	core, batch := c.Client.CoreV1(), c.Client.BatchV1()

	db := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "db.example.com/v1",
		"kind":       "SampleDB",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"version": "1.0", "storageClassName": class},
	}}
	if _, err := c.Dynamic.Resource(sampledbsGVR).Namespace(ns).Create(ctx, db, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create SampleDB: %v", err)
	}

	// Creation: everything is made, the pod runs on the pre-bound volume,
	// the init Job succeeds, and the SampleDB becomes Ready.
	db = waitReady(t, c, ns, "1.0")
	sts, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("StatefulSet: %v", err)
	}
	ownedBy(t, "StatefulSet", sts.OwnerReferences, db)
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "sampledb:1.0" {
		t.Errorf("StatefulSet image %q, want sampledb:1.0", img)
	}
	pvc, err := core.PersistentVolumeClaims(ns).Get(ctx, name+"-data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PersistentVolumeClaim: %v", err)
	}
	ownedBy(t, "PersistentVolumeClaim", pvc.OwnerReferences, db)
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != class {
		t.Errorf("claim: phase %s, class %v; want Bound, %s", pvc.Status.Phase, pvc.Spec.StorageClassName, class)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "1Gi" {
		t.Errorf("claim requests %s, want the default 1Gi", got.String())
	}
	svc, err := core.Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Service: %v", err)
	}
	ownedBy(t, "Service", svc.OwnerReferences, db)
	initJob, err := batch.Jobs(ns).Get(ctx, name+"-init", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("init Job: %v", err)
	}
	ownedBy(t, "init Job", initJob.OwnerReferences, db)
	if initJob.Status.Succeeded < 1 {
		t.Errorf("the SampleDB is Ready before its init Job succeeded: %+v", initJob.Status)
	}
	cm, err := core.ConfigMaps(ns).Get(ctx, name+"-connection", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("connection ConfigMap: %v", err)
	}
	ownedBy(t, "connection ConfigMap", cm.OwnerReferences, db)
	wantConn := map[string]string{"host": name + "." + ns + ".svc", "port": "5432", "database": name, "user": "sampledb", "secretName": name + "-credentials"}
	for k, v := range wantConn {
		if cm.Data[k] != v {
			t.Errorf("connection %s = %q, want %q", k, cm.Data[k], v)
		}
	}
	for k, v := range cm.Data {
		if strings.Contains(strings.ToLower(k), "password") || strings.Contains(v, "password") {
			t.Errorf("the connection ConfigMap holds a password: %s=%s", k, v)
		}
	}
	secret, err := core.Secrets(ns).Get(ctx, name+"-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("credentials Secret: %v", err)
	}
	ownedBy(t, "credentials Secret", secret.OwnerReferences, db)
	if len(secret.Data["password"]) < 16 {
		t.Errorf("password %q is too short", secret.Data["password"])
	}

	// Backups. "@every 10s" is accepted by the CronJob controller (it parses
	// schedules with robfig/cron) and gives a backup within seconds instead
	// of waiting for the next minute; "* * * * *" works the same, slower.
	patchDB(t, c, ns, `{"spec": {"backupSchedule": "@every 10s"}}`)
	var backup batchv1.Job
	testoperator.Eventually(t, 75*time.Second, "a successful backup Job", func(ctx context.Context) (bool, error) {
		jobs, err := batch.Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=backup"})
		if err != nil {
			return false, err
		}
		for _, j := range jobs.Items {
			if j.Status.Succeeded > 0 && j.Status.CompletionTime != nil {
				backup = j
				return true, nil
			}
		}
		return false, nil
	})
	cron, err := batch.CronJobs(ns).Get(ctx, name+"-backup", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CronJob: %v", err)
	}
	ownedBy(t, "backup CronJob", cron.OwnerReferences, db)
	testoperator.Eventually(t, 30*time.Second, "status.lastBackup", func(ctx context.Context) (bool, error) {
		db, err := getDB(ctx, c, ns)
		if err != nil || db == nil {
			return false, err
		}
		last, err := time.Parse(time.RFC3339, status(db, "lastBackup"))
		if err != nil {
			return false, err
		}
		return !last.Before(backup.Status.CompletionTime.Time), nil
	})
	// No schedule, no CronJob (and no more backups while the test goes on).
	patchDB(t, c, ns, `{"spec": {"backupSchedule": null}}`)
	testoperator.Eventually(t, 30*time.Second, "the CronJob deleted", func(ctx context.Context) (bool, error) {
		_, err := batch.CronJobs(ns).Get(ctx, name+"-backup", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})

	// Upgrade: the upgrade Job succeeds first, then the StatefulSet gets the
	// new image, then the SampleDB is Ready at the new version.
	patchDB(t, c, ns, `{"spec": {"version": "1.1"}}`)
	testoperator.Eventually(t, 60*time.Second, "the StatefulSet at sampledb:1.1", func(ctx context.Context) (bool, error) {
		s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sts = s
		return s.Spec.Template.Spec.Containers[0].Image == "sampledb:1.1", nil
	})
	upgrade, err := batch.Jobs(ns).Get(ctx, name+"-upgrade-1-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("upgrade Job: %v", err)
	}
	ownedBy(t, "upgrade Job", upgrade.OwnerReferences, db)
	if upgrade.Status.Succeeded < 1 || upgrade.Status.CompletionTime == nil {
		t.Fatalf("the StatefulSet has the new image, but the upgrade Job has not succeeded: %+v", upgrade.Status)
	}
	// The hook's last write of the StatefulSet is the image change; it must
	// not be earlier than the Job's completion (both in whole seconds).
	for _, m := range sts.ManagedFields {
		if m.Manager == "hook-operator/sampledb/sampledb.sh" && m.Time != nil && m.Time.Before(upgrade.Status.CompletionTime) {
			t.Errorf("the StatefulSet was changed at %s, before the upgrade Job completed at %s", m.Time, upgrade.Status.CompletionTime)
		}
	}
	waitReady(t, c, ns, "1.1")

	// The credentials were made once and never touched again.
	again, err := core.Secrets(ns).Get(ctx, name+"-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("credentials Secret: %v", err)
	}
	if again.ResourceVersion != secret.ResourceVersion || string(again.Data["password"]) != string(secret.Data["password"]) {
		t.Errorf("the credentials Secret changed: resourceVersion %s -> %s", secret.ResourceVersion, again.ResourceVersion)
	}

	// No hot loop: settled hooks stay settled, and no run failed.
	op.WaitQuiet(t, 3*time.Second, time.Minute)
	runs := map[string]int{}
	for _, h := range hooks {
		runs[h] = op.Runs(h)
	}
	time.Sleep(5 * time.Second)
	for _, h := range hooks {
		if now := op.Runs(h); now != runs[h] {
			t.Errorf("%s ran %d more times with nothing changing (a hot loop)", h, now-runs[h])
		}
		if n := op.Failures(h); n != 0 {
			t.Errorf("%s failed %d times", h, n)
		}
	}
	t.Logf("runs before deletion: %v", runs)

	// Deletion: the finalizer holds the SampleDB until the snapshot Job has
	// succeeded; then the garbage collector removes what it owned.
	if err := c.Dynamic.Resource(sampledbsGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete SampleDB: %v", err)
	}
	var goneAt time.Time
	sawDeleting := false
	testoperator.Eventually(t, 60*time.Second, "the SampleDB gone", func(ctx context.Context) (bool, error) {
		db, err := getDB(ctx, c, ns)
		if err != nil {
			return false, err
		}
		if db != nil {
			sawDeleting = sawDeleting || status(db, "phase") == "Deleting"
			return false, nil
		}
		goneAt = time.Now()
		return true, nil
	})
	snapshot, err := batch.Jobs(ns).Get(ctx, name+"-snapshot", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("snapshot Job: %v", err)
	}
	if snapshot.Status.Succeeded < 1 || snapshot.Status.CompletionTime == nil || snapshot.Status.CompletionTime.After(goneAt) {
		t.Errorf("the SampleDB was gone at %s, but the snapshot Job had not succeeded: %+v", goneAt.Format(time.RFC3339), snapshot.Status)
	}
	if !sawDeleting {
		t.Log("phase Deleting was not seen (the snapshot was quicker than the polls)")
	}
	testoperator.Eventually(t, 60*time.Second, "the StatefulSet and the claim garbage-collected", func(ctx context.Context) (bool, error) {
		_, stsErr := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		_, pvcErr := core.PersistentVolumeClaims(ns).Get(ctx, name+"-data", metav1.GetOptions{})
		if apierrors.IsNotFound(stsErr) && apierrors.IsNotFound(pvcErr) {
			return true, nil
		}
		return false, fmt.Errorf("StatefulSet: %v; claim: %v", stsErr, pvcErr)
	})
	for _, h := range hooks {
		if n := op.Failures(h); n != 0 {
			t.Errorf("%s failed %d times", h, n)
		}
	}
}

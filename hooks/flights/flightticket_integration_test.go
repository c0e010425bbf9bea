// End-to-end test of the FlightTicket operator (flightticket.sh): the real
// hook-operator binary runs the hook against the local cluster.
package flights_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/hook-operator/hook-operator/internal/testcluster"
	"github.com/hook-operator/hook-operator/internal/testoperator"
)

const hook = "flights/flightticket.sh"

var ticketsGVR = schema.GroupVersionResource{Group: "flights.com", Version: "v1", Resource: "flighttickets"}

// ticket returns a FlightTicket object.
func ticket(ns, name, from, to string, number int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flights.com/v1",
		"kind":       "FlightTicket",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"from": from, "to": to, "number": number},
	}}
}

// wantRef is the booking reference the hook derives from a ticket.
func wantRef(ns, name string, uid types.UID) string {
	sum := sha256.Sum256([]byte(ns + "/" + name + "/" + string(uid)))
	return "FT-" + strings.ToUpper(hex.EncodeToString(sum[:])[:8])
}

func mergePatch(t *testing.T, r dynamic.ResourceInterface, name, patch string) *unstructured.Unstructured {
	t.Helper()
	obj, err := r.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch %s with %s: %v", name, patch, err)
	}
	return obj
}

// waitStatus waits until the ticket's status has phase and describes the
// ticket's current generation, and returns the ticket.
func waitStatus(t *testing.T, r dynamic.ResourceInterface, name, phase string) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	testoperator.Eventually(t, 30*time.Second, "ticket "+name+" "+phase, func(ctx context.Context) (bool, error) {
		obj, err := r.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = obj
		p, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		return p == phase && observed == obj.GetGeneration(), nil
	})
	return got
}

// waitBooking waits until the booking of ticket tk holds number seats and
// returns it.
func waitBooking(t *testing.T, c *testcluster.Cluster, tk *unstructured.Unstructured, number string) map[string]string {
	t.Helper()
	var data map[string]string
	testoperator.Eventually(t, 30*time.Second, "booking of "+tk.GetName()+" with "+number+" seats", func(ctx context.Context) (bool, error) {
		cm, err := c.Client.CoreV1().ConfigMaps(tk.GetNamespace()).Get(ctx, tk.GetName()+"-booking", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		refs := cm.OwnerReferences
		if len(refs) != 1 || refs[0].UID != tk.GetUID() || refs[0].Kind != "FlightTicket" || refs[0].Controller == nil || !*refs[0].Controller {
			t.Fatalf("booking owner references %+v, want one controller reference to the ticket (uid %s)", refs, tk.GetUID())
		}
		data = cm.Data
		return cm.Data["number"] == number, nil
	})
	return data
}

func waitBookingGone(t *testing.T, c *testcluster.Cluster, ns, ticketName string) {
	t.Helper()
	testoperator.Eventually(t, 60*time.Second, "booking of "+ticketName+" gone", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, ticketName+"-booking", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func TestFlightTicketIntegration(t *testing.T) {
	c := testcluster.Get(t)
	testoperator.InstallCRDs(t, c, "flighttickets.flights.com.yaml")
	ns := c.Namespace(t)
	op := testoperator.Start(t, c, testoperator.Hooks(t, "flights"))
	tickets := c.Dynamic.Resource(ticketsGVR).Namespace(ns)
	ctx := context.Background()

	// A new ticket is booked.
	if _, err := tickets.Create(ctx, ticket(ns, "trip", "Mumbai", "London", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ticket: %v", err)
	}
	tk := waitStatus(t, tickets, "trip", "Booked")
	ref := wantRef(ns, "trip", tk.GetUID())
	if got, _, _ := unstructured.NestedString(tk.Object, "status", "bookingRef"); got != ref {
		t.Errorf("status.bookingRef %q, want %q", got, ref)
	}
	data := waitBooking(t, c, tk, "2")
	if data["from"] != "Mumbai" || data["to"] != "London" || data["bookingRef"] != ref {
		t.Errorf("booking data %v", data)
	}

	// More seats: the booking follows, and so does observedGeneration.
	mergePatch(t, tickets, "trip", `{"spec": {"number": 4}}`)
	tk = waitStatus(t, tickets, "trip", "Booked")
	if tk.GetGeneration() != 2 {
		t.Errorf("generation %d after one spec change, want 2", tk.GetGeneration())
	}
	waitBooking(t, c, tk, "4")
	if got, _, _ := unstructured.NestedString(tk.Object, "status", "bookingRef"); got != ref {
		t.Errorf("status.bookingRef changed to %q, want %q for the life of the ticket", got, ref)
	}

	// from == to: Failed with a message, and the booking goes.
	mergePatch(t, tickets, "trip", `{"spec": {"to": "mumbai"}}`)
	tk = waitStatus(t, tickets, "trip", "Failed")
	if msg, _, _ := unstructured.NestedString(tk.Object, "status", "message"); !strings.Contains(msg, "same place") {
		t.Errorf("status.message %q, want it to say why", msg)
	}
	if _, found, _ := unstructured.NestedString(tk.Object, "status", "bookingRef"); found {
		t.Errorf("a Failed ticket still has a bookingRef: %v", tk.Object["status"])
	}
	waitBookingGone(t, c, ns, "trip")

	// A ticket that fails from the start never gets a booking.
	if _, err := tickets.Create(ctx, ticket(ns, "nowhere", "Rome", "Rome", 1), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ticket: %v", err)
	}
	waitStatus(t, tickets, "nowhere", "Failed")
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "nowhere-booking", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a ticket from Rome to Rome got a booking (err %v)", err)
	}

	// The schema refuses 11 seats, on create and on update.
	_, err := tickets.Create(ctx, ticket(ns, "crowd", "Oslo", "Bergen", 11), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("create with number 11: err %v, want Invalid", err)
	}
	_, err = tickets.Patch(ctx, "nowhere", types.MergePatchType, []byte(`{"spec": {"number": 11}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("update to number 11: err %v, want Invalid", err)
	}

	// Fixed again, booked again; then deleted: the garbage collector
	// removes the booking it owned.
	mergePatch(t, tickets, "trip", `{"spec": {"to": "Delhi"}}`)
	tk = waitStatus(t, tickets, "trip", "Booked")
	waitBooking(t, c, tk, "4")
	if err := tickets.Delete(ctx, "trip", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete ticket: %v", err)
	}
	waitBookingGone(t, c, ns, "trip")

	// No hot loop: once the hook has settled, it stays settled, and no run
	// failed on the way.
	op.WaitQuiet(t, 3*time.Second, time.Minute)
	runs := op.Runs(hook)
	time.Sleep(5 * time.Second)
	if now := op.Runs(hook); now != runs {
		t.Errorf("%s ran %d more times with nothing changing (a hot loop)", hook, now-runs)
	}
	if n := op.Failures(hook); n != 0 {
		t.Errorf("%s failed %d times", hook, n)
	}
	t.Logf("%s: %d runs", hook, runs)
}

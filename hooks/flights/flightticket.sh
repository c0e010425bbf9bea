#!/usr/bin/env bash
# The FlightTicket operator: books each FlightTicket (flights.com/v1, CRD in
# deploy/crds/flighttickets.flights.com.yaml) and reports the booking in the
# ticket's status.
#
#   kubectl apply -f deploy/crds/flighttickets.flights.com.yaml
#   kubectl apply -f examples/flightticket.yaml
#   kubectl get ft                       # FROM TO SEATS PHASE BOOKING
#   kubectl get configmap my-flight-ticket-booking -o yaml
#
# For every ticket, in every namespace, whatever the event (level-triggered:
# the hook looks at the ticket as it is, not at what changed):
# - from == to (ignoring case): the ticket cannot be booked. Status phase
#   Failed with a message, and a booking left from an earlier spec is
#   deleted.
# - otherwise: the booking ConfigMap <ticket>-booking is applied with the
#   ticket as its parent (a controller owner reference, so deleting the
#   ticket garbage-collects the booking), holding from, to, number and the
#   booking reference; then status phase Booked, bookingRef and
#   observedGeneration. A changed spec updates the booking.
#
# The booking reference is "FT-" and the first 8 hex digits of the sha256
# of namespace/name/uid: the same for the life of the ticket, different for
# a ticket deleted and created again under the same name.
#
# Why no hot loop, and why no jqFilter: the binding delivers the whole
# ticket, because the hook needs its uid and generation and may be asked to
# check it at any time. Its own Status write changes the ticket, but the
# runtime drops a modification that only changes status the hook itself
# wrote, for bindings without a jqFilter. A run caused by anything else
# (a label, someone else's status edit) costs one run that writes nothing:
# Apply of an unchanged booking and Status of an unchanged status both
# leave the objects as they are, so no further event follows. A jqFilter on
# spec, generation and uid would save those runs, but would also hide a
# status someone else overwrote until the next spec change.
#
# Deleted tickets need nothing: the garbage collector removes the booking.
# resynchronizationPeriod re-checks every ticket every 10 minutes, which
# re-creates a booking deleted by hand.
set -euo pipefail
source "$(dirname "$0")/../lib/hook.sh"

hook::config "$@" <<'CONFIG'
configVersion: v1
kubernetes:
- name: tickets
  apiVersion: flights.com/v1
  kind: FlightTicket
  executeHookOnEvent: [Added, Modified]
  queue: flights
  resynchronizationPeriod: 10m
# What the operations write, for `hook-operator rbac` (extension): Apply of
# the booking (create, patch) and its deletion; Status; and, where the API
# server checks owner references, update on the tickets' finalizers for the
# booking's blockOwnerDeletion.
writes:
- {kind: ConfigMap, verbs: [create, patch, delete]}
- {apiVersion: flights.com/v1, kind: FlightTicket, subresource: status, verbs: [get, update]}
- {apiVersion: flights.com/v1, kind: FlightTicket, subresource: finalizers, verbs: [update]}
CONFIG

# booking_ref NAMESPACE NAME UID prints the ticket's booking reference.
booking_ref() {
  local sum
  sum=$(printf '%s/%s/%s' "$1" "$2" "$3" | sha256sum)
  sum=${sum:0:8}
  printf 'FT-%s\n' "${sum^^}"
}

# reconcile TICKET makes the booking and the status of TICKET (the object as
# JSON) what its spec asks for.
reconcile() {
  local ticket=$1 ns name uid deleting from to number
  hook::read "$ticket" '[.metadata.namespace, .metadata.name, .metadata.uid,
    .metadata.deletionTimestamp != null, .spec.from, .spec.to, .spec.number]' \
    ns name uid deleting from to number
  if [[ "$deleting" == true ]]; then
    return # the garbage collector takes the booking
  fi
  local kind=flights.com/v1/FlightTicket booking="$name-booking" ref status

  if [[ "${from,,}" == "${to,,}" ]]; then
    hook::delete --background v1/ConfigMap "$ns" "$booking"
    status=$(jq -nc --arg place "$from" \
      '{phase: "Failed", bookingRef: null, message: "from and to are the same place (\($place)); there is no flight to book"}')
    log_change "$ticket" "$status" "ticket cannot be booked" ticket="$ns/$name" reason="from equals to"
    hook::status --ignore-missing "$kind" "$ns" "$name" "$status" observedGeneration
    return
  fi

  ref=$(booking_ref "$ns" "$name" "$uid")
  hook::apply "$(jq -nc --arg ns "$ns" --arg name "$booking" --arg ticket "$name" \
    --arg from "$from" --arg to "$to" --arg number "$number" --arg ref "$ref" '{
      apiVersion: "v1", kind: "ConfigMap",
      metadata: {name: $name, namespace: $ns,
                 labels: {"app.kubernetes.io/managed-by": "hook-operator", "flights.com/ticket": $ticket}},
      data: {from: $from, to: $to, number: $number, bookingRef: $ref}
    }')" "$ticket"
  status=$(jq -nc --arg ref "$ref" '{phase: "Booked", bookingRef: $ref, message: null}')
  log_change "$ticket" "$status" "ticket booked" ticket="$ns/$name" bookingRef="$ref" from="$from" to="$to" number="$number"
  hook::status --ignore-missing "$kind" "$ns" "$name" "$status" observedGeneration
}

# log_change TICKET STATUS MESSAGE [KEY=VALUE ...] logs MESSAGE when STATUS
# (or the generation it describes) differs from the ticket's current status,
# so that runs that change nothing log nothing.
log_change() {
  local changed
  changed=$(jq -r --argjson s "$2" '
    (.status // {}) as $cur
    | ($s | to_entries | any(($cur[.key] // null) != .value))
      or ($cur.observedGeneration != .metadata.generation)' <<<"$1")
  if [[ "$changed" == true ]]; then
    hook::log info "$3" "${@:4}"
  fi
}

hook::latest_objects tickets | while read -r item; do
  reconcile "$(hook::get "$item" .object -c)"
done

// Package webhook serves the hooks' admission and conversion bindings: the
// HTTPS listeners (Serve) with their certificates (files read again when
// they change, or self-signed ones held in memory and renewed), the
// registration of the webhook configurations and of the CRDs'
// spec.conversion, AdmissionReview and ConversionReview handling, and the
// hooks' response files.
//
// Server is the one entry point: it asks its Hooks for the current
// bindings at start and after each change of them, starts the listeners a
// binding needs, registers what is served and unregisters what is not, and
// hands each request to Hooks, which runs the hook current at that moment
// and returns its answer.
package webhook

"""hook_operator: helpers for hook-operator hooks written in Python.

One file, Python 3.8 or later, standard library only: copy it next to your
hooks (the hooks folder skips folders named lib) and import it:

    #!/usr/bin/env python3
    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import hook_operator as hook

    CONFIG = '''
    configVersion: v1
    kubernetes:
    - {name: tickets, apiVersion: flights.com/v1, kind: FlightTicket}
    '''

    def handle():
        for item in hook.latest_objects("tickets"):
            meta = item["object"]["metadata"]
            hook.status("flights.com/v1/FlightTicket", meta["namespace"], meta["name"], {"phase": "Seen"})

    hook.run(handle, CONFIG)

run() answers --config, and then handles one run, or, when the runtime
started the hook as a resident hook (settings.resident: true), every run it
sends until it closes the request pipe. The functions mirror the bash helpers
(hooks/lib/hook.sh, docs/bashlib.md): reading binding contexts, writing
operations to $KUBERNETES_PATCH_PATH, metrics to $METRICS_PATH, and JSON log
lines. A mistake in an argument raises HookError naming the function and the
argument; raised out of the handler, it fails the run. docs/python.md is the
reference.
"""

import contextlib
import json
import math
import os
import re
import sys
import threading
import time
import traceback

__all__ = [
    "HookError", "run", "config", "log", "die",
    "contexts", "objects", "latest_objects", "snapshot", "snapshots", "snapshot_object",
    "emit", "apply", "apply_set", "status", "create", "create_if_not_exists", "create_or_update",
    "merge_patch", "json_patch", "jq_patch", "delete", "requeue", "parent_ref", "owner_references",
    "metric", "expire_metrics",
    "traceparent", "traced_headers", "span", "Span",
]

# The per-run variables of the hook contract.
RUN_VARIABLES = ("BINDING_CONTEXT_PATH", "KUBERNETES_PATCH_PATH", "METRICS_PATH",
                 "VALIDATING_RESPONSE_PATH", "ADMISSION_RESPONSE_PATH", "CONVERSION_RESPONSE_PATH")

# The variables of a traced run (docs/running.md, "Traces"), set only when the
# operator traces runs.
TRACE_VARIABLES = ("TRACEPARENT", "TRACESTATE", "TRACE_SPANS_PATH")


class HookError(Exception):
    """A helper was called wrongly; the message names the function and what to change."""


# --- running ---------------------------------------------------------------

def config(text):
    """Answers `<hook> --config`: prints text (YAML or JSON, or a dict printed
    as JSON) and exits 0 when the only argument is --config; else returns."""
    if sys.argv[1:] == ["--config"]:
        sys.stdout.write(text if isinstance(text, str) else json.dumps(text) + "\n")
        sys.stdout.flush()
        sys.exit(0)


def run(handler, config_text=None):
    """Runs handler() once per run and exits; never returns.

    With config_text, `--config` prints it first (see config). Started
    one-shot, it calls handler once and exits 0, or 1 when it raises (the
    traceback goes to stderr). Started resident ($HOOK_OPERATOR_RESIDENT=1),
    it serves each request: sets the run's variables in os.environ, calls
    handler, and replies with the exit code a one-shot run would have; it
    exits 0 when the requests end."""
    if config_text is not None:
        config(config_text)
    if sys.argv[1:]:
        _stderr_line("unexpected arguments %r: a hook is run with --config to print its configuration, or with none" % sys.argv[1:])
        sys.exit(2)
    if os.environ.get("HOOK_OPERATOR_RESIDENT") != "1":
        sys.exit(_call(handler))
    sys.exit(_serve(handler))


def _call(handler):
    """Calls handler and returns the exit code of its run."""
    try:
        handler()
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        _stderr_line(str(e.code))
        return 1
    except HookError as e:
        log("error", str(e))
        return 1
    except Exception:  # any failure of the handler fails the run only
        traceback.print_exc()
        return 1
    finally:
        # Lines written during a run belong to it: flush before replying.
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def _inherited(name, mode):
    value = os.environ.get(name, "")
    if not value.isdigit() or int(value) < 3:
        raise HookError("$%s is %r: it must name a file descriptor (3 or more); hook-operator sets it when it starts a resident hook" % (name, value))
    fd = int(value)
    os.set_inheritable(fd, False)  # programs the handler starts must not hold the pipe
    return open(fd, mode, buffering=-1 if "r" in mode else 0)


_REQUEST_ID = re.compile(r"^[0-9]+$")


def _serve(handler):
    try:
        requests = _inherited("HOOK_OPERATOR_REQUEST_FD", "rb")
        replies = _inherited("HOOK_OPERATOR_REPLY_FD", "wb")
    except HookError as e:
        _stderr_line("resident hook: %s" % e)
        return 2
    previous = {}
    number = 0
    for line in requests:
        number += 1
        try:
            request = json.loads(line)
            run_id, env = request["id"], request["env"]
            if not isinstance(run_id, str) or not _REQUEST_ID.match(run_id) or not isinstance(env, dict) \
                    or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                raise ValueError("wrong types")
        except (ValueError, KeyError, TypeError):
            _stderr_line('resident hook: request %d is not {"id":"DIGITS","env":{"NAME":"PATH",...}}: %r' % (number, line))
            return 2
        for k in list(previous) + list(TRACE_VARIABLES):
            if k not in env:
                os.environ.pop(k, None)  # a run never joins an earlier run's trace
        os.environ.update(env)
        del _span_stack[:]
        previous = env
        code = _call(handler)
        try:
            replies.write(b'{"id":"%s","exitCode":%d}\n' % (run_id.encode(), code))
        except OSError as e:
            _stderr_line("resident hook: replying to run %s: %s" % (run_id, e))
            return 1
    return 0


# --- logging ---------------------------------------------------------------

def _stderr_line(msg):
    sys.stderr.write(json.dumps({"level": "error", "msg": msg}) + "\n")
    sys.stderr.flush()


def log(level, msg, **fields):
    """Writes {"level": LEVEL, "msg": MSG, **fields} as one JSON line on
    stderr; the runtime merges it into its log record. LEVEL is debug, info,
    warn (or warning) or error."""
    record = {"level": level, "msg": msg}
    record.update(fields)
    sys.stderr.write(json.dumps(record, default=str) + "\n")
    sys.stderr.flush()


def die(msg, **fields):
    """Logs msg at level error and ends the run with exit code 1."""
    log("error", msg, **fields)
    sys.exit(1)


# --- binding contexts ------------------------------------------------------

def _path(name, fn):
    path = os.environ.get(name)
    if not path:
        raise HookError("%s: $%s is not set; run the hook through hook-operator (or set it yourself to try the hook by hand)" % (fn, name))
    return path


def contexts():
    """The binding contexts of the run, in the order delivered (a list)."""
    path = _path("BINDING_CONTEXT_PATH", "contexts")
    with open(path) as f:
        try:
            value = json.load(f)
        except ValueError as e:
            raise HookError("contexts: %s is not JSON: %s (it must hold a JSON array of binding contexts)" % (path, e))
    if not isinstance(value, list):
        raise HookError("contexts: %s holds a %s, not a JSON array of binding contexts" % (path, type(value).__name__))
    return value


def objects(*bindings):
    """One {"binding", "event", "object", "filterResult"} per object of the
    run's Synchronization and Event contexts (of the named bindings, or all).
    event is "Synchronization" for the objects of one, else the watchEvent."""
    items = []
    for c in contexts():
        if bindings and c.get("binding") not in bindings:
            continue
        if c.get("type") == "Synchronization":
            for o in c.get("objects") or []:
                items.append({"binding": c.get("binding"), "event": "Synchronization",
                              "object": o.get("object"), "filterResult": o.get("filterResult")})
        elif c.get("type") == "Event":
            items.append({"binding": c.get("binding"), "event": c.get("watchEvent"),
                          "object": c.get("object"), "filterResult": c.get("filterResult")})
    return items


def latest_objects(*bindings):
    """Like objects, but each object (apiVersion, kind, namespace, name) once,
    as its last item, in order of first appearance."""
    order, latest = [], {}
    for i, item in enumerate(objects(*bindings)):
        obj = item["object"]
        if obj is None:
            key = "#%d" % i
        else:
            meta = obj.get("metadata") or {}
            key = (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace") or "", meta.get("name"))
        if key not in latest:
            order.append(key)
        latest[key] = item
    return [latest[k] for k in order]


def snapshots():
    """Every snapshot of the run, {binding: [{"object", "filterResult"}, ...]},
    each from the last context that carries it."""
    result = {}
    for c in contexts():
        result.update(c.get("snapshots") or {})
    return result


def snapshot(binding):
    """The {"object", "filterResult"} items of binding's snapshot; HookError
    when no context carries it (add it to includeSnapshotsFrom)."""
    all_snapshots = snapshots()
    if binding not in all_snapshots:
        raise HookError('snapshot: no binding context carries a snapshot of "%s"; add it to includeSnapshotsFrom (or the group) of the bindings that run the hook' % binding)
    return all_snapshots[binding]


def snapshot_object(binding, namespace, name):
    """The object namespace/name ("" for cluster-scoped) from binding's
    snapshot, or None."""
    for item in snapshot(binding):
        obj = item.get("object")
        if obj is not None and (obj.get("metadata", {}).get("namespace") or "") == namespace \
                and obj.get("metadata", {}).get("name") == name:
            return obj
    return None


# --- operations ------------------------------------------------------------

def emit(operation):
    """Appends one operation (a dict with "operation") to $KUBERNETES_PATCH_PATH."""
    if not isinstance(operation, dict) or not isinstance(operation.get("operation"), str) or not operation["operation"]:
        raise HookError('emit: OPERATION must be a dict with an "operation" field, not %r' % (operation,))
    _write(emit.__name__, operation)


def _write(fn, operation):
    line = json.dumps(operation, separators=(",", ":"))
    with open(_path("KUBERNETES_PATCH_PATH", fn), "a") as f:
        f.write(line + "\n")


def _object(fn, what, value):
    if not isinstance(value, dict):
        raise HookError("%s: %s must be a dict (one JSON object), not %s" % (fn, what, type(value).__name__))
    return value


def _target(fn, kind, namespace, name):
    parts = kind.split("/") if isinstance(kind, str) else [""]
    if not parts[-1] or not name:
        raise HookError("%s: KIND and NAME must not be empty" % fn)
    target = {}
    if len(parts) > 1:
        target["apiVersion"] = "/".join(parts[:-1])
    target["kind"] = parts[-1]
    if namespace:
        target["namespace"] = namespace
    target["name"] = name
    return target


def parent_ref(parent, fn="parent_ref"):
    """{apiVersion, kind, namespace, name} of parent, a reference or a whole object."""
    _object(fn, "PARENT", parent)
    if "metadata" in parent:
        meta = parent.get("metadata") or {}
        ref = {"apiVersion": parent.get("apiVersion"), "kind": parent.get("kind"),
               "namespace": meta.get("namespace"), "name": meta.get("name")}
    else:
        ref = {k: parent.get(k) for k in ("apiVersion", "kind", "namespace", "name")}
    ref = {k: v for k, v in ref.items() if v not in (None, "")}
    if not ref.get("kind") or not ref.get("name"):
        raise HookError("%s: PARENT needs a kind and a name" % fn)
    return ref


def owner_references(owner):
    """The ownerReferences list that makes owner (with metadata.uid) the controller."""
    _object("owner_references", "OWNER", owner)
    meta = owner.get("metadata") or {}
    if not owner.get("apiVersion") or not owner.get("kind") or not meta.get("name") or not meta.get("uid"):
        raise HookError("owner_references: OWNER needs apiVersion, kind, metadata.name and metadata.uid")
    return [{"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
             "controller": True, "blockOwnerDeletion": True}]


def apply(obj, parent=None, force=False):
    """Apply: server-side apply of obj; with parent, a controller owner reference."""
    op = {"operation": "Apply", "object": _object("apply", "OBJECT", obj)}
    if parent is not None:
        op["parent"] = parent_ref(parent, "apply")
    if force:
        op["force"] = True
    _write("apply", op)


def apply_set(name, parent, objects_list, force=False, owner=True):
    """ApplySet: objects_list is the complete set name of parent's children."""
    if not isinstance(objects_list, list):
        raise HookError("apply_set: OBJECTS must be a list")
    op = {"operation": "ApplySet", "name": name, "parent": parent_ref(parent, "apply_set"), "objects": objects_list}
    if force:
        op["force"] = True
    if not owner:
        op["owner"] = False
    _write("apply_set", op)


def status(kind, namespace, name, status_value, observed_generation=False, ignore_missing=False):
    """Status: merges status_value into .status. observed_generation=True sets
    status.observedGeneration to the generation the runtime read; an int sets
    it to that number."""
    st = dict(_object("status", "STATUS", status_value))
    op = {"operation": "Status"}
    op.update(_target("status", kind, namespace, name))
    if isinstance(observed_generation, bool):
        pass
    elif isinstance(observed_generation, int) and observed_generation >= 0:
        st["observedGeneration"] = observed_generation
    else:
        raise HookError("status: observed_generation is True, False or a whole number, not %r" % (observed_generation,))
    op["status"] = st
    if observed_generation is True:
        op["observedGeneration"] = True
    if ignore_missing:
        op["ignoreMissingObject"] = True
    _write("status", op)


def _create(fn, operation, obj):
    _write(fn, {"operation": operation, "object": _object(fn, "OBJECT", obj)})


def create(obj):
    """Create: fails when the object exists."""
    _create("create", "Create", obj)


def create_if_not_exists(obj):
    """CreateIfNotExists: the first write wins."""
    _create("create_if_not_exists", "CreateIfNotExists", obj)


def create_or_update(obj):
    """CreateOrUpdate."""
    _create("create_or_update", "CreateOrUpdate", obj)


_SUBRESOURCE = re.compile(r"^[a-z]+$")


def _patch(fn, operation, kind, namespace, name, field, value, ignore_missing, subresource):
    op = {"operation": operation}
    op.update(_target(fn, kind, namespace, name))
    if subresource:
        if not _SUBRESOURCE.match(subresource):
            raise HookError('%s: subresource is a lowercase word such as status or scale, not "%s"' % (fn, subresource))
        op["subresource"] = subresource
    op[field] = value
    if ignore_missing:
        op["ignoreMissingObject"] = True
    _write(fn, op)


def merge_patch(kind, namespace, name, patch, ignore_missing=False, subresource=""):
    """MergePatch; subresource="status" patches the status subresource."""
    _patch("merge_patch", "MergePatch", kind, namespace, name, "mergePatch",
           _object("merge_patch", "PATCH", patch), ignore_missing, subresource)


def json_patch(kind, namespace, name, patch, ignore_missing=False, subresource=""):
    """JSONPatch: patch is a list of RFC 6902 operations."""
    if not isinstance(patch, list):
        raise HookError("json_patch: PATCH must be a list of JSON patch operations")
    _patch("json_patch", "JSONPatch", kind, namespace, name, "jsonPatch", patch, ignore_missing, subresource)


def jq_patch(kind, namespace, name, jq_filter, ignore_missing=False, subresource=""):
    """JQPatch: the runtime applies jq_filter to the current object."""
    if not isinstance(jq_filter, str) or not jq_filter:
        raise HookError("jq_patch: FILTER must be a jq program")
    _patch("jq_patch", "JQPatch", kind, namespace, name, "jqFilter", jq_filter, ignore_missing, subresource)


def delete(kind, namespace, name, background=False, orphan=False):
    """Delete (foreground), DeleteInBackground or DeleteNonCascading (orphan)."""
    if background and orphan:
        raise HookError("delete: background and orphan exclude each other; give one")
    operation = "DeleteInBackground" if background else "DeleteNonCascading" if orphan else "Delete"
    op = {"operation": operation}
    op.update(_target("delete", kind, namespace, name))
    _write("delete", op)


def requeue(namespace, name, after, binding="", kind=""):
    """Requeue: run again for the object after AFTER ("2s", "5m", or seconds)."""
    if isinstance(after, (int, float)) and not isinstance(after, bool):
        after = "%gs" % after
    if not name or not isinstance(after, str) or not after:
        raise HookError("requeue: NAME and AFTER must not be empty")
    op = {"operation": "Requeue"}
    if kind:
        op.update(_target("requeue", kind, "", name))
        del op["name"]
    if namespace:
        op["namespace"] = namespace
    op["name"] = name
    op["after"] = after
    if binding:
        op["binding"] = binding
    _write("requeue", op)


# --- metrics ---------------------------------------------------------------

_METRIC_ACTIONS = ("add", "set", "observe")


def metric(name, value, action="set", labels=None, buckets=None, group=None):
    """Appends a metric operation to $METRICS_PATH: action add (counter), set
    (gauge) or observe (histogram, with buckets). With group, the values
    written for the group replace its previous set."""
    if action not in _METRIC_ACTIONS:
        raise HookError('metric: action is "add", "set" or "observe", not %r (expire_metrics drops a group)' % (action,))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HookError("metric: VALUE of %s must be a number, not %r" % (name, value))
    line = {"name": name, "action": action, "value": value}
    if labels:
        line["labels"] = {str(k): str(v) for k, v in labels.items()}
    if buckets is not None:
        line["buckets"] = list(buckets)
    if group:
        line["group"] = group
    _metric_line("metric", line)


def expire_metrics(group):
    """Drops every series of group."""
    if not group:
        raise HookError("expire_metrics: GROUP must not be empty")
    _metric_line("expire_metrics", {"action": "expire", "group": group})


def _metric_line(fn, line):
    with open(_path("METRICS_PATH", fn), "a") as f:
        f.write(json.dumps(line, separators=(",", ":")) + "\n")


# --- traces ----------------------------------------------------------------
#
# When the operator traces runs, each run gets TRACEPARENT (the W3C
# traceparent of the run's span) and TRACE_SPANS_PATH (a file for spans of
# the hook's own, one OTLP/JSON line each). span() records one;
# traceparent() and traced_headers() pass the trace on to what the hook
# calls. Without those variables (tracing off, or shell-operator) span()
# records nothing and traced_headers() adds nothing.

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
# The contract's limits: beyond them the operator drops all of a run's spans.
_MAX_SPANS, _MAX_SPANS_BYTES, _MAX_ATTRIBUTES = 1000, 1 << 20, 64
_MAX_NAME, _MAX_KEY, _MAX_VALUE = 256, 128, 1024

_span_stack = []  # the open spans of the run, innermost last
_spans_file = {"path": None, "spans": 0}  # what this process wrote to the run's file
_spans_lock = threading.Lock()


def _run_traceparent():
    """The match of $TRACEPARENT, or None when it is not a valid one."""
    m = _TRACEPARENT.match(os.environ.get("TRACEPARENT", ""))
    if not m or m.group(1) == "0" * 32 or m.group(2) == "0" * 16:
        return None
    return m


def traceparent():
    """The W3C traceparent to pass on: that of the innermost open span(),
    else the run's ($TRACEPARENT); "" when tracing is off."""
    if _span_stack:
        return _span_stack[-1].traceparent
    m = _run_traceparent()
    return m.group(0) if m else ""


def traced_headers(headers=None):
    """A copy of headers (a dict) with "traceparent" (and "tracestate", from
    $TRACESTATE) added when tracing is on, for a request to a service that
    should join the run's trace:

        urllib.request.Request(url, headers=hook.traced_headers({"Accept": "application/json"}))"""
    out = dict(headers or {})
    tp = traceparent()
    if tp:
        out["traceparent"] = tp
        if os.environ.get("TRACESTATE"):
            out["tracestate"] = os.environ["TRACESTATE"]
    return out


def _cut(text, n):
    """text as valid UTF-8 of at most n bytes, cut between characters."""
    return text.encode("utf-8", "replace")[:n].decode("utf-8", "ignore")


def _any_value(v):
    """An OTLP AnyValue of the kinds the contract allows."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int) and -(1 << 63) <= v < (1 << 63):
        return {"intValue": str(v)}
    if isinstance(v, float) and math.isfinite(v):
        return {"doubleValue": v}
    return {"stringValue": _cut(v if isinstance(v, str) else str(v), _MAX_VALUE)}


class Span:
    """An open span, as span() yields it. traceparent is its W3C
    traceparent (empty with tracing off); set_attributes(**attrs) adds
    attributes, replacing those of the same name."""

    def __init__(self, trace_id="", parent_id="", flags="", path="", name=""):
        self._recording = bool(path)
        self._trace_id, self._parent_id, self._flags, self._path = trace_id, parent_id, flags, path
        self._name = _cut(name, _MAX_NAME) or "unnamed"
        self._id = ""
        if self._recording:
            while self._id.strip("0") == "":
                self._id = os.urandom(8).hex()
        self._attrs = {}
        self._start = time.time_ns()
        self._clock = time.perf_counter_ns()

    @property
    def traceparent(self):
        if not self._recording:
            return ""
        return "00-%s-%s-%s" % (self._trace_id, self._id, self._flags)

    def set_attributes(self, **attrs):
        for k, v in attrs.items():
            k = _cut(k, _MAX_KEY)
            if k and (k in self._attrs or len(self._attrs) < _MAX_ATTRIBUTES):
                self._attrs[k] = v

    def _end(self, error):
        if not self._recording:
            return
        end = self._start + max(0, time.perf_counter_ns() - self._clock)  # never before the start
        line = {"traceId": self._trace_id, "spanId": self._id, "parentSpanId": self._parent_id,
                "name": self._name, "kind": 1,  # SPAN_KIND_INTERNAL
                "startTimeUnixNano": str(self._start), "endTimeUnixNano": str(end)}
        if self._attrs:
            line["attributes"] = [{"key": k, "value": _any_value(v)} for k, v in self._attrs.items()]
        if error is not None:
            line["status"] = {"code": 2, "message": _cut(error, 1024)}
        data = (json.dumps(line, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        _append_span(self._path, data)


def _append_span(path, data):
    """Appends one line to the spans file in one write, within the
    contract's limits; never fails the run."""
    with _spans_lock:
        if _spans_file["path"] != path:  # a resident hook's next run
            _spans_file["path"], _spans_file["spans"] = path, 0
        if _spans_file["spans"] >= _MAX_SPANS:
            return
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if os.fstat(fd).st_size + len(data) <= _MAX_SPANS_BYTES:
                    os.write(fd, data)
                    _spans_file["spans"] += 1
            finally:
                os.close(fd)
        except OSError:
            pass


@contextlib.contextmanager
def span(name, **attrs):
    """Records the block as a span named name of the run's trace, a child of
    the innermost open span() or else of the run's span, with attrs as its
    attributes (str, int, float or bool; others as str). An exception out
    of the block marks the span failed with its message and goes on; so
    does an exit (die) with a non-zero code. Yields the Span:

        with hook.span("book flights", ticket=name) as s:
            ...
            s.set_attributes(seats=2)

    With tracing off it records nothing. Spans nest through a stack of the
    module: open them in the handler's thread."""
    parent = _span_stack[-1] if _span_stack else None
    if parent is not None:
        s = Span(parent._trace_id, parent._id, parent._flags, parent._path, name)
    else:
        m, path = _run_traceparent(), os.environ.get("TRACE_SPANS_PATH", "")
        s = Span(m.group(1), m.group(2), m.group(3), path, name) if m and path else Span(name=name)
    s.set_attributes(**attrs)
    if not s._recording:
        yield s
        return
    _span_stack.append(s)
    error = None
    try:
        yield s
    except SystemExit as e:
        if e.code not in (None, 0):
            error = "exit %s" % e.code
        raise
    except BaseException as e:
        error = "%s: %s" % (type(e).__name__, e) if str(e) else type(e).__name__
        raise
    finally:
        if s in _span_stack:
            _span_stack.remove(s)
        s._end(error)

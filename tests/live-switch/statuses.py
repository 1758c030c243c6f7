"""The statuses of a live switch, from `kubectl get KIND -A --watch --output-watch-events -o json`.

    statuses.py STEPS DIR KIND...

STEPS has one line per step boundary: NAME, start or end, and KIND=OFFSET for each watched kind
(the size of DIR/watch-KIND.json at that moment). Every status must stay valid (an HTTPProxy
`valid`; a Gateway Accepted and Programmed; an HTTPRoute's parents Accepted with their references
resolved; a GatewayClass Accepted) from the moment it is first written, and no status may come
back to an earlier content within one step or change during the last one (`quiet`): two writers
disagreeing would do either. Prints each step's status writes by writer and what the writers'
contents differ in; exits 1 on a violation.
"""

import difflib
import json
import sys

CONTROLLER = "projectcontour.io/gateway-controller"


def events(path):
    """(offset, event) for each watch event in the file."""
    text = open(path, encoding="utf-8").read()
    decoder, pos, out = json.JSONDecoder(), 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        try:
            event, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return out  # a last event cut off when the watch stopped
        out.append((len(text[:pos].encode()), event))
        pos = end


def true(conditions, kind):
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions or [])


def problem(kind, status):
    """Why a written status is not valid, or None."""
    if kind == "httpproxies":
        current = status.get("currentStatus")
        return None if current == "valid" else f"currentStatus {current!r}: {status.get('description')!r}"
    if kind == "gateways":
        conditions = status.get("conditions")
        missing = [c for c in ("Accepted", "Programmed") if not true(conditions, c)]
        return f"not {' and '.join(missing)}: {conditions}" if missing else None
    if kind == "httproutes":
        ours = [p for p in status.get("parents") or [] if p.get("controllerName") == CONTROLLER]
        if not ours:
            return "no parent status of ours"
        for p in ours:
            missing = [c for c in ("Accepted", "ResolvedRefs") if not true(p.get("conditions"), c)]
            if missing:
                return f"parent {p.get('parentRef')} not {' and '.join(missing)}: {p.get('conditions')}"
        return None
    if kind == "gatewayclasses":
        return None if true(status.get("conditions"), "Accepted") else f"not Accepted: {status.get('conditions')}"
    return None


def written(kind, status):
    """Whether a controller has written this status yet."""
    if kind == "httpproxies":
        # The CRD's default until a controller writes.
        return status.get("currentStatus") not in (None, "", "NotReconciled")
    if kind == "httproutes":
        return any(p.get("controllerName") == CONTROLLER for p in status.get("parents") or [])
    return any(c.get("reason") != "Pending" for c in status.get("conditions") or [])


def writer(obj):
    """The manager of the newest status write in the object's managedFields."""
    entries = [m for m in obj["metadata"].get("managedFields") or [] if m.get("subresource") == "status"]
    if not entries:
        return "?"
    newest = max(m.get("time", "") for m in entries)
    return "+".join(sorted({m.get("manager", "?") for m in entries if m.get("time", "") == newest}))


def main():
    steps_file, directory, kinds = sys.argv[1], sys.argv[2], sys.argv[3:]
    # Segments: each step from start to end, and what happened between steps (canaries).
    bounds = []
    for line in open(steps_file, encoding="utf-8"):
        name, edge, *offsets = line.rstrip("\n").split("\t")
        bounds.append((name, edge, {k: int(v) for k, v in (o.split("=", 1) for o in offsets)}))

    def segment(kind, offset):
        current = "before the first step"
        for name, edge, offsets in bounds:
            if offset < offsets[kind]:
                return current
            current = name if edge == "start" else f"after {name}"
        return current

    failures, writes, diffs = [], {}, []
    objects = 0
    for kind in kinds:
        history = {}
        for offset, event in events(f"{directory}/watch-{kind}.json"):
            if event.get("type") not in ("ADDED", "MODIFIED"):
                continue
            obj = event["object"]
            key = f"{kind}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}".replace("//", "/")
            status = obj.get("status") or {}
            content = json.dumps(status, sort_keys=True, indent=1)
            where = segment(kind, offset)
            h = history.setdefault(key, {"last": None, "segment": None, "contents": [], "valid": False, "writer": None})
            if content == h["last"]:
                continue
            if where != h["segment"]:
                h["segment"], h["contents"] = where, [h["last"]] if h["last"] else []
            if h["last"] is not None:
                who = writer(obj)
                counts = writes.setdefault(where, {})
                counts[f"{kind} by {who}"] = counts.get(f"{kind} by {who}", 0) + 1
                if h["writer"] and who != h["writer"][0] and len(diffs) < 6:
                    diff = difflib.unified_diff(h["writer"][1].splitlines(), content.splitlines(),
                                                f"{key} by {h['writer'][0]}", f"{key} by {who}", n=0, lineterm="")
                    diffs.append("\n".join(d for d in diff if not d.startswith("@@")))
                h["writer"] = (who, content)
                if content in h["contents"]:
                    failures.append(f"{key}: the status went back to an earlier content during {where!r} (two writers?)")
                if where == "quiet":
                    failures.append(f"{key}: the status changed after the last step had settled")
            elif written(kind, status):
                h["writer"] = (writer(obj), content)
            h["last"] = content
            h["contents"].append(content)
            if not written(kind, status):
                if h["valid"]:
                    failures.append(f"{key}: the status was cleared during {where!r}")
                continue
            why = problem(kind, status)
            if why:
                failures.append(f"{key}: invalid during {where!r}: {why}")
            else:
                h["valid"] = True
        objects += len(history)
        for key, h in history.items():
            # A static Gateway's class is not the controller's to accept (upstream leaves it).
            if not h["valid"] and kind != "gatewayclasses":
                failures.append(f"{key}: never got a valid status")

    order = ["before the first step"] + [name if edge == "start" else f"after {name}" for name, edge, _ in bounds]
    for where in sorted(writes, key=order.index):
        print(f"status writes, {where}: " + ", ".join(f"{n} {k}" for k, n in sorted(writes[where].items())))
    for d in diffs:
        print(f"what a new writer changed:\n{d}")
    for f in failures:
        print(f"FAIL: live-switch: statuses: {f}")
    if failures:
        return 1
    print(f"PASS: live-switch: statuses: all {objects} HTTPProxies, HTTPRoutes, Gateways and GatewayClasses watched stayed "
          "valid (Accepted, Programmed) throughout; no status went back to an earlier content within a step, and none "
          "changed after the last one")
    return 0


if __name__ == "__main__":
    sys.exit(main())

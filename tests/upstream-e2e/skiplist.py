#!/usr/bin/env python3
"""The skip list (skip.yaml) and the run's summary.

  skiplist.py regex SKIP_YAML SUITE MODE     ginkgo -skip regex for the suite's skipped specs
  skiplist.py summary SKIP_YAML MODE REPORT.json...   passed/failed/skipped per suite
"""
import json
import re
import sys

import yaml


def entries(path, suite, mode):
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    for e in data.get(suite) or []:
        if mode in e.get("modes", ["file", "crd"]):
            yield e


def go_escape(text):
    """Escapes RE2's metacharacters only (RE2 refuses escaped letters and spaces)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", text)


def regex(path, suite, mode):
    return "|".join(go_escape(e["spec"]) for e in entries(path, suite, mode))


def summary(path, mode, reports):
    total_failed = 0
    for report in reports:
        # Reports are named SUITE-MODE.json by run.
        name = report.rsplit("/", 1)[-1].rsplit("-", 1)[0]
        try:
            with open(report) as f:
                suites = json.load(f)
        except (OSError, ValueError):
            print(f"{name} ({mode}): no report: the suite did not finish (its log: logs/last-{name}-{mode}.log)")
            total_failed += 1
            continue
        for s in suites:
            specs = [r for r in s.get("SpecReports") or [] if r.get("LeafNodeType") == "It"]
            count = {"passed": 0, "failed": 0, "skipped": 0, "pending": 0}
            failed = []
            for r in specs:
                state = r["State"]
                key = state if state in count else "failed"
                count[key] += 1
                if key == "failed":
                    failed.append(" ".join(r.get("ContainerHierarchyTexts") or []) + " " + r["LeafNodeText"])
            total_failed += count["failed"]
            print(f"{name} ({mode}): {count['passed']} passed, {count['failed']} failed, "
                  f"{count['skipped']} skipped (of {len(specs)})")
            for f_ in failed:
                print(f"  FAILED: {f_}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "regex":
        print(regex(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif cmd == "summary":
        sys.exit(summary(sys.argv[2], sys.argv[3], sys.argv[4:]))
    else:
        sys.exit(f"unknown command {cmd}")

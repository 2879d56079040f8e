#!/usr/bin/env python3
"""Judges a run of Iceberg's REST Compatibility Kit against expectations.txt (run_suite.sh).

    check_results.py EXPECTATIONS WORKDIR        judge the JUnit XML reports under WORKDIR/*/reports
    check_results.py --list-skipped EXPECTATIONS  the method names of the `skip` entries

EXPECTATIONS has one entry a line, fields separated by " | " ('#' starts a comment line):
    category | NAME | why, once for all entries of the category
    expect   | NAME | TEST | TEXT     TEST fails, and its failure (message and trace) contains TEXT
    skip     | NAME | TEST            TEST is not run
TEST is Catalog#<name> or View#<name> as the JUnit report names it ("testLoadTable()",
"testRemoveUnusedSpec(boolean)[1]"); '*' matches any text.

The run fails on a failure that no `expect` entry names, on an `expect` entry whose test passed
or failed without its TEXT (the list stays exact), on a kit container that failed (a whole class
not run), on a server that crashed or did not stop cleanly, and when the kit ran implausibly few
tests (a broken classpath). Only the standard library: it runs on any python3.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

CLASSES = {
    "org.apache.iceberg.rest.RESTCompatibilityKitCatalogTests": "Catalog",
    "org.apache.iceberg.rest.RESTCompatibilityKitViewCatalogTests": "View",
}
# The kit's two classes hold about 160 tests; far fewer means the launcher did not find them.
MIN_TESTS = 120


@dataclass
class Entry:
    kind: str
    category: str
    test: str
    text: str = ""
    line: int = 0
    matched: list = field(default_factory=list)

    def matches(self, test_id: str) -> bool:
        pattern = ".*".join(re.escape(part) for part in self.test.split("*"))
        return re.fullmatch(pattern, test_id) is not None

    def method(self) -> str:
        return self.test.split("#", 1)[1].split("(", 1)[0]


def read_expectations(path: Path) -> tuple[dict[str, str], list[Entry]]:
    categories: dict[str, str] = {}
    entries: list[Entry] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(" | ")]
        kind = fields[0]
        if kind == "category" and len(fields) == 3:
            categories[fields[1]] = fields[2]
        elif kind == "expect" and len(fields) == 4:
            entries.append(Entry(kind, fields[1], fields[2], fields[3], number))
        elif kind == "skip" and len(fields) == 3:
            entries.append(Entry(kind, fields[1], fields[2], "", number))
        else:
            raise SystemExit(f"{path}:{number}: cannot read entry: {raw}")
    for e in entries:
        if e.category not in categories:
            raise SystemExit(f"{path}:{e.line}: unknown category '{e.category}'")
        if not re.fullmatch(r"(Catalog|View)#.+", e.test):
            raise SystemExit(f"{path}:{e.line}: test must be Catalog#... or View#...: {e.test}")
    return categories, entries


@dataclass
class Result:
    test_id: str
    status: str  # passed | failed | skipped
    text: str  # failure message and trace, or the reason of a skip
    run: str  # the folder of the run that ran it


def read_reports(workdir: Path) -> list[Result]:
    results = []
    for report in sorted(workdir.glob("*/reports/TEST-junit-jupiter.xml")):
        run = report.parent.parent.name
        for case in ET.parse(report).getroot().iter("testcase"):
            short = CLASSES.get(case.get("classname", ""))
            if short is None:
                continue
            test_id = f"{short}#{case.get('name', '')}"
            status, text = "passed", ""
            for tag in ("failure", "error"):
                node = case.find(tag)
                if node is not None:
                    status = "failed"
                    text = (node.get("message") or "") + "\n" + (node.text or "")
            node = case.find("skipped")
            if node is not None and status == "passed":
                status = "skipped"
                text = (node.get("message") or node.text or "").strip()
            results.append(Result(test_id, status, text, run))
    return results


def first_lines(text: str, n: int = 25) -> str:
    return "\n".join("      " + line for line in text.strip().splitlines()[:n])


def judge(expectations: Path, workdir: Path) -> int:
    categories, entries = read_expectations(expectations)
    results = read_reports(workdir)
    problems: list[str] = []

    for marker in sorted(workdir.glob("*/server-failed")):
        problems.append(f"{marker.parent.name}: {marker.read_text(errors='replace').strip()}")
    for log in sorted(workdir.glob("*/launcher.log")):
        m = re.search(r"\[\s*(\d+) containers failed\s*\]", log.read_text(errors="replace"))
        if m is None or int(m.group(1)) > 0:
            problems.append(f"{log.parent.name}: a kit class failed as a whole (see launcher.log):\n"
                            + first_lines(log.read_text(errors="replace"), 60))
    if len(results) < MIN_TESTS:
        problems.append(f"only {len(results)} kit tests ran (expected at least {MIN_TESTS})")

    by_id: dict[str, list[Result]] = {}
    for r in results:
        by_id.setdefault(r.test_id, []).append(r)
    unexpected_failures: list[Result] = []
    counts = {"passed": 0, "skipped": 0, "expected": 0}
    per_category: dict[str, list[str]] = {}
    skipped: list[Result] = []
    for r in results:
        entry = next((e for e in entries if e.matches(r.test_id)), None)
        if entry is not None:
            entry.matched.append(r)
        if entry is not None and entry.kind == "skip":
            problems.append(f"{r.test_id} ran in {r.run} but expectations.txt:{entry.line} skips it")
        elif entry is not None and entry.kind == "expect":
            if r.status == "failed" and entry.text in r.text:
                counts["expected"] += 1
                per_category.setdefault(entry.category, []).append(r.test_id)
            elif r.status == "failed":
                problems.append(f"{r.test_id} failed, but not with '{entry.text}' "
                                f"(expectations.txt:{entry.line}):\n{first_lines(r.text)}")
            elif r.status == "passed":
                problems.append(f"{r.test_id} passed: remove expectations.txt:{entry.line}")
            else:
                skipped.append(r)
                counts["skipped"] += 1
        elif r.status == "failed":
            unexpected_failures.append(r)
        else:
            counts[r.status] += 1
            if r.status == "skipped":
                skipped.append(r)
    for e in entries:
        if e.kind == "skip":
            per_category.setdefault(e.category, []).append(e.test + " (not run)")
        elif not e.matched:
            problems.append(f"expectations.txt:{e.line}: {e.test} did not run")

    not_run = sum(1 for e in entries if e.kind == "skip")
    print(f"\nrest_kit: {len(results)} kit tests ran: {counts['passed']} passed, "
          f"{counts['expected']} failed as listed, {counts['skipped']} skipped by the kit, "
          f"{len(unexpected_failures)} failed unexpectedly; {not_run} listed as not run")
    for name, tests in per_category.items():
        print(f"\n  [{name}] {categories[name]}")
        for t in sorted(tests):
            print(f"    {t}")
    if skipped:
        print("\n  skipped by the kit (its assumptions about the catalog):")
        for r in sorted(skipped, key=lambda r: r.test_id):
            print(f"    {r.test_id}: {r.text.splitlines()[0] if r.text else ''}")
    for r in unexpected_failures:
        problems.append(f"{r.test_id} failed ({r.run}), not listed in expectations.txt:\n{first_lines(r.text)}")
    if problems:
        print("\nrest_kit: FAILED")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nrest_kit: ok")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--list-skipped":
        _, entries = read_expectations(Path(argv[2]))
        for e in entries:
            if e.kind == "skip":
                print(e.method())
        return 0
    if len(argv) == 3:
        return judge(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

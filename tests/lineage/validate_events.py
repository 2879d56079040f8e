"""Validates OpenLineage RunEvents against the pinned OpenLineage JSON schemas.

    validate_events.py --schemas DIR --events FILE [--min-events N]

DIR is tests/lineage/schemas (OpenLineage.json, facets/*.json, registry/*/*.json; see its
README). FILE holds one RunEvent per line. Each event must validate against the core schema's
RunEvent (formats date-time, uri and uuid enforced) and name that schema in schemaURL; every facet
(run, job, dataset, inputFacets, outputFacets) must carry _producer and a _schemaURL naming a
pinned facet schema, sit under the key that schema gives it, be of the kind its container holds,
and validate against the facet's definition. Exit 0 printing "ok N events"; 1 with one line per
problem; 2 for bad usage or unreadable input. Runs in the pinned virtualenv of
tests/interop/engines/openlineage (jsonschema); a missing package is an error, never a skip.
"""

import argparse
import json
import pathlib
import sys

import jsonschema
import referencing
import referencing.jsonschema

# The facet kind each container of an event holds (the core schema's $defs names).
CONTAINERS = {
    "run": "RunFacet",
    "job": "JobFacet",
    "dataset": "DatasetFacet",
    "inputFacets": "InputDatasetFacet",
    "outputFacets": "OutputDatasetFacet",
}


def load_schemas(root):
    schemas = {}
    for path in sorted(pathlib.Path(root).rglob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        schemas[doc["$id"]] = doc
    return schemas


def facet_kind(definition):
    """The core facet kind a facet definition extends (its allOf's $ref), e.g. "RunFacet"."""
    for part in definition.get("allOf", []):
        ref = part.get("$ref", "")
        if "#/$defs/" in ref:
            return ref.rsplit("/", 1)[-1]
    return None


class Checker:
    def __init__(self, schemas):
        self.schemas = schemas
        resources = [
            (uri, referencing.jsonschema.DRAFT202012.create_resource(doc)) for uri, doc in schemas.items()
        ]
        self.registry = referencing.Registry().with_resources(resources)
        self.core_id = next(uri for uri in schemas if uri.endswith("/OpenLineage.json"))
        self.format_checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
        for needed in ("date-time", "uri", "uuid"):
            if needed not in self.format_checker.checkers:
                raise SystemExit(f"validate_events: the format checker for {needed} is not installed")

    def validator(self, ref):
        return jsonschema.Draft202012Validator(
            {"$ref": ref}, registry=self.registry, format_checker=self.format_checker
        )

    def check_event(self, event):
        problems = []
        core_ref = self.core_id + "#/$defs/RunEvent"
        for error in self.validator(core_ref).iter_errors(event):
            problems.append(f"core: {error.json_path} {error.message}")
        if event.get("schemaURL") != core_ref:
            problems.append(f"core: schemaURL {event.get('schemaURL')!r} is not {core_ref}")
        if "eventType" not in event:
            problems.append("core: no eventType")
        self.check_facets(event.get("run", {}).get("facets", {}), "run", "$.run.facets", problems)
        self.check_facets(event.get("job", {}).get("facets", {}), "job", "$.job.facets", problems)
        for side in ("inputs", "outputs"):
            for i, dataset in enumerate(event.get(side, [])):
                where = f"$.{side}[{i}]"
                self.check_facets(dataset.get("facets", {}), "dataset", where + ".facets", problems)
                extra = "inputFacets" if side == "inputs" else "outputFacets"
                self.check_facets(dataset.get(extra, {}), extra, f"{where}.{extra}", problems)
        return problems

    def check_facets(self, facets, container, where, problems):
        for key, facet in facets.items():
            at = f"{where}.{key}"
            if not isinstance(facet, dict):
                problems.append(f"{at}: not an object")
                continue
            if "_producer" not in facet:
                problems.append(f"{at}: no _producer")
            url = facet.get("_schemaURL", "")
            schema_id, _, fragment = url.partition("#")
            schema = self.schemas.get(schema_id)
            if schema is None or not fragment.startswith("/$defs/"):
                problems.append(f"{at}: _schemaURL {url!r} names no pinned facet schema")
                continue
            name = fragment[len("/$defs/"):]
            definition = schema.get("$defs", {}).get(name)
            if definition is None:
                problems.append(f"{at}: {schema_id} defines no {name}")
                continue
            if key not in schema.get("properties", {}):
                problems.append(f"{at}: {name} goes under {sorted(schema.get('properties', {}))}, not {key!r}")
            kind = facet_kind(definition)
            if kind != CONTAINERS[container]:
                problems.append(f"{at}: a {kind} in a container of {CONTAINERS[container]}s")
            if facet.get("_deleted") is True:
                continue
            for error in self.validator(url).iter_errors(facet):
                problems.append(f"{at}: {error.json_path} {error.message}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--schemas", required=True)
    parser.add_argument("--events", required=True)
    parser.add_argument("--min-events", type=int, default=0)
    args = parser.parse_args()
    try:
        checker = Checker(load_schemas(args.schemas))
        lines = pathlib.Path(args.events).read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError, KeyError, StopIteration) as error:
        print(f"validate_events: cannot read the schemas or events: {error}", file=sys.stderr)
        return 2
    count = 0
    failed = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as error:
            print(f"event {number}: not JSON: {error}", file=sys.stderr)
            return 2
        count += 1
        for problem in checker.check_event(event):
            failed = True
            print(f"event {number}: {problem}")
    if count < args.min_events:
        print(f"only {count} events, expected at least {args.min_events}")
        return 1
    if failed:
        return 1
    print(f"ok {count} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())

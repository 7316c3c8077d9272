"""Validates JSON texts against JSON Schemas with the Python jsonschema package (Draft 2020-12,
formats checked): an independent validator for the server's constrained answers.

Reads a JSON list of {"schema": {...}, "text": "..."} on stdin and writes a JSON list on stdout,
one null (valid) or an error message per case, in order. Run by StructuredOutputServerTest."""
import json
import sys

import jsonschema

results = []
for case in json.load(sys.stdin):
    try:
        instance = json.loads(case["text"])
    except ValueError as e:
        results.append("not JSON: %s" % e)
        continue
    validator = jsonschema.Draft202012Validator(
        case["schema"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = [e.message for e in validator.iter_errors(instance)]
    results.append("; ".join(errors) if errors else None)
json.dump(results, sys.stdout)

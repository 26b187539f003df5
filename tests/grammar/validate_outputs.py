#!/usr/bin/python3
"""Validates constrained generations with an independent validator (Debian's python3-jsonschema).

Input: a JSON-lines file; each line {"schema": ..., "output": "...", "finished": bool}.
Every finished output must parse as JSON and validate against its schema. Prints
"validated N of M" and exits 1 (listing the failures) if any finished output does not.
"""
import json
import sys

import jsonschema


def main(path):
    failures = []
    total = validated = 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            total += 1
            if not rec["finished"]:
                continue
            try:
                doc = json.loads(rec["output"])
                jsonschema.validate(doc, rec["schema"])
                validated += 1
            except Exception as e:  # noqa: BLE001 - report whatever went wrong
                failures.append(f"line {n}: {type(e).__name__}: {str(e)[:300]}\n  output: {rec['output']!r}\n  schema: {json.dumps(rec['schema'])}")
    print(f"validated {validated} of {total}")
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

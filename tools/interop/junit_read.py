"""Reads a JUnit XML file with junitparser (a real JUnit consumer, pinned in
requirements.txt) and prints what it understood as JSON, for tests/it/reports.rs:

    python3 tools/interop/junit_read.py FILE

{"suites": [{"name", "tests", "failures", "errors", "skipped", "time",
             "cases": [{"classname", "name", "time", "passed", "results":
                        [{"kind", "message", "type", "text"}], "system_out"}]}]}

A file junitparser cannot read makes it exit non-zero with its error.
"""

import json
import sys

import junitparser
from junitparser import JUnitXml, TestSuite


def suites(xml):
    # A file whose root is <testsuite> reads as that suite; <testsuites> iterates suites.
    if isinstance(xml, TestSuite):
        return [xml]
    return list(xml)


def main(path):
    xml = JUnitXml.fromfile(path)
    out = {"junitparser": junitparser.version, "suites": []}
    for suite in suites(xml):
        cases = []
        for case in suite:
            cases.append(
                {
                    "classname": case.classname,
                    "name": case.name,
                    "time": case.time,
                    "passed": case.is_passed,
                    "results": [
                        {
                            "kind": type(r).__name__,
                            "message": r.message,
                            "type": r.type,
                            "text": r.text,
                        }
                        for r in case.result
                    ],
                    "system_out": case.system_out,
                }
            )
        out["suites"].append(
            {
                "name": suite.name,
                "tests": suite.tests,
                "failures": suite.failures,
                "errors": suite.errors,
                "skipped": suite.skipped,
                "time": suite.time,
                "cases": cases,
            }
        )
    json.dump(out, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])

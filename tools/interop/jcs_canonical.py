"""Canonicalize JSON values with the rfc8785 package (RFC 8785, JCS).

Usage: jcs_canonical.py INPUT_JSONL OUTPUT_HEX

Reads one JSON value per line and writes, one per line, the lowercase hex of
its RFC 8785 canonical bytes, for comparison with the Rust encoder.
"""

import json
import sys

import rfc8785


def main() -> int:
    input_path, output_path = sys.argv[1:3]
    with open(input_path, encoding="utf-8") as f, open(
        output_path, "w", encoding="ascii"
    ) as out:
        for line in f:
            if line.strip():
                out.write(rfc8785.dumps(json.loads(line)).hex() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Verify a DSSE envelope with securesystemslib (an independent implementation).

Usage: sslib_verify.py ENVELOPE_JSON PUBLIC_KEY_PEM KEYID PAYLOAD_TYPE

Prints a JSON object. Exit 0: verified ({"ok": true, "payload_hex": ...}).
Exit 1: rejected ({"ok": false, "error": ...}). Other exit codes: usage or
environment problems.

securesystemslib matches signatures to keys by keyid, so the key is given
the keyid the envelope is expected to carry.
"""

import json
import sys

from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey


def main() -> int:
    envelope_path, public_path, keyid, payload_type = sys.argv[1:5]
    with open(public_path, "rb") as f:
        public_key = load_pem_public_key(f.read())
    key = SSlibKey.from_crypto(public_key, keyid=keyid)
    with open(envelope_path, "rb") as f:
        data = json.load(f)
    try:
        envelope = Envelope.from_dict(data)
        if envelope.payload_type != payload_type:
            raise ValueError(
                f"payload type {envelope.payload_type!r} is not {payload_type!r}"
            )
        envelope.verify([key], 1)
    except Exception as err:  # noqa: BLE001 - any failure is a rejection
        print(json.dumps({"ok": False, "error": f"{type(err).__name__}: {err}"}))
        return 1
    print(json.dumps({"ok": True, "payload_hex": envelope.payload.hex()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

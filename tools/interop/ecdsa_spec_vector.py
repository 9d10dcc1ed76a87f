"""Check PAE bytes against the DSSE protocol's published ECDSA test vector.

Usage: ecdsa_spec_vector.py PAE_HEX

secure-systems-lab/dsse protocol.md, "Test Vectors": payload type
http://example.com/HelloWorld, body "hello world", an ECDSA P-256/SHA-256
(deterministic RFC 6979) key, and the resulting envelope signature (raw
r || s). The signature verifies only over the exact PAE bytes, so this checks
the PAE the Rust code builds with a signature made by the spec's authors.
Exit 0 if it verifies, 1 if not.
"""

import base64
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

X = 46950820868899156662930047687818585632848591499744589407958293238635476079160
Y = 5640078356564379163099075877009565129882514886557779369047442380624545832820
SIG = "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA=="


def main() -> int:
    pae = bytes.fromhex(sys.argv[1])
    raw = base64.b64decode(SIG, validate=True)
    r = int.from_bytes(raw[:32], "big")
    s = int.from_bytes(raw[32:], "big")
    key = ec.EllipticCurvePublicNumbers(X, Y, ec.SECP256R1()).public_key()
    try:
        key.verify(encode_dss_signature(r, s), pae, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        print("the DSSE spec's ECDSA signature does not verify over these PAE bytes")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

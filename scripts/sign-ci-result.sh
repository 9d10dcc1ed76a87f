#!/bin/sh
# Sign a passing CI result for an `external` provider, with openssl only.
#
#   sign-ci-result.sh <change> <provider> <issuer> <ed25519-private-key.pem> <claim>... > result.dsse.json
#
# Run it in CI *after* the tests the provider stands for passed, on the exact
# revision they ran on, from inside the repository. It signs the provider's
# current binding (`proofgraph hash <change> <provider>`), so the result
# proves this code and this wiring and nothing else. Import it elsewhere with
#   proofgraph evidence verify-ci <change> <provider> result.dsse.json
# See docs/external.md. Set PROOFGRAPH to the binary if it is not on PATH.
set -eu
if [ "$#" -lt 5 ]; then
    echo "usage: $0 <change> <provider> <issuer> <private-key.pem> <claim>..." >&2
    exit 2
fi
change=$1 provider=$2 issuer=$3 key=$4
shift 4
binding=$("${PROOFGRAPH:-proofgraph}" hash "$change" "$provider")
claims=$(printf '"%s",' "$@")
claims=${claims%,}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"proofgraph:%s/%s","digest":{"sha256":"%s"}}],"predicateType":"https://in-toto.io/attestation/test-result/v0.1","predicate":{"result":"PASSED","passedTests":[],"failedTests":[],"issuer":"%s","claims":[%s]}}' \
    "$change" "$provider" "$binding" "$issuer" "$claims" >"$tmp/body"
type=application/vnd.in-toto+json
# DSSE pre-authentication encoding: "DSSEv1 <len type> <type> <len body> <body>".
{
    printf 'DSSEv1 %s %s %s ' "${#type}" "$type" "$(wc -c <"$tmp/body" | tr -d ' ')"
    cat "$tmp/body"
} >"$tmp/pae"
openssl pkeyutl -sign -rawin -inkey "$key" -in "$tmp/pae" -out "$tmp/sig"
printf '{"payloadType":"%s","payload":"%s","signatures":[{"sig":"%s"}]}\n' \
    "$type" "$(openssl base64 -A <"$tmp/body")" "$(openssl base64 -A <"$tmp/sig")"

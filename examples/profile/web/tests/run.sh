#!/bin/sh
# The web client's tests. Writes a TAP 13 report to test-results/web.tap and
# exits non-zero when a test fails.
set -u
mkdir -p test-results
report=test-results/web.tap
: > "$report.tmp"
n=0
failed=0

check() {
  # check <description> <expected output> <input>
  n=$((n + 1))
  actual=$(printf '%s' "$3" | sh bin/format-profile.sh 2>/dev/null) || actual="<exit $?>"
  if [ "$actual" = "$2" ]; then
    echo "ok $n - $1" >> "$report.tmp"
  else
    failed=$((failed + 1))
    printf 'not ok %s - %s\n  ---\n  expected: "%s"\n  actual: "%s"\n  ...\n' "$n" "$1" "$2" "$actual" >> "$report.tmp"
  fi
}

check "formats a profile" "#1 Ada Lovelace" '{"id": 1, "name": "Ada Lovelace"}'
check "accepts compact JSON" "#2 Grace Hopper" '{"id":2,"name":"Grace Hopper"}'
check "refuses an object without a name" "<exit 1>" '{"id": 3}'
check "refuses an object without an id" "<exit 1>" '{"name": "Nobody"}'

{ echo "TAP version 13"; echo "1..$n"; cat "$report.tmp"; } > "$report"
rm -f "$report.tmp"
cat "$report"
[ "$failed" -eq 0 ]

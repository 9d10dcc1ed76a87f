#!/bin/sh
# Reads a profile JSON object ({"id": N, "name": "..."}) on stdin and prints
# it for display: "#N Name". Exits 1 when the object lacks an id or a name.
set -eu
json=$(cat)
id=$(printf '%s' "$json" | sed -n 's/.*"id"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p')
name=$(printf '%s' "$json" | sed -n 's/.*"name"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
if [ -z "$id" ] || [ -z "$name" ]; then
  echo "format-profile: not a profile: $json" >&2
  exit 1
fi
printf '#%s %s\n' "$id" "$name"

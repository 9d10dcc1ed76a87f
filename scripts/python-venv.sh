#!/usr/bin/env bash
# Makes the virtual environment DIR holding the pinned packages of REQUIREMENTS, once, for the
# Python tools the tests run (scripts/test.sh: tools/interop/.venv, tools/buildgrid/.venv).
#
# usage: scripts/python-venv.sh DIR REQUIREMENTS
#
# The packages go into DIR only, through DIR's own pip: the system interpreter's site-packages
# are never written (a distribution that manages them itself refuses, PEP 668) and never read
# (the venv does not include the system's site-packages, so a test cannot pass on a package
# that happens to be installed on the machine). `python3` from PATH is only the base
# interpreter.
#
# DIR/installed is written once the install succeeded, so a failed or interrupted one is
# retried from scratch; a requirements file newer than it, or a venv whose interpreter no
# longer starts (its base interpreter was removed or upgraded), is made again.
set -euo pipefail

[ "$#" = 2 ] || { echo "usage: $0 DIR REQUIREMENTS" >&2; exit 2; }
dir=$1
requirements=$2

if [ -f "$dir/installed" ] && [ ! "$requirements" -nt "$dir/installed" ] &&
  "$dir/bin/python" -c '' 2>/dev/null; then
  exit 0
fi

echo "== $dir: the packages of $requirements, in their own venv"
rm -rf "$dir"
python3 -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check --require-virtualenv -r "$requirements"
touch "$dir/installed"

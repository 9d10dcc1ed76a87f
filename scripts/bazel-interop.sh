#!/usr/bin/env bash
# Does a real Bazel build a genrule against a Remote Execution API engine, offline? Creates a
# workspace in a temporary directory (a WORKSPACE file and one `genrule` whose output holds a
# random nonce, so the engine cannot have its result already), then, with a Bazel server of
# its own in that directory:
#   1. `bazel build //:gen` with --remote_executor (the action must run remotely: Bazel's
#      summary says `1 remote`), or with --remote_cache under --cache-only (the action runs
#      locally and its result is uploaded);
#   2. `bazel clean`, then the same build again: it must be `1 remote cache hit`;
# checks the output file both times, prints how long each step took, shuts its Bazel server
# down and removes the directory. Nothing is downloaded: Bazel gets
# --experimental_repository_disable_download, and a build that needed a download fails.
# Written for Debian's `bazel-bootstrap` (Bazel 4.2.3, WORKSPACE only); see
# docs/internals/bazel-interop.md for what was measured and why each flag is there.
#
# usage: scripts/bazel-interop.sh [--cache-only] [--property KEY=VALUE]... URL [-- BAZEL_FLAG...]
#   URL          grpc://HOST:PORT[/INSTANCE] or grpcs://HOST:PORT[/INSTANCE] (the instance
#                name is what follows the first slash after the port; none: the default one)
#   --cache-only the engine serves only a cache (CAS and ActionCache, no Execution service)
#   --property   a platform property every action requires (--remote_default_exec_properties);
#                repeatable; none by default, since Bazel 4.2.3 sends an empty Platform and an
#                engine gives such an action to any worker
#   -- FLAGS     more `bazel build` flags, given to both builds
# environment: BAZEL (default `bazel`); BAZEL_INTEROP_KEEP=1 keeps the directory (its path
# is printed).
# exit: 0 when every check passed, 1 when one failed (Bazel's log is printed), 2 on a usage
# error.
set -euo pipefail

usage() {
  sed -n '/^# usage:/,/^# error\./p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

mode=executor
properties=()
url=
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cache-only) mode=cache; shift ;;
    --property)
      [ $# -ge 2 ] && [[ "$2" == *=* ]] || usage
      properties+=("$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage ;;
    -*) echo "bazel-interop: unknown option $1" >&2; usage ;;
    *) [ -z "$url" ] || usage; url="$1"; shift ;;
  esac
done
[ -n "$url" ] || usage
case "$url" in
  grpc://*|grpcs://*) ;;
  *) echo "bazel-interop: the engine URL must start with grpc:// or grpcs://, not \`$url\`" >&2; exit 2 ;;
esac
scheme="${url%%://*}"
rest="${url#*://}"
hostport="${rest%%/*}"
instance=
[ "$rest" = "$hostport" ] || instance="${rest#*/}"
endpoint="$scheme://$hostport"

bazel="${BAZEL:-bazel}"
command -v "$bazel" >/dev/null 2>&1 || {
  echo "bazel-interop: \`$bazel\` is not installed; on Debian: apt-get install --no-install-recommends bazel-bootstrap" >&2
  exit 1
}
version="$(dpkg-query -W -f '${Version}' bazel-bootstrap 2>/dev/null || "$bazel" --version 2>/dev/null || echo unknown)"

dir="$(mktemp -d "${TMPDIR:-/tmp}/pg-bazel-interop.XXXXXX")"
ws="$dir/ws"
log="$dir/bazel.log"
mkdir "$ws"

# Startup options. Every rc file is ignored, so that neither the user's ~/.bazelrc nor a
# workspace's can change what is measured; but Debian's Bazel finds its install base only
# through the `startup` lines of its system rc (/etc/bazel/bazelrc: --install_base=
# /usr/share/bazel --trust_install_base; without them: "Failed to open '/proc/self/exe' as a
# zip file"), so those lines, and only those, are kept. Its `build` lines (--sandbox_debug,
# --host_javabase=@local_jdk//:jdk) are left out: a genrule needs no Java toolchain.
# Bazel's server outlives its client (it daemonizes): it is shut down on the way out, and if
# this script is killed with SIGKILL it exits by itself after 60 s without a command.
startup=(--ignore_all_rc_files "--output_user_root=$dir/root" --max_idle_secs=60)
if [ -f /etc/bazel/bazelrc ]; then
  while read -r kind option; do
    [ "$kind" = startup ] && startup+=("$option")
  done < /etc/bazel/bazelrc
fi

bz() { "$bazel" "${startup[@]}" "$@"; }

cleanup() {
  (cd "$ws" && bz shutdown >/dev/null 2>&1) || true
  if [ "${BAZEL_INTEROP_KEEP:-}" = 1 ]; then
    echo "bazel-interop: kept $dir"
  else
    # Bazel leaves its output tree read-only.
    chmod -R u+w "$dir" 2>/dev/null || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
# A signal ends the script through `exit`, so the EXIT trap shuts the server down.
trap 'exit 130' INT
trap 'exit 143' TERM

nonce="$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
cat > "$ws/WORKSPACE" <<'EOF'
workspace(name = "interop")
EOF
cat > "$ws/BUILD" <<EOF
genrule(
    name = "gen",
    outs = ["gen.txt"],
    cmd = "echo hi $nonce > \$@",
)
EOF

flags=(
  # Fail rather than reach the network for a repository (none is needed for a genrule).
  --experimental_repository_disable_download
  # PATH=/bin:/usr/bin:/usr/local/bin in the action, not the caller's PATH: the action's key
  # is the same on every machine and the caller's directories do not reach the engine.
  --incompatible_strict_action_env
  "--remote_instance_name=$instance"
  --color=no --curses=no
)
if [ "$mode" = executor ]; then
  # With --spawn_strategy=remote an action never runs locally, even if the engine refused it.
  flags+=("--remote_executor=$endpoint" --spawn_strategy=remote)
  for property in "${properties[@]}"; do
    flags+=("--remote_default_exec_properties=$property")
  done
else
  flags+=("--remote_cache=$endpoint")
fi
flags+=("${extra[@]}")

now_ms() { echo $(($(date +%s%N) / 1000000)); }
fail() {
  echo "bazel-interop: FAILED: $*" >&2
  echo "---- bazel's output ----" >&2
  cat "$log" >&2
  exit 1
}

# One build, timed; its summary line ("INFO: 2 processes: 1 internal, 1 remote.") is left
# in $summary.
build() {
  local started
  started="$(now_ms)"
  : > "$log"
  # In the background and waited for, so that a signal is acted on at once, not once the
  # build has ended.
  (cd "$ws" && bz build "${flags[@]}" //:gen) >> "$log" 2>&1 &
  if ! wait $!; then
    fail "$1: bazel build failed"
  fi
  elapsed=$(($(now_ms) - started))
  summary="$(grep -E '^INFO: [0-9]+ process(es)?:' "$log" | tail -n 1 || true)"
  [ -n "$summary" ] || fail "$1: no process summary in bazel's output"
  local got
  got="$(cat "$ws/bazel-bin/gen.txt" 2>/dev/null || true)"
  [ "$got" = "hi $nonce" ] || fail "$1: bazel-bin/gen.txt holds \`$got\`, not \`hi $nonce\`"
}
secs() { printf '%d.%03d s' $(($1 / 1000)) $(($1 % 1000)); }

echo "bazel-interop: bazel-bootstrap $version, $mode mode, engine $endpoint, instance \`$instance\`"

build "first build"
first=$elapsed
case "$mode" in
  executor)
    [[ "$summary" =~ [^0-9]1\ remote[,.] ]] || fail "first build: the genrule did not execute remotely ($summary)" ;;
  cache)
    [[ "$summary" != *"remote cache hit"* ]] || fail "first build: a cache hit although the nonce is new ($summary)" ;;
esac
echo "bazel-interop: first build (server start included): $(secs "$first"); ${summary#INFO: }"

started="$(now_ms)"
(cd "$ws" && bz clean) >> "$log" 2>&1 &
wait $! || fail "bazel clean failed"
clean=$(($(now_ms) - started))

build "build after clean"
again=$elapsed
[[ "$summary" == *"1 remote cache hit"* ]] || fail "build after clean: not a remote cache hit ($summary)"
echo "bazel-interop: bazel clean: $(secs "$clean"); build after clean: $(secs "$again"); ${summary#INFO: }"
echo "bazel-interop: ok"

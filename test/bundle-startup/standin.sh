#!/bin/sh
# Stand-in for every real image in the bundle start-up test (test/bundle-startup).
# Usage: standin.sh <project> <service> [file <path> <sha256>]... [volume <dir>]... [ready-after <seconds>] [then-exit]
# Exits 1 with the reason on stderr when a bind-mounted bundle file is missing or differs from the
# bundle; otherwise records its environment and a marker in each named volume, creates /tmp/ready
# (what the test's health check looks for) after a delay, and idles until stopped; with then-exit
# (a one-shot job) it exits 0 after the delay instead.
set -u
project="$1"
service="$2"
shift 2
fail() {
  echo "standin[$service]: $*" >&2
  exit 1
}
delay=2
exit_when_done=""
volumes=""
while [ $# -gt 0 ]; do
  case "$1" in
    file)
      [ $# -ge 3 ] || fail "file needs a path and a digest"
      [ -f "$2" ] || fail "bind-mounted file $2 is missing"
      actual=$(sha256sum "$2" | cut -d ' ' -f 1)
      [ "$actual" = "$3" ] || fail "$2 has sha256 $actual, expected $3"
      shift 3
      ;;
    volume)
      [ $# -ge 2 ] || fail "volume needs a directory"
      [ -d "$2" ] || fail "volume mount point $2 is missing"
      volumes="$volumes $2"
      shift 2
      ;;
    ready-after)
      [ $# -ge 2 ] || fail "ready-after needs seconds"
      delay="$2"
      shift 2
      ;;
    then-exit)
      exit_when_done=1
      shift
      ;;
    *) fail "unknown argument $1" ;;
  esac
done
for dir in $volumes; do
  # NUL-separated, as the kernel keeps it: a value may span lines (LiveKit's config does).
  cat /proc/self/environ > "$dir/.standin-env" || fail "cannot write the environment into the volume at $dir"
  echo "standin project=$project service=$service target=$dir" > "$dir/.standin-marker" || fail "cannot write the marker into $dir"
done
echo "standin[$service]: checks passed, ready in ${delay}s"
sleep "$delay"
[ -z "$exit_when_done" ] || exit 0
touch /tmp/ready || fail "cannot create /tmp/ready"
trap 'exit 0' TERM INT
while :; do
  sleep 3600 &
  wait $!
done

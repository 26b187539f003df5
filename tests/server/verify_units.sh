#!/bin/sh
# Runs `systemd-analyze verify` on the system and user units generated in the build tree and checks
# what the daemon relies on: one socket per descriptor name, Type=notify. Exit 77 = skipped.
# usage: verify_units.sh BUILD_SYSTEMD_VERIFY_DIR
set -u
dir="$1"
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze is not installed (package systemd)"
  exit 77
fi
fail=0
for scope in system user; do
  cd "$dir/$scope" || exit 1
  if [ "$scope" = user ]; then
    runtime=$(mktemp -d)
    out=$(XDG_RUNTIME_DIR="$runtime" systemd-analyze --user verify ./vkstream.socket ./vkstream-router.socket ./vkstream-pub.socket ./vkstream.service 2>&1)
    rc=$?
    rmdir "$runtime"
  else
    out=$(systemd-analyze verify ./vkstream.socket ./vkstream-router.socket ./vkstream-pub.socket ./vkstream.service 2>&1)
    rc=$?
  fi
  # verify exits 0 on unknown keys and other warnings; any output is a finding.
  if [ $rc -ne 0 ] || [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify ($scope units), rc=$rc:"
    echo "$out"
    fail=1
  fi
  for pair in vkstream.socket:uds vkstream-router.socket:router vkstream-pub.socket:pub; do
    unit=${pair%%:*}
    name=${pair##*:}
    grep -qx "FileDescriptorName=$name" "$unit" || { echo "FAIL: $scope/$unit lacks FileDescriptorName=$name"; fail=1; }
    grep -qx "SocketMode=0660" "$unit" || { echo "FAIL: $scope/$unit lacks SocketMode=0660"; fail=1; }
  done
  grep -qx "Type=notify" vkstream.service || { echo "FAIL: $scope/vkstream.service is not Type=notify"; fail=1; }
  grep -q "^WatchdogSec=" vkstream.service || { echo "FAIL: $scope/vkstream.service has no WatchdogSec"; fail=1; }
  # Issue 37: without it the soft limit of 1024 was below the 1024 HTTP connections allowed.
  grep -q "^LimitNOFILE=" vkstream.service || { echo "FAIL: $scope/vkstream.service has no LimitNOFILE"; fail=1; }
done
grep -qx "SupplementaryGroups=render video" "$dir/system/vkstream.service" ||
  { echo "FAIL: system/vkstream.service lacks SupplementaryGroups=render video"; fail=1; }
[ $fail -eq 0 ] && echo "systemd units verified"
exit $fail

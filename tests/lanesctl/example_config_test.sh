#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The shipped example: contrib/lanes.toml with policies/default.lua installed as
# lanes.lua next to it (as the README and lanes.toml(5) tell admins to do) passes
# `lanesctl check` exactly as the plugins would load it; so does by_partition.lua.
set -u
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || { echo "FAIL: $LANESCTL not built"; exit 1; }
TMP=$(mktemp -d /tmp/lc$$-example.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
status=0
for policy in default by_partition; do
  cp "$SRCDIR/contrib/lanes.toml" "$TMP/lanes.toml"
  cp "$SRCDIR/policies/$policy.lua" "$TMP/lanes.lua"
  if out=$("$LANESCTL" check --config "$TMP/lanes.toml" 2>&1); then
    echo "ok: contrib/lanes.toml + policies/$policy.lua: $out"
  else
    echo "FAIL: contrib/lanes.toml + policies/$policy.lua: $out"
    status=1
  fi
done
exit $status

# SPDX-License-Identifier: GPL-2.0-or-later
# nft_holds NETNS WHAT DIR [ID]: `nft list WHAT` in NETNS (WHAT e.g. "table inet
# lanes" or "set inet lanes dscp_8") holds the cgroup DIR. nft prints a
# cgroupsv2 element as its path, or as the cgroup id (the dir's inode) when it
# cannot turn the id back into a path (a cgroup removed during its walk of
# /sys/fs/cgroup): both count. Pass ID (from cg_id before the dir goes) for an
# absence check on a removed cgroup, else a stale id element would pass unseen.
cg_id() { stat -c %i "$1" 2>/dev/null || echo none; }
nft_holds() {
  local ns=$1 what=$2 dir=$3 id=${4:-} listing
  [ -n "$id" ] || id=$(cg_id "$dir")
  # shellcheck disable=SC2086
  listing=$(nsenter --net="/run/netns/$ns" nft list $what 2>/dev/null)
  grep -qE "(/${dir##*/}\"|(^|[^0-9])$id)([^0-9]|\$)" <<<"$listing"
}

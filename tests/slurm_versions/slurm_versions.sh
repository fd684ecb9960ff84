# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# tests/slurm_versions/slurm_versions.sh: build and test Lanes against the Slurm
# of another Debian release, in a root made by tests/roots/make_root.sh.
#
#   source tests/slurm_versions/slurm_versions.sh
#   slurm_versions_run SUITE MAJOR.MINOR      # e.g. trixie 24.11
#
# What it does, as root:
#   1. make_root.sh SUITE (cached under $LANES_CACHE_DIR, default /var/cache/lanes)
#      into a scratch dir under ${TMPDIR:-/tmp};
#   2. copies the source tree into it (the files git knows, tracked or not
#      ignored; without git, the tree less build output);
#   3. enters it in new mount, PID and UTS namespaces: /dev and /sys bound from
#      the host, its own /proc, a private /run and /tmp, the ccache dir
#      ($LANES_CACHE_DIR/ccache/SUITE) bound in; network namespaces come from the
#      host kernel as always;
#   4. runs in_root.sh there: configure, build, the unit tests, tests/cluster's
#      smoke test and tests/e2e's job_submit, spank, faults and lua_and_lanes
#      tests, with the root's own slurmctld, slurmd and munged;
#   5. cleans up: the PID namespace's end kills anything left, the mount
#      namespace's end drops every mount, and the scratch dir is removed (kept
#      with LANES_KEEP_ROOT=1).
# Returns in_root.sh's status; its output (with the failing tests' logs) goes to
# stdout.
#
# SLURM_VERSIONS_SHARE_DIR=DIR (a host dir): once the build succeeds, in_root.sh
# also puts the node's binaries there (spank_lanes.so, job_submit_lanes.so,
# lanesctl, lanes-agent), the root's libslurm-dev version and the hash of the
# source tree (slurm_versions_tree_hash), "ready" last. The VM test uses them
# instead of building the same tree for the same Debian release again.

slurm_versions__say() { printf 'slurm_versions: %s\n' "$*"; }

# slurm_versions__source_files DIR: the source tree's files, relative to DIR
# and NUL-separated: the files git knows (tracked, or untracked and not
# ignored); without git (a dist tree, an export), every file but build output.
slurm_versions__source_files() {
    local src
    src=$(cd "$1" && pwd -P) || return 1  # make check's LANES_SRCDIR may be build/..
    if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
        [[ $(cd "$(git -C "$src" rev-parse --show-toplevel)" && pwd -P) == "$src" ]]; then
        (cd "$src" && git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [[ -f $f || -L $f ]] && printf '%s\0' "$f"; done)
    else
        (cd "$src" && find . \( -path './build*' -o -path ./_build -o -name .git -o -name autom4te.cache \
            -o -name .libs -o -name .deps \) -prune -o \( -type f -o -type l \) \
            ! -name config.status ! -name config.log ! -name '*.o' ! -name '*.lo' ! -name '*.la' -print0 |
            sed -z 's|^\./||')
    fi
}

# slurm_versions_tree_hash DIR: a hash of the files slurm_versions__copy_source
# copies out of DIR (their names and contents), to tell whether a build made
# from one copy is of the same tree as another.
slurm_versions_tree_hash() {
    (cd "$1" && slurm_versions__source_files . | LC_ALL=C sort -z | xargs -0 -r sha256sum) | sha256sum | cut -c1-16
}

# slurm_versions__copy_source SRC DEST: the source tree without build output.
slurm_versions__copy_source() {
    local src=$1 dest=$2
    mkdir -p "$dest" || return 1
    (cd "$src" && slurm_versions__source_files . | tar -c --null -T - -f -) | tar -x -C "$dest"
}

# slurm_versions__enter ROOT CMD...: CMD chrooted in ROOT, in new mount, PID and
# UTS namespaces. Everything mounted here lives only as long as the namespace.
# unshare --fork ignores SIGINT and SIGTERM while it waits; --kill-child makes
# the namespace's first process (and so every process in it) die with unshare,
# so SIGKILL to unshare ends the whole run. Run it as `slurm_versions__enter
# ... &`: the subshell execs unshare, so $! is unshare's PID.
slurm_versions__enter() {
    local root=$1
    shift
    # shellcheck disable=SC2016 # expanded by the inner shell
    exec unshare --mount --pid --fork --kill-child --uts --propagation private -- /bin/bash -c '
        set -e
        root=$1; shift
        # The root must be a mount point: ip -n/ip netns exec remount "/" rslave.
        mount --bind "$root" "$root"
        mount --rbind /dev "$root/dev"
        mount --make-rslave "$root/dev"
        mount --rbind /sys "$root/sys"
        mount --make-rslave "$root/sys"
        mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
        mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"
        mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
        mkdir -p "$root/lanes/ccache"
        mount --bind "$CCACHE_HOST_DIR" "$root/lanes/ccache"
        if [[ -n ${SLURM_VERSIONS_SHARE_DIR:-} ]]; then
            mkdir -p "$root/lanes/share"
            mount --bind "$SLURM_VERSIONS_SHARE_DIR" "$root/lanes/share"
        fi
        hostname lanes-root
        # As Debian installs it: the host name resolves from /etc/hosts. Without
        # it slurmctld asks DNS for the client host "lanes-root" (srun steps on
        # 24.11) and, where DNS answers "try again", the step fails.
        grep -qsw lanes-root "$root/etc/hosts" || echo "127.0.1.1 lanes-root" >>"$root/etc/hosts"
        exec chroot "$root" /usr/bin/env -i TERM=dumb HOME=/root LANES_FULL_BUILD="${LANES_FULL_BUILD:-0}" \
            LANES_ROOT_CHECK_JOBS="${LANES_ROOT_CHECK_JOBS:-}" LANES_TAG_PREFIX="$LANES_TAG_PREFIX" LANES_SHARE_TREE_HASH="${LANES_SHARE_TREE_HASH:-}" \
            LANES_TEST_TIMEOUT="${LANES_ROOT_TEST_TIMEOUT:-900}" LANES_TESTS_DEADLINE="${LANES_TESTS_DEADLINE:-}" "$@"
    ' slurm-versions "$root" "$@"
}

# slurm_versions_run SUITE MAJOR.MINOR
slurm_versions_run() {
    local suite=$1 want=$2
    local src=${LANES_SRCDIR:?run through make check (LANES_SRCDIR unset)}
    local cache=${LANES_CACHE_DIR:-/var/cache/lanes}
    local t0 scratch rc
    t0=$(date +%s)
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/lanes-slurm-$suite.XXXXXX") || return 1
    # The namespaces take every mount and process with them; only the scratch
    # dir is ours to remove (never while a bind mount might still be inside).
    SLURM_VERSIONS_PID=""
    # shellcheck disable=SC2064 # expand now: the trap must remove this dir
    trap "slurm_versions__stop; slurm_versions__cleanup '$scratch'" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    if ! bash "$src/tests/roots/make_root.sh" "$suite" "$scratch/root"; then
        slurm_versions__say "FAIL: cannot make the $suite root"
        return 1
    fi
    local root=$scratch/root
    slurm_versions__copy_source "$src" "$root/lanes/src" || {
        slurm_versions__say "FAIL: cannot copy the source tree into the root"
        return 1
    }
    export CCACHE_HOST_DIR=$cache/ccache/$suite
    if [[ -n ${SLURM_VERSIONS_SHARE_DIR:-} ]]; then
        rm -rf "$SLURM_VERSIONS_SHARE_DIR" && mkdir -p "$SLURM_VERSIONS_SHARE_DIR" || return 1
        LANES_SHARE_TREE_HASH=$(slurm_versions_tree_hash "$src")
        export SLURM_VERSIONS_SHARE_DIR LANES_SHARE_TREE_HASH
    fi
    # PIDs inside the root's PID namespace repeat across roots; cgroups are
    # the host's: tag the inner tests' cgroups with this (host) PID.
    export LANES_TAG_PREFIX=v$$-
    mkdir -p "$CCACHE_HOST_DIR"
    slurm_versions__say "$suite root ready in $(($(date +%s) - t0)) s; building and testing inside"
    slurm_versions__enter "$root" /bin/bash /lanes/src/tests/slurm_versions/in_root.sh "$want" &
    SLURM_VERSIONS_PID=$!
    wait "$SLURM_VERSIONS_PID"
    rc=$?
    SLURM_VERSIONS_PID=""
    slurm_versions__say "$suite (Slurm $want): exit $rc after $(($(date +%s) - t0)) s"
    return $rc
}

# Interrupted: SIGKILL to unshare takes the namespace and everything in it.
slurm_versions__stop() {
    local pid=${SLURM_VERSIONS_PID:-}
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    slurm_versions__say "stopping the run in the root (unshare $pid)"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}

slurm_versions__cleanup() {
    local scratch=$1
    # Nothing can be mounted below the scratch dir once the namespace is gone;
    # check anyway, and never remove through a mount.
    if grep -q " $scratch/" /proc/self/mounts; then
        slurm_versions__say "ERROR: mounts left under $scratch; not removing it:"
        grep " $scratch/" /proc/self/mounts
        return 1
    fi
    if [[ ${LANES_KEEP_ROOT:-0} == 1 ]]; then
        slurm_versions__say "kept $scratch (LANES_KEEP_ROOT=1)"
    else
        rm -rf --one-file-system -- "$scratch"
    fi
}

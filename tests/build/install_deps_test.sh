#!/usr/bin/env bash
# contrib/install-deps.sh succeeds whether or not /usr/sbin/policy-rc.d exists
# (Debian's container images ship one; issue 12: the script ended with
# `((created_policy)) && rm ...`, status 1, where it existed). apt-get and
# dpkg-query are stubs on PATH (every package "missing", the install recorded),
# and /usr/sbin is a tmpfs in a private mount namespace, so the host's own
# policy-rc.d and packages are never touched. Checks: exit 0 in both cases;
# services are held off (a policy-rc.d that exits 101) while apt-get runs; a
# policy-rc.d the script made is gone afterwards; one that was there is kept
# byte for byte.
set -uo pipefail
src=${LANES_SRCDIR:?run through make check}
((EUID == 0)) || { echo "SKIP: needs root (a private mount namespace over /usr/sbin)"; exit 77; }
unshare -m bash -c 'mount --make-rprivate / && mount -t tmpfs lanes-test /usr/sbin' 2>/dev/null ||
    { echo "SKIP: cannot make a private mount namespace (unshare -m) here"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanes-install-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
cat >"$tmp/bin/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
cat >"$tmp/bin/apt-get" <<'EOF'
#!/bin/sh
# Records what a real install would meet: the policy-rc.d and its verdict.
log=${LANES_TEST_LOG:?}
case " $* " in
*" install "*)
    if [ -x /usr/sbin/policy-rc.d ]; then
        /usr/sbin/policy-rc.d slurmd start >/dev/null 2>&1
        echo "install: policy-rc.d exits $?" >>"$log"
    else
        echo "install: no policy-rc.d" >>"$log"
    fi ;;
*) echo "apt-get $*" >>"$log" ;;
esac
exit 0
EOF
chmod 755 "$tmp/bin/dpkg-query" "$tmp/bin/apt-get"
status=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; status=1; }

# CASE: "absent" or "present". Runs the script with /usr/sbin a fresh tmpfs,
# holding a policy-rc.d of our own in the "present" case; prints the script's
# exit status, then what /usr/sbin/policy-rc.d held afterwards (or "gone").
run_case() {
    # shellcheck disable=SC2016  # the inner script expands in the namespace's bash
    LANES_TEST_LOG=$tmp/log-$1 PATH=$tmp/bin:$PATH unshare -m bash -c '
        mount --make-rprivate / && mount -t tmpfs lanes-test /usr/sbin || exit 99
        if [[ $1 == present ]]; then
            printf "#!/bin/sh\n# the image'\''s own\nexit 101\n" >/usr/sbin/policy-rc.d
            chmod 755 /usr/sbin/policy-rc.d
        fi
        bash "$2/contrib/install-deps.sh" >"$3/out-$1" 2>&1
        echo "exit $?"
        if [[ -e /usr/sbin/policy-rc.d ]]; then cat /usr/sbin/policy-rc.d; else echo gone; fi
    ' _ "$1" "$src" "$tmp"
}

out=$(run_case absent)
if [[ $(head -1 <<<"$out") == "exit 0" ]]; then ok "no policy-rc.d before: install-deps.sh exits 0"
else bad "no policy-rc.d before: install-deps.sh: $(head -1 <<<"$out"): $(cat "$tmp/out-absent")"; fi
if grep -qx 'install: policy-rc.d exits 101' "$tmp/log-absent" 2>/dev/null; then ok "services held off during apt-get install"
else bad "during apt-get install: $(cat "$tmp/log-absent" 2>/dev/null || echo 'apt-get never ran')"; fi
if [[ $(tail -n +2 <<<"$out") == gone ]]; then ok "the policy-rc.d it made is removed"
else bad "the policy-rc.d it made is left behind: $(tail -n +2 <<<"$out")"; fi

out=$(run_case present)
if [[ $(head -1 <<<"$out") == "exit 0" ]]; then ok "policy-rc.d already there: install-deps.sh exits 0"
else bad "policy-rc.d already there: install-deps.sh: $(head -1 <<<"$out"): $(cat "$tmp/out-present")"; fi
if grep -qx 'install: policy-rc.d exits 101' "$tmp/log-present" 2>/dev/null; then ok "apt-get install ran with it"
else bad "during apt-get install: $(cat "$tmp/log-present" 2>/dev/null || echo 'apt-get never ran')"; fi
if [[ $(tail -n +2 <<<"$out") == $'#!/bin/sh\n# the image\'s own\nexit 101' ]]; then ok "the existing policy-rc.d is kept as it was"
else bad "the existing policy-rc.d changed: $(tail -n +2 <<<"$out")"; fi
exit $status

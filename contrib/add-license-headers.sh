#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Put the one-line licence header (SPDX-License-Identifier: GPL-2.0-or-later)
# at the top of every tracked source file that lacks one. Idempotent: a file
# that already names an SPDX licence in its first lines is left as it is.
#
#   contrib/add-license-headers.sh            # every tracked file
#   contrib/add-license-headers.sh FILE...    # only these
#   contrib/add-license-headers.sh --check    # list files without one; exit 1 if any
#
# The comment syntax follows the file type; a "#!" line or an Emacs/vim mode
# line stays first. Files of unknown type, data (JSON, TOML fixtures) and the
# licence text itself are skipped, and so are test fixtures whose line numbers
# tests assert (a header line would move every error position they expect):
# tests/hostile/*.lua (their "-- test: FILE:LINE:" expectations) and
# tests/lanesctl/data/ (check_test.sh and policy_test.sh expect broken.lua:4,
# good.lua:7, broken_key.toml:36).
set -euo pipefail
spdx='SPDX-License-Identifier: GPL-2.0-or-later'
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
cd "$(dirname "$0")/.."
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files); fi

comment_for() {
    case $1 in
        tests/hostile/*.lua | tests/lanesctl/data/*) echo '' ;;
        *.cpp | *.hpp | *.h | *.c) echo '//' ;;
        *.sh | *.am | *.ac | *.m4 | *.spec | *.spec.in | */rules | *.timer | *.service | *.yml | *.yaml | \
            *.bash | contrib/lanes.conf | contrib/plugstack.conf.d/* | .ci/run | */completions/*) echo '#' ;;
        *.lua | *.lua.in) echo '--' ;;
        man/*.in) echo '.\"' ;;
        *) echo '' ;;
    esac
}

missing=0
for f in "${files[@]}"; do
    [[ -f $f && ! -L $f ]] || continue
    c=$(comment_for "$f")
    [[ -n $c ]] || continue
    if head -n 5 -- "$f" | grep -q 'SPDX-License-Identifier:'; then continue; fi
    if ((check)); then echo "$f"; missing=1; continue; fi
    tmp=$(mktemp "$f.XXXXXX")
    first=$(head -n 1 -- "$f")
    if [[ $first == '#!'* || $first == *'-*-'* ]]; then
        { printf '%s\n' "$first"; printf '%s %s\n' "$c" "$spdx"; tail -n +2 -- "$f"; } >"$tmp"
    else
        { printf '%s %s\n' "$c" "$spdx"; cat -- "$f"; } >"$tmp"
    fi
    chmod --reference="$f" "$tmp"
    mv -f -- "$tmp" "$f"
done
exit $missing

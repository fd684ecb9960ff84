#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The bash completion for lanesctl offers the subcommands, each subcommand's
# own options (and not another's), and file names after --config. Runs the
# completion function as bash does, with bash-completion's helpers when they are
# installed and without them otherwise. The completion is generated from
# lanesctl's option table (lanesctl/completion_gen); every subcommand of
# `lanesctl --help` and every option the table gives a subcommand must be
# offered there, and no option of another subcommand.
set -uo pipefail
: "${LANES_SRCDIR:?run through make check}" "${LANES_BUILDDIR:?run through make check}"
completion=$LANES_BUILDDIR/contrib/completions/lanesctl
env -u MAKEFLAGS -u MFLAGS make -C "$LANES_BUILDDIR" -s contrib/completions/lanesctl lanesctl/lanesctl >/dev/null ||
    { echo "FAIL: cannot build the completion"; exit 1; }
failed=0
complete_line() {  # complete_line WORD... : COMPREPLY for the last word
    bash --norc --noprofile -c '
        [[ -r /usr/share/bash-completion/bash_completion ]] && source /usr/share/bash-completion/bash_completion
        source "$0"
        COMP_WORDS=("${@}"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
        _lanesctl lanesctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}"' "$completion" "$@" | sort | tr '\n' ' '
}
expect() {  # expect "WORDS" WANT-WORD... / "!WORD" must be absent
    local words=$1 got w
    shift
    # shellcheck disable=SC2086
    got=" $(complete_line $words '') "
    [[ $words == *"|"* ]] && got=" $(complete_line ${words%%|*} "${words#*|}") "
    for w in "$@"; do
        if [[ $w == !* ]]; then
            [[ $got == *" ${w#!} "* ]] && { echo "FAIL: '$words': offered ${w#!}: $got"; failed=1; }
        else
            [[ $got == *" $w "* ]] || { echo "FAIL: '$words': no $w in: $got"; failed=1; }
        fi
    done
}
expect "lanesctl" check policy windows status gc --config '!--prometheus'
expect "lanesctl status" --noheader --parsable --prometheus --node '!--dry-run' '!check'
expect "lanesctl windows" --parsable --noheader --days '!--prometheus'
expect "lanesctl gc" --dry-run --all '!--parsable'
expect "lanesctl" signals agent
expect "lanesctl agent" --node '!--dry-run'
expect "lanesctl" report
expect "lanesctl report" --prometheus --slo --step --plot --parsable '!--node' '!--dry-run'
expect "lanesctl policy" test
expect "lanesctl policy test|--" --fixtures --job --at
expect "lanesctl --config x.toml status" --parsable '!check'
expect "lanesctl" reapply rate
expect "lanesctl reapply" --node --dry-run '!--parsable'

# Against lanesctl itself: every subcommand its --help lists, and per
# subcommand every option of the table (and none only another one takes).
subs=$("$LANES_BUILDDIR/lanesctl/lanesctl" --help | awk '/^Subcommands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
[[ -n $subs ]] || { echo "FAIL: lanesctl --help lists no subcommands"; failed=1; }
# shellcheck disable=SC2086
expect "lanesctl" $subs
table=$("$LANES_BUILDDIR/lanesctl/completion_gen" --table)
all_own=$(grep -v '^\*|' <<<"$table" | cut -d'|' -f2 | tr ' ' '\n' | sort -u)
globals=$(sed -n 's/^\*|//p' <<<"$table")
while IFS='|' read -r cmd own; do
    [[ $cmd == '*' ]] && continue
    absent=()
    for o in $all_own; do [[ " $own " == *" $o "* ]] || absent+=("!$o"); done
    # shellcheck disable=SC2086
    if [[ $cmd == "policy test" ]]; then
        expect "lanesctl policy test|--" $own $globals "${absent[@]}"
    elif [[ $cmd == rate ]]; then
        expect "lanesctl rate|--" $own $globals "${absent[@]}"
    else
        expect "lanesctl $cmd" $own $globals "${absent[@]}"
    fi
done <<<"$table"
# After --config, file names: the completion script itself is there.
dir=$LANES_SRCDIR/contrib/completions
got=$(complete_line lanesctl --config "$dir/lan")
[[ $got == *"$dir/lanesctl.in"* ]] || { echo "FAIL: --config did not complete a file name: $got"; failed=1; }
((failed)) && exit 1
echo "ok: lanesctl completion"

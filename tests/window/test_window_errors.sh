#!/usr/bin/env bash
# The window's failures that need no display, through the built program (argument 1):
#  - DISPLAY naming no X server: one line on stderr and exit 1 at once, never a window that runs
#    invisibly until killed (the timeout turns a hang into a failure);
#  - a --script screenshot into a missing folder: exit 2 before anything is loaded or opened;
#  - --iso and --spacing values that are not finite floats: exit 2 with one line.
set -uo pipefail
inkray=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/inkray-window-errors-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

env -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER DISPLAY=:99999 timeout 60 "$inkray" --device cpu builtin:sphere:8 \
  >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 1 ]] || fail "DISPLAY=:99999: exit $rc, expected 1 (124 = still running after 60 s)"
[[ $(wc -l <"$work/err") == 1 ]] || fail "DISPLAY=:99999: expected one line on stderr, got: $(cat "$work/err")"
grep -q 'DISPLAY=:99999' "$work/err" || fail "DISPLAY=:99999: the message does not name the display: $(cat "$work/err")"

printf '0.5 screenshot %s\n1 quit\n' /nonexistent-folder/shot.png >"$work/shot.script"
env -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER DISPLAY=:99999 timeout 60 "$inkray" --device cpu \
  --script "$work/shot.script" builtin:sphere:8 >"$work/out" 2>"$work/err"
rc=$?
[[ $rc == 2 ]] || fail "screenshot into a missing folder: exit $rc, expected 2"
grep -q '/nonexistent-folder/shot.png' "$work/err" || fail "screenshot: the message does not name the file: $(cat "$work/err")"
[[ $(wc -l <"$work/err") == 1 ]] || fail "screenshot: expected one line on stderr, got: $(cat "$work/err")"

# Values that are not finite as floats (1e39 overflows one): refused before anything opens.
for args in "--iso nan" "--iso inf" "--iso 1e39" "--spacing 1e39,1,1" "--spacing 0,1,1" "--spacing 1,nan,1"; do
  # shellcheck disable=SC2086
  env -u WAYLAND_DISPLAY -u SDL_VIDEODRIVER DISPLAY=:99999 timeout 60 "$inkray" --device cpu $args \
    builtin:sphere:8 >"$work/out" 2>"$work/err"
  rc=$?
  [[ $rc == 2 ]] || fail "$args: exit $rc, expected 2"
  [[ $(wc -l <"$work/err") == 1 ]] || fail "$args: expected one line on stderr, got: $(cat "$work/err")"
done

((failures == 0)) && echo "window errors: ok"
exit $((failures > 0))

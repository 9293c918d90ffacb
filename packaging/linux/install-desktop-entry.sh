#!/bin/sh
# Add ComputeShare to this user's application menu, pointing at the folder this script is in.
#   ./install-desktop-entry.sh            write ~/.local/share/applications/computeshare.desktop
#   ./install-desktop-entry.sh --remove   take it away again
set -eu
here=$(cd "$(dirname "$0")" && pwd)
apps="${XDG_DATA_HOME:-$HOME/.local/share}/applications"
entry="$apps/computeshare.desktop"
if [ "${1:-}" = "--remove" ]; then
    rm -f "$entry"
    echo "removed $entry"
    exit 0
fi
mkdir -p "$apps"
# Exec takes a quoted path (the folder may hold spaces); Icon and TryExec take it as is.
sed -e "s|^Exec=.*|Exec=\"$here/computeshare-desktop\"|" \
    -e "s|^TryExec=.*|TryExec=$here/computeshare-desktop|" \
    -e "s|^Icon=.*|Icon=$here/computeshare.svg|" \
    "$here/computeshare.desktop" > "$entry"
echo "added $entry"

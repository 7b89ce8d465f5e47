#!/bin/bash
# The build and runtime checks of deploy/Containerfile, which runs this
# script in both of its stages; CI runs it too (.ci/deploy), so that what
# the image does is proven on every change even where no image can be
# built (no container registry is reachable from CI).
#
#   deploy/container-build.sh build OUT    the release binary, as OUT/proxydeck
#   deploy/container-build.sh check BIN    what the final image must do:
#       its libraries all resolve; as the image's user (uid 10001) on an
#       empty data folder like the volume, it migrates, serves, answers
#       deploy/healthcheck (the HEALTHCHECK), and exits 0 on SIGTERM.
set -euo pipefail

# The image's user (deploy/Containerfile), numeric so that no passwd entry
# is needed here.
IMAGE_UID=10001

build() {
    local out="$1"
    cd "$(dirname "$0")/.."
    cargo build --release --locked --bin proxydeck
    mkdir -p "$out"
    cp "${CARGO_TARGET_DIR:-target}/release/proxydeck" "$out/proxydeck"
    echo "built $out/proxydeck"
}

check() {
    local binary="$1" here
    here="$(cd "$(dirname "$0")" && pwd)"
    if ldd "$binary" | grep "not found"; then
        echo "check: $binary needs libraries this system lacks" >&2
        return 1
    fi
    "$binary" --version

    local work data pid address="" line status
    work="$(mktemp -d)"
    chmod 0755 "$work"
    data="$work/data"
    install -d -m 0700 -o "$IMAGE_UID" -g "$IMAGE_UID" "$data"
    # Where the image's user can run it, wherever the caller keeps it.
    install -D -m 0755 "$binary" "$work/bin/proxydeck"
    binary="$work/bin/proxydeck"
    # The image's user and environment (one process: setpriv and env exec).
    local as_image_user=(
        setpriv --reuid="$IMAGE_UID" --regid="$IMAGE_UID" --clear-groups --
        env -i PATH=/usr/local/bin:/usr/bin:/bin NO_COLOR=1
        PROXYDECK_DATABASE_URL="sqlite://$data/proxydeck.db"
    )
    "${as_image_user[@]}" "$binary" migrate
    [ "$(stat -c %u "$data/proxydeck.db")" = "$IMAGE_UID" ]

    # serve, and wait for its `serving` line (it tells the address).
    mkfifo "$work/log"
    "${as_image_user[@]}" "$binary" serve --listen 127.0.0.1:0 2>"$work/log" &
    pid=$!
    exec 3<"$work/log"
    while IFS= read -r -t 30 line <&3; do
        echo "$line"
        case "$line" in
            *" serving address="*) address="${line##* serving address=}"; address="${address%% *}"; break ;;
        esac
    done
    cat <&3 &
    if [ -z "$address" ]; then
        echo "check: the server did not say where it serves" >&2
        kill "$pid" 2>/dev/null || true
        return 1
    fi
    PROXYDECK_LISTEN="$address" "$here/healthcheck"
    echo "check: the HEALTHCHECK passes on $address"
    kill -TERM "$pid"
    status=0
    wait "$pid" || status=$?
    exec 3<&-
    wait
    rm -rf "$work"
    if [ "$status" -ne 0 ]; then
        echo "check: serve exited $status on SIGTERM" >&2
        return 1
    fi
    echo "check: migrated, served, healthy and stopped cleanly as uid $IMAGE_UID"
}

case "${1:-}" in
    build) build "${2:?OUT}" ;;
    check) check "${2:?BINARY}" ;;
    *) echo "usage: $0 build OUT | check BINARY" >&2; exit 2 ;;
esac

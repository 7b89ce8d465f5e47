#!/usr/bin/env bash
# Import and export throughput and peak memory of the embedded store, and
# the round trip (export -> import into an empty store -> export gives the
# same bytes).
#
#   bench/import-export.sh                # 1,000,000 projects
#   PROJECTS=20000 bench/import-export.sh # quicker
#
# Prints one table; copy it to bench/RESULTS.md with the date and machine.
set -euo pipefail
cd "$(dirname "$0")/.."

PROJECTS=${PROJECTS:-1000000}
ORGANIZATIONS=${ORGANIZATIONS:-1000}
FOCUS=${FOCUS:-$((PROJECTS / 10))}
REVISED=${REVISED:-100}
REVISIONS=${REVISIONS:-50}

cargo build --release --quiet --example generate --bin proxydeck
bin=target/release/proxydeck
work=$(mktemp -d "${TMPDIR:-/tmp}/proxydeck-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

target/release/examples/generate --projects "$PROJECTS" --organizations "$ORGANIZATIONS" \
    --focus-projects "$FOCUS" --revised-projects "$REVISED" --revisions "$REVISIONS" > "$work/data.ndjson"
lines=$(wc -l < "$work/data.ndjson")
bytes=$(stat -c %s "$work/data.ndjson")

# Runs a command under GNU time; prints "seconds peak_rss_kib".
measure() {
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null
    cat "$work/time"
}

row() { # operation seconds rss_kib
    awk -v op="$1" -v s="$2" -v kib="$3" -v p="$PROJECTS" -v l="$lines" \
        'BEGIN { printf "| %-28s | %8.1f | %12.0f | %10.0f | %8.0f |\n", op, s, p / s, l / s, kib / 1024 }'
}

read -r import_s import_kib < <(measure "$bin" --database "sqlite://$work/a.db" admin import "$work/data.ndjson" --quiet)
read -r reimport_s reimport_kib < <(measure "$bin" --database "sqlite://$work/a.db" admin import "$work/data.ndjson" --quiet)
read -r export_s export_kib < <(measure "$bin" --database "sqlite://$work/a.db" admin export "$work/first.ndjson" --quiet)
"$bin" --database "sqlite://$work/b.db" admin import "$work/first.ndjson" --quiet > /dev/null
"$bin" --database "sqlite://$work/b.db" admin export "$work/second.ndjson" --quiet > /dev/null
if cmp -s "$work/first.ndjson" "$work/second.ndjson"; then round_trip="identical"; else round_trip="DIFFERENT"; fi

echo "data: $PROJECTS projects, $ORGANIZATIONS organizations, $REVISED x $REVISIONS revisions; $lines lines, $((bytes / 1048576)) MiB"
echo "database file after import: $(( $(stat -c %s "$work/a.db") / 1048576 )) MiB"
echo "| operation                    | seconds | projects/s   | lines/s    | peak RSS MiB |"
echo "|------------------------------|---------|--------------|------------|--------------|"
row "import into an empty store" "$import_s" "$import_kib"
row "import again (no change)" "$reimport_s" "$reimport_kib"
row "export" "$export_s" "$export_kib"
echo "round trip (export, import, export): $round_trip"
[ "$round_trip" = identical ]

#!/usr/bin/env bash
# Regenerates the Swift code of the GTFS-Realtime subset Hubbub reads
# (Sources/Domains/Transit/Feeds/Proto/gtfs-realtime-alerts.proto → Sources/Domains/Transit/Feeds/GTFSRealtimeAlerts.pb.swift).
# Run it by hand after changing the .proto and commit the result: building protoc-gen-swift takes
# about ten minutes, too long for every CI run. Needs protobuf-compiler (installed here) and the
# swift-protobuf package the build already depends on.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_apt protobuf-compiler
log "building protoc-gen-swift (swift-protobuf's plugin)"
swift build -c release --product protoc-gen-swift
PLUGIN="$(swift build -c release --show-bin-path)/protoc-gen-swift"
[[ -x "$PLUGIN" ]] || die "protoc-gen-swift was not built at $PLUGIN"
log "protoc $(protoc --version)"
protoc --plugin=protoc-gen-swift="$PLUGIN" --swift_opt=Visibility=Public --swift_opt=FileNaming=DropPath \
    --proto_path=Sources/Domains/Transit/Feeds/Proto --swift_out=Sources/Domains/Transit/Feeds Sources/Domains/Transit/Feeds/Proto/gtfs-realtime-alerts.proto
mv Sources/Domains/Transit/Feeds/gtfs-realtime-alerts.pb.swift Sources/Domains/Transit/Feeds/GTFSRealtimeAlerts.pb.swift
log "wrote Sources/Domains/Transit/Feeds/GTFSRealtimeAlerts.pb.swift"

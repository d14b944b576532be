#!/usr/bin/env bash
# The server's use-case tests (HubbubServerTests), the store's (StoreTests), the literals' round trip (PostgresLiteralTests) and the room log's many-room writes again, on PostgreSQL instead of SQLite: a fresh
# cluster (scripts/lib.sh start_postgres), a database per test server (HB_TEST_POSTGRES, see
# Tests/Support/TestSupport/TestPostgres.swift). Every domain's SQL and migrations run on it.
# Left out, because they open the SQLite file beside the server to look at or break its rows (they
# run in the SQLite pass): the tests named in SQLITE_ONLY below.
# Needs a release build with tests (scripts/test.sh makes one).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SQLITE_ONLY='testAffinityFeedResolvesNamesAndReplacesOnlyTheArtistsItNames|testDeletingTheAccountErasesDestinationsAndRecordings|testExpiredItemsAndUnusedCorridorsArePrunedButLiveOnesStay|testAFailedWriteLeavesTheCatalogEqualToTheStore|testChangesWrittenButNotToldBeforeAStopAreToldAtStartUp|testEachRecordKeepsOneRowAcrossUpgradeReIngestsAndRestarts|testDatabaseFilesAreTheOwnersOnly'

start_postgres POSTGRES_URL
cd "$REPO_ROOT"
status=0
HB_TEST_POSTGRES="$POSTGRES_URL" swift test -c release --skip-build --filter 'HubbubServerTests|ClusterTests|StorageTests.StoreTests|StorageTests.PostgresLiteralTests|RoomLogTests.RoomLogManyRoomsTests' --skip "$SQLITE_ONLY" \
    >/tmp/hubbub-postgres-test.log 2>&1 || status=$?
grep -E 'error:|failed \(' /tmp/hubbub-postgres-test.log | head -40 >&2 || true
summary="$(grep -E 'Executed [0-9]+ tests' /tmp/hubbub-postgres-test.log | tail -1)"
log "PostgreSQL:${summary}"
((status == 0)) || die "the use-case tests failed on PostgreSQL (exit $status; /tmp/hubbub-postgres-test.log)"
log "use-case tests passed on PostgreSQL"

# shellcheck shell=bash
# Shared helpers for Hubbub's external test scripts. Source it, don't run it:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# What it gives you:
#   REPO_ROOT            absolute path of the repository (the cwd is set to it)
#   die MSG...           print "error: MSG" to stderr and exit 1
#   log MSG...           print "==> [T] MSG" to stderr, T the seconds since the outermost
#                        script started (HB_T0, exported: where a suite's minutes go)
#   ensure_apt PKG...    install missing Debian packages (apt-get update once first)
#   ensure_venv PKG...   create $REPO_ROOT/.venv if needed, pip-install PKG... into it,
#                        put it first on PATH; sets VENV_PY
#   free_port            print a free TCP port on 127.0.0.1
#   make_tmpdir VAR      set VAR to a fresh temp dir that is removed on exit
#   on_exit CMD...       run CMD (via eval) when the script exits, after the server stops
#   start_postgres VAR   a fresh PostgreSQL cluster (Debian's, as the postgres user) stopped at
#                        exit; VAR gets its URL; POSTGRES_STOP_CMD and POSTGRES_START_CMD
#                        stop and start it again (tests of a restart under load)
#   start_hubbub ARGS... start $HB_BIN with ARGS in the background, wait for /healthz on
#                        the --port given; sets HB_PID and HB_LOG
#   stop_hubbub          SIGTERM the server, wait up to 10 s, then SIGKILL
#   dump_hubbub_log      print the tail of the server's log to stderr
#   note_hubbub_log RC   when RC != 0, say where the server log is kept (call it before
#                        printing a final count line; otherwise the exit trap says it last)
#
# An EXIT trap (installed when this file is sourced) runs the on_exit commands and
# stops the server whatever way the script ends. Scripts must not install their own
# EXIT trap; use on_exit instead.

if [[ -n "${_HUBBUB_LIB_SOURCED:-}" ]]; then
    return 0
fi
_HUBBUB_LIB_SOURCED=1

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export REPO_ROOT
cd "$REPO_ROOT"

export DEBIAN_FRONTEND=noninteractive
export PIP_DISABLE_PIP_VERSION_CHECK=1

: "${HB_BIN:=$REPO_ROOT/.build/release/hubbub}"

HB_PID=""
HB_LOG=""
_HUBBUB_LOG_NOTED=""
_HUBBUB_APT_UPDATED=""
_HUBBUB_EXIT_CMDS=()

export HB_T0="${HB_T0:-$(date +%s)}"
log() { printf '==> [%ds] %s\n' "$(($(date +%s) - HB_T0))" "$*" >&2; }

die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# Run apt-get as root (directly, or through sudo when we are not root).
_apt_get() {
    local -a pre=()
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "ensure_apt: need root (or sudo) to run apt-get $*"
        pre=(sudo -n env DEBIAN_FRONTEND=noninteractive)
    fi
    "${pre[@]}" timeout 900 apt-get -o DPkg::Lock::Timeout=120 -o Dpkg::Use-Pty=0 "$@"
}

_apt_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

# ensure_apt PKG... — install the Debian packages that are not installed yet.
ensure_apt() {
    local pkg
    local -a missing=()
    for pkg in "$@"; do
        _apt_installed "$pkg" || missing+=("$pkg")
    done
    ((${#missing[@]} == 0)) && return 0
    log "installing Debian packages: ${missing[*]}"
    local out
    out="$(mktemp "${TMPDIR:-/tmp}/hubbub-apt.XXXXXX")"
    if [[ -z "$_HUBBUB_APT_UPDATED" ]]; then
        if ! _apt_get -q update </dev/null >"$out" 2>&1; then
            tail -n 30 "$out" >&2
            rm -f "$out"
            die "apt-get update failed"
        fi
        _HUBBUB_APT_UPDATED=1
    fi
    if ! _apt_get -y -q --no-install-recommends install "${missing[@]}" </dev/null >"$out" 2>&1; then
        tail -n 30 "$out" >&2
        rm -f "$out"
        die "apt-get install ${missing[*]} failed"
    fi
    rm -f "$out"
    for pkg in "${missing[@]}"; do
        _apt_installed "$pkg" || die "package $pkg is still not installed after apt-get install"
    done
}

# ensure_venv PKG... — $REPO_ROOT/.venv with PKG... installed; activates it for this script.
ensure_venv() {
    local venv="$REPO_ROOT/.venv"
    if [[ ! -x "$venv/bin/python" ]]; then
        log "creating virtualenv $venv"
        if ! python3 -m venv "$venv" >/dev/null 2>&1; then
            # Debian splits ensurepip out of python3.
            rm -rf "$venv"
            ensure_apt python3-venv
            python3 -m venv "$venv" || die "python3 -m venv $venv failed"
        fi
    fi
    if (($# > 0)); then
        # Already-satisfied requirements do not touch the network.
        timeout 900 "$venv/bin/python" -m pip install -q "$@" </dev/null \
            || die "pip install $* into $venv failed"
    fi
    export VENV_PY="$venv/bin/python"
    export VIRTUAL_ENV="$venv"
    export PATH="$venv/bin:$PATH"
}

# free_port — a TCP port that was free on 127.0.0.1 a moment ago.
free_port() {
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# make_tmpdir VAR — set VAR to a temp dir removed when the script exits.
# (It sets a variable rather than printing: a $(...) subshell could not register the cleanup.)
make_tmpdir() {
    local _d
    _d="$(mktemp -d "${TMPDIR:-/tmp}/hubbub-test.XXXXXX")" || die "mktemp -d failed"
    _HUBBUB_EXIT_CMDS+=("rm -rf '$_d'")
    printf -v "$1" '%s' "$_d"
}

# on_exit CMD... — run CMD (a shell string) at exit, after the server is stopped.
on_exit() {
    _HUBBUB_EXIT_CMDS+=("$*")
}

# _port_from_args ARGS... — the value of --port in ARGS.
_port_from_args() {
    local port=""
    while (($# > 0)); do
        case "$1" in
            --port) port="${2:-}"; shift ;;
            --port=*) port="${1#--port=}" ;;
        esac
        shift
    done
    printf '%s\n' "$port"
}

dump_hubbub_log() {
    if [[ -n "$HB_LOG" && -s "$HB_LOG" ]]; then
        printf -- '----- hubbub log (%s), last 80 lines -----\n' "$HB_LOG" >&2
        tail -n 80 "$HB_LOG" >&2
        printf -- '----- end of hubbub log -----\n' >&2
    fi
}

# start_hubbub ARGS... — start the server, wait until GET /healthz answers on --port.
start_hubbub() {
    local port
    port="$(_port_from_args "$@")"
    [[ "$port" =~ ^[0-9]+$ ]] || die "start_hubbub: pass --port N (got args: $*)"
    [[ -x "$HB_BIN" ]] || die "server binary $HB_BIN not found or not executable (build it with 'swift build -c release', or set HB_BIN)"
    [[ -z "$HB_PID" ]] || die "start_hubbub: a server is already running (pid $HB_PID)"
    command -v curl >/dev/null 2>&1 || ensure_apt curl

    HB_LOG="$(mktemp "${TMPDIR:-/tmp}/hubbub-log.XXXXXX")"
    log "starting $HB_BIN $* (log: $HB_LOG)"
    "$HB_BIN" "$@" >"$HB_LOG" 2>&1 </dev/null &
    HB_PID=$!

    local deadline=$((SECONDS + 30))
    while :; do
        if ! kill -0 "$HB_PID" 2>/dev/null; then
            local rc=0
            wait "$HB_PID" 2>/dev/null || rc=$?
            HB_PID=""
            dump_hubbub_log
            die "hubbub exited (status $rc) before /healthz answered on 127.0.0.1:$port"
        fi
        if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null; then
            log "hubbub is up (pid $HB_PID, port $port)"
            return 0
        fi
        if ((SECONDS >= deadline)); then
            dump_hubbub_log
            stop_hubbub
            die "hubbub did not answer GET http://127.0.0.1:$port/healthz within 30 s"
        fi
        sleep 0.2
    done
}

# stop_hubbub — SIGTERM, up to 10 s grace, then SIGKILL. Safe to call twice.
stop_hubbub() {
    [[ -n "$HB_PID" ]] || return 0
    local pid="$HB_PID"
    HB_PID=""
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "hubbub (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
}

# note_hubbub_log RC — on failure, tell where the server log is (it is kept then).
note_hubbub_log() {
    if [[ "${1:-1}" != 0 && -n "$HB_LOG" && -s "$HB_LOG" ]]; then
        printf 'hubbub log kept at %s\n' "$HB_LOG" >&2
    fi
    _HUBBUB_LOG_NOTED=1
}

_hubbub_on_exit() {
    local rc=$?
    set +e
    stop_hubbub
    local i
    # Registered commands run newest first, after the server has stopped (its data dir may be
    # one of the temp dirs they remove).
    for ((i = ${#_HUBBUB_EXIT_CMDS[@]} - 1; i >= 0; i--)); do
        eval "${_HUBBUB_EXIT_CMDS[$i]}" >/dev/null 2>&1
    done
    if ((rc != 0)) && [[ -n "$HB_LOG" && -s "$HB_LOG" ]]; then
        [[ -n "$_HUBBUB_LOG_NOTED" ]] || printf 'hubbub log kept at %s\n' "$HB_LOG" >&2
    elif [[ -n "$HB_LOG" ]]; then
        rm -f "$HB_LOG"
    fi
    exit "$rc"
}
trap _hubbub_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_postgres VAR — a fresh PostgreSQL cluster (Debian's postgresql, installed if missing) in a
# temp dir, run as the postgres user (initdb refuses root), listening on a free loopback port;
# sets VAR to its URL (postgres://postgres@127.0.0.1:PORT). Stopped and removed at exit.
# POSTGRES_OPTIONS: more server options ("-c name=value ...").
start_postgres() {
    ensure_apt postgresql
    local bin
    bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [[ -x "$bin/initdb" ]] || die "no initdb under /usr/lib/postgresql/*/bin after installing postgresql"
    local dir port
    make_tmpdir dir
    chmod 755 "$dir"
    mkdir -p "$dir/data" && chown postgres "$dir/data" "$dir"
    port="$(free_port)"
    su postgres -s /bin/sh -c "'$bin/initdb' -D '$dir/data' -A trust -U postgres" >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    su postgres -s /bin/sh -c "'$bin/pg_ctl' -D '$dir/data' -l '$dir/postgres.log' -w -o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1 ${POSTGRES_OPTIONS:-}\" start" >/dev/null \
        || { cat "$dir/postgres.log" >&2; die "PostgreSQL did not start"; }
    _HUBBUB_EXIT_CMDS+=("su postgres -s /bin/sh -c \"'$bin/pg_ctl' -D '$dir/data' -m fast stop\" >/dev/null 2>&1")
    log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (log: $dir/postgres.log)"
    printf -v "$1" '%s' "postgres://postgres@127.0.0.1:$port"
    # For tests that restart it under load.
    POSTGRES_STOP_CMD="su postgres -s /bin/sh -c \"'$bin/pg_ctl' -D '$dir/data' -m fast -w stop\" >/dev/null"
    POSTGRES_START_CMD="su postgres -s /bin/sh -c \"'$bin/pg_ctl' -D '$dir/data' -l '$dir/postgres.log' -w -o \\\"-p $port -k '$dir' -c listen_addresses=127.0.0.1\\\" start\" >/dev/null"
}

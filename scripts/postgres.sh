#!/usr/bin/env bash
# postgres.sh starts and stops a throwaway local PostgreSQL server for the
# ledger's PostgreSQL tests and benchmarks.
#
#   scripts/postgres.sh start    start one (or find the one already running)
#                                and print its DSN on stdout, e.g.
#                                postgres://postgres@127.0.0.1:23456/gatehouse_test?sslmode=disable
#   scripts/postgres.sh dsn      print the DSN of the running server (exit 1 if none)
#   scripts/postgres.sh stop     stop it and delete its data directory
#
# The server is disposable: a fresh data directory under /tmp (initdb as the
# `postgres` user when run as root, since initdb refuses root), trust
# authentication, listening on 127.0.0.1 only, on a free port, with its Unix
# socket inside the data directory. Durability settings are PostgreSQL's
# defaults (fsync on), so benchmarks measure real commits.
#
# If PostgreSQL's binaries are missing, start installs the Debian package
# `postgresql` with apt-get (root only). Both commands are idempotent. All
# messages go to stderr; stdout carries only the DSN.
#
# Environment:
#   GATEHOUSE_PG_STATE  where the state file lives (default <repo>/.cache/postgres)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state_dir="${GATEHOUSE_PG_STATE:-$root/.cache/postgres}"
state="$state_dir/state"

log() { echo "postgres.sh: $*" >&2; }

find_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then
			echo "$d"
			return 0
		fi
	done
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(command -v initdb)"
		return 0
	fi
	return 1
}

install_postgres() {
	if [[ $(id -u) != 0 ]]; then
		log "PostgreSQL is not installed and this is not root: install the 'postgresql' package"
		return 1
	fi
	log "installing PostgreSQL with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
}

# as_pg runs a command as the postgres user when we are root.
as_pg() {
	if [[ $(id -u) == 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

running() {
	[[ -f "$state" ]] || return 1
	# shellcheck disable=SC1090
	source "$state"
	[[ -n "${bindir:-}" && -d "${data:-/nonexistent}" ]] || return 1
	as_pg "$bindir/pg_ctl" -D "$data/data" status >/dev/null 2>&1
}

cmd_start() {
	if running; then
		echo "$dsn"
		return 0
	fi
	local bindir data port dsn i
	bindir="$(find_bindir)" || { install_postgres && bindir="$(find_bindir)"; } || {
		log "no PostgreSQL binaries found"
		return 1
	}
	data="$(mktemp -d /tmp/gatehouse-pg.XXXXXX)"
	chmod 0755 "$data"
	if [[ $(id -u) == 0 ]]; then
		chown postgres: "$data"
	fi
	as_pg "$bindir/initdb" -D "$data/data" -U postgres --auth=trust -E UTF8 --locale=C -N >"$data/initdb.log" 2>&1 || {
		log "initdb failed:"
		cat "$data/initdb.log" >&2
		rm -rf "$data"
		return 1
	}
	for i in $(seq 1 20); do
		port=$((20000 + RANDOM % 20000))
		port_free "$port" || continue
		if as_pg "$bindir/pg_ctl" -D "$data/data" -l "$data/data/server.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$data/data -c max_connections=200" \
			start >/dev/null 2>&1; then
			break
		fi
		port=""
	done
	if [[ -z "$port" ]]; then
		log "could not start PostgreSQL:"
		cat "$data/data/server.log" >&2 || true
		rm -rf "$data"
		return 1
	fi
	"$bindir/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "CREATE DATABASE gatehouse_test" >&2
	dsn="postgres://postgres@127.0.0.1:$port/gatehouse_test?sslmode=disable"
	mkdir -p "$state_dir"
	printf 'bindir=%q\ndata=%q\nport=%q\ndsn=%q\n' "$bindir" "$data" "$port" "$dsn" >"$state"
	log "PostgreSQL running in $data on 127.0.0.1:$port"
	echo "$dsn"
}

cmd_stop() {
	if [[ ! -f "$state" ]]; then
		return 0
	fi
	# shellcheck disable=SC1090
	source "$state"
	if [[ -n "${data:-}" && -d "$data" ]]; then
		as_pg "$bindir/pg_ctl" -D "$data/data" -m fast -w stop >/dev/null 2>&1 || true
		rm -rf "$data"
	fi
	rm -f "$state"
	log "PostgreSQL stopped"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
dsn)
	running || exit 1
	echo "$dsn"
	;;
*)
	echo "usage: $0 start|stop|dsn" >&2
	exit 64
	;;
esac

# tether_procs lists the /proc directories of the processes that run a
# /usr/bin/tether* binary, in one pass (no process started per process).
tether_procs() {
	find /proc -mindepth 2 -maxdepth 2 -name exe -lname '/usr/bin/tether*' -printf '%h\n' 2>/dev/null || true
}

# tether_services VERB runs `tether GLOBALS service VERB` for each running
# service of the packaged tether, as the user who runs it, in its mount
# namespace, with its HOME, XDG_* and PATH: GLOBALS are the --profile and
# --config it was started with. A failure is reported and does not fail
# the package's install or removal.
tether_services() {
	local verb=$1 d exe pid
	for d in $(tether_procs); do
		exe=$(readlink "$d/exe" 2>/dev/null) || continue
		case $exe in /usr/bin/tether | "/usr/bin/tether (deleted)") ;; *) continue ;; esac
		pid=${d#/proc/}
		{
			grep -zE '^(HOME|PATH|XDG_[A-Z_]+|DBUS_SESSION_BUS_ADDRESS)=' "$d/environ" 2>/dev/null || true
			printf -- '--\0'
			cat "$d/cmdline" 2>/dev/null || true
		} | xargs -0 bash -c '
			verb=$1 pid=$2 uid=$3 gid=$4
			shift 4
			env=()
			while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
			shift 2 # "--" and argv[0]
			globals=()
			while [ $# -gt 0 ] && [ "$1" != service ]; do globals+=("$1"); shift; done
			[ "${2:-}" = run ] || exit 0 # a guardian, the tray: not a service
			nsenter -t "$pid" -m -S "$uid" -G "$gid" -- env -i "${env[@]}" /usr/bin/tether "${globals[@]}" service "$verb" ||
				echo "tether: service $verb of pid $pid (uid $uid) failed" >&2
		' tether-services "$verb" "$pid" "$(stat -c %u "$d")" "$(stat -c %g "$d")" || true
	done
}

# tether_stop_services sends SIGTERM to each running service of the
# packaged tether, which stops its agents in order and exits (as when
# its service manager stops it), and waits for each, up to two minutes.
tether_stop_services() {
	local d exe pids=() pid i
	for d in $(tether_procs); do
		exe=$(readlink "$d/exe" 2>/dev/null) || continue
		case $exe in /usr/bin/tether | "/usr/bin/tether (deleted)") ;; *) continue ;; esac
		tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qE ' service run ?$' || continue
		pid=${d#/proc/}
		kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		for ((i = 0; i < 1200; i++)); do
			[ -e "/proc/$pid" ] || break
			sleep 0.1
		done
		[ ! -e "/proc/$pid" ] || echo "tether: the service of pid $pid has not stopped after two minutes" >&2
	done
}

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
	local verb=$1 d exe pid uid gid
	for d in $(tether_procs); do
		exe=$(readlink "$d/exe" 2>/dev/null) || continue
		case $exe in /usr/bin/tether | "/usr/bin/tether (deleted)") ;; *) continue ;; esac
		# A service's command line ends in "service run" (a guardian's,
		# the tray's do not).
		tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qE ' service run ?$' || continue
		pid=${d#/proc/} uid=$(stat -c %u "$d") gid=$(stat -c %g "$d")
		# env -i VAR=VALUE... /usr/bin/tether GLOBALS service VERB: the
		# arguments, NUL-separated, are its environment's, the command
		# line's without argv[0] and "run", and the verb.
		{
			grep -zE '^(HOME|PATH|XDG_[A-Z_]+|DBUS_SESSION_BUS_ADDRESS)=' "$d/environ" 2>/dev/null || true
			printf '/usr/bin/tether\0'
			sed -z '1d;$d' "$d/cmdline" 2>/dev/null || true
			printf '%s\0' "$verb"
		} | xargs -0 nsenter -t "$pid" -m -S "$uid" -G "$gid" -- env -i ||
			echo "tether: service $verb of pid $pid (uid $uid) failed" >&2
	done
}

# tether_stop_services sends SIGTERM to each running service of the
# packaged tether, which stops its agents in order and exits (as when
# its service manager stops it), and waits for each, up to two minutes.
tether_stop_services() {
	local d exe pids='' pid i
	for d in $(tether_procs); do
		exe=$(readlink "$d/exe" 2>/dev/null) || continue
		case $exe in /usr/bin/tether | "/usr/bin/tether (deleted)") ;; *) continue ;; esac
		tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qE ' service run ?$' || continue
		pid=${d#/proc/}
		kill -TERM "$pid" 2>/dev/null && pids="$pids $pid"
	done
	for pid in $pids; do
		i=0
		while [ -e "/proc/$pid" ] && [ "$i" -lt 1200 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ ! -e "/proc/$pid" ] || echo "tether: the service of pid $pid has not stopped after two minutes" >&2
	done
}

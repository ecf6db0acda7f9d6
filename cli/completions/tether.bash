# bash completion for tether: source it, e.g. from ~/.bashrc:
#   source <(tether completion bash)
# The candidates come from the tether binary itself (tether __complete),
# which knows the commands, their flags and the running service's agents.
_tether() {
	local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n'
	local out
	out=$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
	# shellcheck disable=SC2207 # one candidate a line, split on newlines only
	COMPREPLY=($(compgen -W "$out" -- "$cur"))
}
# -o default: file names where tether offers nothing (--config FILE).
complete -o default -F _tether tether

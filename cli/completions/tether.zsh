#compdef tether
# zsh completion for tether: put it in a directory of $fpath as _tether,
#   tether completion zsh > "${fpath[1]}/_tether"
# or source it after compinit. The candidates come from the tether binary
# itself (tether __complete), which knows the commands, their flags and
# the running service's agents.
_tether() {
	local -a candidates
	candidates=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	candidates=(${candidates:#})
	if (( ${#candidates} )); then
		compadd -- "${candidates[@]}"
	else
		# Nothing from tether (--config FILE): file names.
		_files
	fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
	_tether "$@"
else
	compdef _tether tether
fi

# fish completion for tether: save it as
#   tether completion fish > ~/.config/fish/completions/tether.fish
# The candidates come from the tether binary itself (tether __complete),
# which knows the commands, their flags and the running service's agents.
function __tether_complete
	set -l words (commandline -opc)
	set -l tether $words[1]
	set -e words[1]
	$tether __complete $words (commandline -ct) 2>/dev/null
end
complete -c tether -f -a '(__tether_complete)'
# --config takes a file name.
complete -c tether -l config -r -F

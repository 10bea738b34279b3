# bash completion for wallspy (meson install puts it in
# share/bash-completion/completions/wallspy). Options and --runtime values
# are read from `wallspy --help`, so they follow the installed binary.

# The long and short options of `wallspy --help`, one per word.
_wallspy_options()
{
	"$1" --help 2>/dev/null | grep -o -- ' --\?[a-zA-Z][a-zA-Z-]*' | sort -u
}

# --runtime's values: the help's list ("auto, go, threads or a descriptor").
_wallspy_runtimes()
{
	local help
	help=$("$1" --help 2>/dev/null | tr -s ' \n' '  ')
	help=${help#*how tasks are found: }
	help=${help%% or a descriptor*}
	printf '%s\n' ${help//,/}
}

# The values an option's help line lists ("speedscope (default) or
# folded", "all (default: ...), thread, state or task: ..."): its text from
# column 27 with its continuation lines, without what is in parentheses, up
# to a colon, without commas and "or".
_wallspy_values()
{
	"$1" --help 2>/dev/null | awk -v opt="$2" '
		found && /^                          [^ ]/ { d = d " " substr($0, 27); next }
		found { exit }
		$0 ~ ("^ +(-[a-zA-Z], )?" opt " ") { found = 1; d = substr($0, 27) }
		END { print d }' |
		sed 's/([^)]*)//g; s/[:;].*//; s/,/ /g; s/\<or\>//g'
}

_wallspy()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local prog=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]} i
	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "record attach dump --help --version" -- "$cur"))
		return
	fi
	# After record's "--": the command to run, then its own arguments.
	for ((i = 2; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			if ((i == COMP_CWORD - 1)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	done
	case $prev in
	--runtime)
		COMPREPLY=($(compgen -W "$(_wallspy_runtimes "$prog")" -- "$cur")
			   $(compgen -f -X '!*.json' -- "$cur"))
		return ;;
	-f | --format)
		COMPREPLY=($(compgen -W "$(_wallspy_values "$prog" --format)" -- "$cur"))
		return ;;
	--group-by)
		COMPREPLY=($(compgen -W "$(_wallspy_values "$prog" --group-by)" -- "$cur"))
		return ;;
	-o | --output)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-p | --pid)
		COMPREPLY=($(compgen -W "$(ls /proc | grep -x '[0-9]*')" -- "$cur"))
		return ;;
	-r | --rate | -d | --duration | --max-pause | --max-cpu | --max-stack)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_wallspy_options "$prog")" -- "$cur"))
	elif [[ $cmd == attach || $cmd == dump ]]; then
		COMPREPLY=($(compgen -W "$(ls /proc | grep -x '[0-9]*')" -- "$cur"))
	fi
}
complete -F _wallspy wallspy

#!/bin/sh
# Turns a wallspy runtime descriptor (JSON) into a C header that puts it in
# a non-allocated ELF section .wallspy.descriptor (see wallspy-descriptor(5)),
# so `wallspy --runtime auto` finds it in any program linked with the
# runtime. Generated rather than .incbin'ed so the compiler's dependency
# tracking rebuilds the runtime when the descriptor changes.
# usage: embed-descriptor.sh INPUT.json OUTPUT.h
set -eu
in=$1
out=$2
{
	echo "/* generated from $(basename "$in") by tools/embed-descriptor.sh */"
	printf '%s\n' '__asm__(".pushsection .wallspy.descriptor,\"\",@progbits\n"'
	# Each JSON line becomes one .ascii directive; quotes and backslashes
	# are escaped for the assembler, then again for the C string.
	sed -e 's/\\/\\\\\\\\/g' -e 's/"/\\\\\\"/g' \
	    -e 's/^/\t".ascii \\"/' -e 's/$/\\\\n\\"\\n"/' "$in"
	printf '%s\n' '	".popsection\n");'
} > "$out"

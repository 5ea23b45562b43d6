#!/bin/bash
# without_dev.sh LIST CMD [ARGS...] - runs CMD in a mount namespace of its
# own (unshare -m, root) where every file named in LIST (one path a line)
# is an empty file and /usr/include an empty directory: the machine as
# one without the build's -dev packages and without the libraries LIST
# names (tests/e2e/install.bats: the wheel's programs must find theirs in
# the wheel). Nothing changes outside the namespace; it ends with CMD.
set -eu
list=$1
shift
exec unshare -m --propagation private bash -c '
	set -eu
	empty=$(mktemp -d)
	while read -r f; do
		[[ -n $f ]] || continue
		mount --bind /dev/null "$f"
	done <"$1"
	mount --bind "$empty" /usr/include
	shift
	exec "$@"
' without_dev "$list" "$@"

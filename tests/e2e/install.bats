#!/usr/bin/env bats
# install.bats - pyprof installed the ways users install it (issue 31):
#
#   the wheel (tools/wheel, make wheel) installed into fresh virtual
#   environments of 3.8, 3.11, 3.14 and 3.15 (those of PYPROF_TEST_PYTHONS;
#   with pip --no-index where the venv has pip; Debian sid's 3.14 and 3.15
#   have no ensurepip, so there another Python's pip installs it with
#   --target, as docs/install.md says, PYTHONPATH names that directory and
#   the commands are `python -m pyprof`), then run in a mount namespace where the system's
#   copies of every library the wheel bundles are empty files and
#   /usr/include is empty (tests/lib/without_dev.sh): ldd finds every
#   library in the wheel or the base system, and a program using
#   pyprof.labels is profiled; go tool pprof -tags shows its labels.
#
# Root (unshare -m): the tests run as root; skipped, saying so, otherwise.
# About 8 s per interpreter.

load ../lib/common

setup_file() {
	# One wheel for the file, built from this build.
	export WHL_DIR=$BATS_FILE_TMPDIR/dist
	"$PP_ROOT/tools/wheel" "$PP_BUILD" "$WHL_DIR" >"$BATS_FILE_TMPDIR/wheel.log" 2>&1 ||
		{ cat "$BATS_FILE_TMPDIR/wheel.log" >&2; return 1; }
}

setup() {
	common_setup
	WHL=$(ls "$WHL_DIR"/pyprof-*.whl)
	# the four the issue names, among those selected (else the first
	# selected, if it has venv: 2.7 has not)
	local n e
	WHEEL_PYTHONS=
	for n in $(pythons_of 3.8 3.11 3.14 3.15); do
		e=$(PYPROF_TEST_PYTHONS=$n pyprof_pythons | awk '{ print $2 }')
		if [[ -x $e ]] && "$e" -c 'import venv' 2>/dev/null; then
			WHEEL_PYTHONS+="$n "
		fi
	done
}

teardown() {
	common_teardown
}

need_root() {
	[[ $(id -u) == 0 ]] || skip "needs root for unshare -m (the tests run as root)"
}

# hide_list EXE PKG: the system's copies of the libraries PKG/libs bundles,
# real paths, one a line, less those EXE itself loads (its libpython's, or
# its _ctypes' libffi and zlib's libz): those it needs anyway.
hide_list() {
	local exe=$1 pkg=$2 so mods own
	mods=$("$exe" -c 'import _ctypes, zlib
for m in (_ctypes, zlib):
    print(getattr(m, "__file__", ""))' 2>/dev/null || true)
	own=$({ ldd "$exe"; for so in $mods; do ldd "$so"; done; } 2>/dev/null |
		awk '/=>/ { print $1 }' | sort -u)
	for so in $(ls "$pkg/libs"); do
		grep -qx "$so" <<<"$own" && continue
		ldconfig -p | awk -v s="$so" '$1 == s { print $NF }' | xargs -r -n1 readlink -f
	done | sort -u
}

@test "the wheel: pyprof installed in a fresh venv profiles pyprof.labels with the -dev packages and the system's copies hidden" {
	need_root
	"$PP_HOST_PYTHON" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$WHL" >"$T/listing"
	for f in pyprof.py pyprof_bin/bin/pyprof pyprof_bin/bin/pyprof-collector \
		pyprof_bin/lib/libpyprof.so pyprof_bin/libs/libprotobuf-c.so.1 \
		data/share/man/man1/pyprof.1 data/share/man/man7/libpyprof.7 \
		dist-info/entry_points.txt dist-info/RECORD; do
		grep -q "$f\$" "$T/listing" || fail "the wheel has no $f"
	done
	[[ $(basename "$WHL") =~ ^pyprof-[0-9.]+-py2\.py3-none-manylinux_2_[0-9]+_x86_64\.whl$ ]] ||
		fail "tag: $(basename "$WHL")"
	check() {
		local name=$1 exe=$2 venv=$T/venv-$1 site pkg cmd
		if "$exe" -c 'import ensurepip' 2>/dev/null; then
			"$exe" -m venv "$venv"
			"$venv/bin/pip" install -q --no-index --disable-pip-version-check "$WHL"
			cmd=("$venv/bin/pyprof")
			# the manual pages where man finds them from PATH
			PATH=$venv/bin:/usr/bin:/bin MANPATH= man -w pyprof-collector |
				grep -qx "$venv/share/man/man1/pyprof-collector.1" ||
				fail "man -w does not find the wheel's page"
			"$venv/bin/pyprof-collector" -V | grep -q '^pyprof-collector ' ||
				fail "no pyprof-collector command"
		else
			# what docs/install.md tells a user of such a Python: another
			# Python's pip, --target a directory, PYTHONPATH to it
			echo "   (no ensurepip: the wheel installed by another Python's pip --target, PYTHONPATH, python -m pyprof)"
			"$exe" -m venv --without-pip "$venv"
			"$PP_HOST_PYTHON" -m pip install -q --no-index --disable-pip-version-check \
				--target "$venv/pyprof-target" "$WHL" ||
				fail "pip install --target failed"
			local -x PYTHONPATH=$venv/pyprof-target
			cmd=("$venv/bin/python" -m pyprof)
		fi
		pkg=$("$venv/bin/python" -c 'import os, pyprof; print(os.path.join(os.path.dirname(pyprof.__file__), "pyprof_bin"))')
		[[ $pkg == "$venv"/* ]] || fail "import pyprof found $pkg, not the venv's"
		hide_list "$exe" "$pkg" >"$T/hide-$name"
		grep -q 'libprotobuf-c\.so' "$T/hide-$name" && grep -q 'libcurl\.so' "$T/hide-$name" ||
			fail "nothing to hide? $(cat "$T/hide-$name")"
		echo "   hidden: $(xargs -n1 basename <"$T/hide-$name" | tr '\n' ' ')"
		cat >"$T/inside-$name.sh" <<-EOF
			set -e
			# every library from the wheel or the base system, none missing
			for p in "$pkg/bin/pyprof" "$pkg/bin/pyprof-collector"; do
				ldd "\$p" >"$T/ldd-$name" 2>&1
				! grep -E 'not found|too short|=> /(usr/)?lib' "$T/ldd-$name" |
					grep -vE '/lib(64)?/(x86_64-linux-gnu/)?(libc|libm|libdl|librt|libpthread|libresolv|ld-linux-x86-64)\.so'
				"\$p" -V
			done
			$(printf '%q ' "${cmd[@]}") lib-path >"$T/libpath-$name"
			$(printf '%q ' "${cmd[@]}") record -o "$T/$name.pb.gz" -- \
				"$venv/bin/python" "$PP_TARGETS/labels_shares.py" cpu 0.6 >"$T/shares-$name"
		EOF
		"$PP_ROOT/tests/lib/without_dev.sh" "$T/hide-$name" bash "$T/inside-$name.sh" ||
			fail "inside the namespace: $(cat "$T/ldd-$name" 2>/dev/null)"
		assert_eq "$pkg/lib/libpyprof.so" "$(cat "$T/libpath-$name")" "lib-path"
		go tool pprof -tags "$T/$name.pb.gz" 2>/dev/null | tee "$T/tags-$name"
		# /a and /b as the program measured them (labels.bats checks the
		# shares closely; here: they arrive through the wheel's module)
		"$PP_HOST_PYTHON" - "$T/shares-$name" "$T/tags-$name" <<-'EOF'
			import json, re, sys
			measured = json.loads(open(sys.argv[1]).readline())["seconds"]
			tags, on = {}, False
			for line in open(sys.argv[2]):
			    if re.match(r"\s*endpoint: Total", line):
			        on = True
			        continue
			    if on and not line.strip():
			        break
			    m = re.match(r"\s*([\d.]+)(ms|s) \(.*\): (\S+)", line)
			    if on and m:
			        tags[m.group(3)] = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
			for v in ("/a", "/b"):
			    got, want = tags.get(v, 0), measured[v]
			    print("endpoint=%s: %.3f s in the profile, %.3f s measured" % (v, got, want))
			    if abs(got - want) > 0.3 * want + 0.05:
			        sys.exit("endpoint=%s: %.3f s, measured %.3f s" % (v, got, want))
		EOF
	}
	[[ -n $WHEEL_PYTHONS ]] || skip "no interpreter with venv selected (PYPROF_TEST_PYTHONS)"
	PYPROF_TEST_PYTHONS=$WHEEL_PYTHONS for_each_python check
}

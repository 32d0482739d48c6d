#!/usr/bin/env bash
# Ensures Debian 13's libfabric-dev 2.1 (headers and man pages) is unpacked
# outside the checkout and prints the directory (its usr/include is the
# second header set the oracle compares against). The package comes from
# Debian's archive through a private apt directory with a trixie source list;
# the machine's own apt sources and state are left alone.
set -eu
cache=${OXI_CACHE:-/var/cache/oxifabric}
dir=$cache/libfabric-dev-2.1
mirror=${OXI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$cache"
exec 9>"$dir.lock"
flock 9
if [ ! -e "$dir/.complete" ]; then
	apt=$cache/apt-trixie
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/etc/preferences.d" "$apt/etc/apt.conf.d" "$apt/dl"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$apt/etc/sources.list"
	: >"$apt/status"
	opts=(-o Dir::Etc::sourcelist="$apt/etc/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::Etc::preferencesparts="$apt/etc/preferences.d" -o Dir::Etc::parts="$apt/etc/apt.conf.d" \
		-o Dir::State::Lists="$apt/lists" -o Dir::State::status="$apt/status" \
		-o Dir::Cache="$apt/cache" -o APT::Architecture=amd64 -o Debug::NoLocking=1)
	apt-get -qq "${opts[@]}" update >/dev/null
	rm -f "$apt/dl"/*.deb
	(cd "$apt/dl" && apt-get -qq "${opts[@]}" download libfabric-dev >/dev/null)
	deb=$(ls "$apt/dl"/libfabric-dev_2.1*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || { echo "libfabric-dev 2.1 not found for trixie: $(ls "$apt/dl")" >&2; exit 1; }
	rm -rf "$dir"
	dpkg -x "$deb" "$dir"
	touch "$dir/.complete"
fi
echo "$dir"

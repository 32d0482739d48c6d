# Sourced by the scripts that fetch from Debian 13 (trixie). Prints the
# Debian archive this machine's apt already uses: OXI_DEBIAN_MIRROR if set,
# else the first non-security Debian archive URI in the machine's apt
# sources (deb822 *.sources or one-line *.list), so no archive address is
# written into this repository.
debian_mirror() {
	if [ -n "${OXI_DEBIAN_MIRROR:-}" ]; then
		echo "$OXI_DEBIAN_MIRROR"
		return
	fi
	local u
	u=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		tr ' ' '\n' | grep -v -e security -e '^$' | grep -m1 /debian)
	[ -n "$u" ] || u=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; break } }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | grep -m1 /debian)
	[ -n "$u" ] || { echo "no Debian archive in this machine's apt sources; set OXI_DEBIAN_MIRROR" >&2; return 1; }
	echo "$u"
}

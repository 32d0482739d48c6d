#!/usr/bin/env bash
# The verbs provider on a host without rdma-core: in a private mount
# namespace, libibverbs.so.1 and librdmacm.so.1 (each in turn, then both)
# are replaced by an empty file, and Debian's fi_info, run against our
# library, must still name `verbs` in `fi_info -l`, list no verbs entries
# (`fi_info -p verbs` fails with -FI_ENODATA, -61), and list exactly what
# it lists with the libraries present for everything else (on a host
# without RDMA devices that is the whole listing).
# Needs root (unshare --mount); prints "verbs-no-rdma-core: N passed, N
# failed", exit status non-zero on a failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/build/lib
[ -e "$lib/libfabric.so.1" ] || { echo "verbs-no-rdma-core: build/lib/libfabric.so.1 missing (run make)"; exit 1; }
ibv=$(readlink -f "$(ldconfig -p | awk '/libibverbs.so.1 / { print $NF; exit }')")
cm=$(readlink -f "$(ldconfig -p | awk '/librdmacm.so.1 / { print $NF; exit }')")
passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# The reference: the full listing with rdma-core present.
want=$(LD_LIBRARY_PATH=$lib fi_info 2>&1)

for hide in "$ibv" "$cm" "$ibv $cm"; do
	[ -n "${hide// /}" ] || { fail hide "rdma-core's libraries not found by ldconfig"; continue; }
	name=$(basename "${hide%% *}")${hide//[^ ]/}
	name=${name// /+both}
	d=$(mktemp -d)
	unshare --mount bash -c '
		empty=$(mktemp)
		for f in '"$hide"'; do mount --bind "$empty" "$f" || exit 1; done
		export LD_LIBRARY_PATH='"$lib"'
		fi_info -l >'"$d"'/list 2>&1
		fi_info -p verbs >'"$d"'/verbs 2>&1
		echo "rc=$?" >>'"$d"'/verbs
		fi_info >'"$d"'/all 2>&1
		rm -f "$empty"' || fail "unshare($name)" "rc=$?"
	list=$(<"$d/list") verbs=$(<"$d/verbs") all=$(<"$d/all")
	rm -rf "$d"
	[[ $'\n'$list == *$'\nverbs:\n'* ]] && ok || fail "list_names_verbs($name)" "$list"
	[[ $verbs == *"rc=61"* && $verbs != *"provider: verbs"* ]] && ok || fail "no_verbs_entries($name)" "$verbs"
	[ "$all" = "$want" ] && ok || fail "others_unchanged($name)" "$(diff <(echo "$want") <(echo "$all") | head -20)"
done
echo "verbs-no-rdma-core: $passed passed, $failed failed"
[ $failed = 0 ]

#!/bin/bash
# make bench-verbs, INSIDE the soft-RoCE guest (see bench.sh): each
# benchmark on our library and on Debian's, then the ratios into
# $OXI_WORK/ratios.txt (three rounds, medians). Exit status: the number
# of runs that failed.
set -u
W=${OXI_WORK:?}
exec >"$W/bench.log" 2>&1
ip link set lo up
ip link add dummy0 type dummy 2>/dev/null
ip addr add 10.77.0.1/24 dev dummy0
ip link set dummy0 up
timeout 30 rdma link add rxe0 type rxe netdev dummy0 || exit 1
export FI_VERBS_IFACE=dummy0
failed=0
port=47800
# run NAME LIBPATH PROGRAM ARGS...: server then client; the client's
# result lines go to $W/NAME.out.
run() {
	local name=$1 libpath=$2 prog=$3 i
	shift 3
	port=$((port + 1))
	LD_LIBRARY_PATH=$libpath timeout 300 "$W/ft/$prog" -p verbs "$@" -s 10.77.0.1 -B $port >"$W/$name.server" 2>&1 &
	local server=$!
	for ((i = 0; i < 150; i++)); do
		[[ $(rdma res show cm_id 2>/dev/null) == *LISTEN*":$port"* ]] && break
		kill -0 $server 2>/dev/null || break
		sleep 0.2
	done
	local crc src
	LD_LIBRARY_PATH=$libpath timeout 300 "$W/ft/$prog" -p verbs "$@" -P $port 10.77.0.1 >"$W/$name.out" 2>&1
	crc=$?
	wait $server
	src=$?
	[ $crc = 0 ] && [ $src = 0 ] && return
	# A failed run of Debian's library (its rxm client once died of
	# SIGSEGV after fi_rdm_tagged_bw's last size) is noted, not counted:
	# its sizes missing from the output are left out of that round.
	if [ -z "$libpath" ]; then
		echo "note: $name (Debian's libfabric) failed: client rc=$crc, server rc=$src" >>"$W/notes.txt"
	else
		failed=$((failed + 1))
	fi
}
# ratio NAME ROUND: per size, "SIZE LAT-RATIO BW-RATIO LAT-OURS LAT-UP
# BW-OURS BW-UP" of one round (ours over upstream, usec/xfer and MB/sec).
ratio() {
	local name=$1 r=$2 bytes iters total time mbs usec rest
	declare -A lat bw
	while read -r bytes iters total time mbs usec rest; do
		[[ $bytes =~ ^[0-9]+$ ]] && lat[$bytes]=$usec bw[$bytes]=$mbs
	done <"$W/$name-upstream-$r.out"
	while read -r bytes iters total time mbs usec rest; do
		[[ $bytes =~ ^[0-9]+$ && -n ${lat[$bytes]:-} ]] || continue
		awk -v b="$bytes" -v lo="$usec" -v lu="${lat[$bytes]:-0}" -v bo="$mbs" -v bu="${bw[$bytes]:-0}" \
			'BEGIN { l = (lu > 0) ? lo / lu : 0; w = (bu > 0) ? bo / bu : 0;
				printf "%s %.3f %.3f %s %s %s %s\n", b, l, w, lo, lu, bo, bu }'
	done <"$W/$name-ours-$r.out"
}
# summary NAME: per size, the median over the rounds of each ratio (the
# round of the median latency ratio gives the absolute figures shown).
summary() {
	local name=$1 r b n all mid lat bw
	all=$(for r in $(seq 1 $ROUNDS); do ratio "$name" "$r"; done)
	for b in $(cut -d' ' -f1 <<<"$all" | sort -nu); do
		# The rounds that have this size on both libraries (see run).
		n=$(grep -c "^$b " <<<"$all")
		mid=$(grep "^$b " <<<"$all" | sort -g -k2,2 | sed -n "$(((n + 1) / 2))p")
		bw=$(grep "^$b " <<<"$all" | sort -g -k3,3 | sed -n "$(((n + 1) / 2))p" | cut -d' ' -f3)
		read -r _ lat _ lo lu bo bu <<<"$mid"
		printf 'bench %s %s B: latency ours/upstream %.2f (usec/xfer %s vs %s), bandwidth ours/upstream %.2f (MB/s %s vs %s), median of %s rounds\n' \
			"$name" "$b" "$lat" "$lo" "$lu" "$bw" "$bo" "$bu" "$n"
	done
}
: >"$W/ratios.txt"
ROUNDS=3
# rounds FUNCTION: FUNCTION LIB LIBPATH ROUND for each round and library
# (ours, upstream: Debian's, LIBPATH empty). Rounds alternate which
# library goes first, so drift in the host's load does not favour one.
rounds() {
	local r lib order
	for r in $(seq 1 $ROUNDS); do
		order="ours upstream"
		[ $((r % 2)) = 0 ] && order="upstream ours"
		for lib in $order; do
			if [ $lib = upstream ]; then "$1" $lib "" "$r"; else "$1" $lib "$W/lib" "$r"; fi
		done
	done
}
# pingpong NAME LIB LIBPATH ROUND PROGRAM ARGS...: a latency program in
# two runs, 8 and 64 B over 10000 iterations and 4 KiB to 1 MiB over 200,
# into one result file $W/NAME-LIB-ROUND.out. With 200 iterations at every
# size, an 8 B run lasted about 3 ms and the guest's scheduling decided
# its figure: one build measured 0.85x, 0.87x and 1.19x in three boots.
pingpong() {
	local name=$1 lib=$2 libpath=$3 r=$4 prog=$5
	shift 5
	run "$name-small-$lib-$r" "$libpath" "$prog" "$@" -S 8,64 -I 10000
	run "$name-large-$lib-$r" "$libpath" "$prog" "$@" -S 4k,64k,1m -I 200
	cat "$W/$name-small-$lib-$r.out" "$W/$name-large-$lib-$r.out" >"$W/$name-$lib-$r.out"
}
msg_runs() { # LIB LIBPATH ROUND
	pingpong msg_pingpong "$1" "$2" "$3" fi_msg_pingpong -e msg
	run "rma_bw_write-$1-$3" "$2" fi_rma_bw -e msg -o write -S 8,64k,1m -I 100
}
rounds msg_runs
summary msg_pingpong >>"$W/ratios.txt"
summary rma_bw_write >>"$W/ratios.txt"

# RDM (verbs;ofi_rxm), issue 24: tagged latency and bandwidth, RMA write
# bandwidth. Upstream's ofi_rxm needs FI_UNIVERSE_SIZE=16 on rxe
# (guest.sh says why); ours runs with it too.
rdm_runs() { # LIB LIBPATH ROUND
	local -x FI_UNIVERSE_SIZE=16
	pingpong rdm_tagged_pingpong "$1" "$2" "$3" fi_rdm_tagged_pingpong -e rdm
	run "rdm_tagged_bw-$1-$3" "$2" fi_rdm_tagged_bw -e rdm -S 8,1m -I 2000
	run "rdm_rma_bw_write-$1-$3" "$2" fi_rma_bw -e rdm -o write -S 8,64k,1m -I 100
}
rounds rdm_runs
summary rdm_tagged_pingpong >"$W/rdm-ratios.txt"
summary rdm_tagged_bw >>"$W/rdm-ratios.txt"
summary rdm_rma_bw_write >>"$W/rdm-ratios.txt"
cat "$W/rdm-ratios.txt" >>"$W/ratios.txt"
# The issue's targets, from the medians above: 8 B tagged latency at most
# 0.85x upstream's, 1 MiB tagged bandwidth at least 1.1x, 8 B message rate
# (tagged_bw at 8 B: messages per second are bandwidth over size) at least
# 1.3x.
target() { # NAME SIZE FIELD(latency|bandwidth) OP(le|ge) BOUND
	local line v
	line=$(grep -m1 "^bench $1 $2 B:" "$W/rdm-ratios.txt")
	v=${line#*"$3 ours/upstream "}
	v=${v%% *}
	if [ -n "$line" ] && awk -v v="$v" -v b="$5" -v op="$4" 'BEGIN { exit !(op == "le" ? v <= b : v >= b) }'; then
		echo "target $1 $2 B $3 ours/upstream $v ($4 $5): met"
	else
		echo "target $1 $2 B $3 ours/upstream ${v:-none} ($4 $5): missed"
	fi
}
{
	target rdm_tagged_pingpong 8 latency le 0.85
	target rdm_tagged_bw 1048576 bandwidth ge 1.1
	target rdm_tagged_bw 8 bandwidth ge 1.3
} >>"$W/ratios.txt"
cat "$W/notes.txt" >>"$W/ratios.txt" 2>/dev/null
exit $failed

#!/bin/bash
# make bench-verbs, INSIDE the soft-RoCE guest (see bench.sh): each
# benchmark on our library and on Debian's, then the ratios into
# $OXI_WORK/ratios.txt. Exit status: the number of runs that failed.
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
	LD_LIBRARY_PATH=$libpath timeout 300 "$W/ft/$prog" -p verbs "$@" -P $port 10.77.0.1 >"$W/$name.out" 2>&1 ||
		failed=$((failed + 1))
	wait $server || failed=$((failed + 1))
}
# ratio NAME: per size, ours over upstream for usec/xfer and MB/sec.
ratio() {
	local name=$1 bytes iters total time mbs usec rest
	declare -A lat bw
	while read -r bytes iters total time mbs usec rest; do
		[[ $bytes =~ ^[0-9]+$ ]] && lat[$bytes]=$usec bw[$bytes]=$mbs
	done <"$W/$name-upstream.out"
	while read -r bytes iters total time mbs usec rest; do
		[[ $bytes =~ ^[0-9]+$ ]] || continue
		awk -v n="$name" -v b="$bytes" -v lo="$usec" -v lu="${lat[$bytes]:-0}" -v bo="$mbs" -v bu="${bw[$bytes]:-0}" \
			'BEGIN { l = (lu > 0) ? lo / lu : 0; w = (bu > 0) ? bo / bu : 0;
				printf "bench %s %s B: latency ours/upstream %.2f (usec/xfer %s vs %s), bandwidth ours/upstream %.2f (MB/s %s vs %s)\n", n, b, l, lo, lu, w, bo, bu }'
	done <"$W/$name-ours.out"
}
: >"$W/ratios.txt"
for lib in ours upstream; do
	libpath=$W/lib
	[ $lib = upstream ] && libpath=
	run msg_pingpong-$lib "$libpath" fi_msg_pingpong -e msg -S 8,64,4k,64k,1m -I 200
	run rma_bw_write-$lib "$libpath" fi_rma_bw -e msg -o write -S 8,64k,1m -I 100
done
ratio msg_pingpong >>"$W/ratios.txt"
ratio rma_bw_write >>"$W/ratios.txt"
exit $failed

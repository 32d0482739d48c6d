#!/usr/bin/env python3
"""free-ports.py [N]: prints a port P such that P .. P+N-1 (default 16) are
all free on 127.0.0.1 for TCP and UDP right now. The ports come from
20000-32000, below Linux's ephemeral range, so connections other tests
open meanwhile do not take them: a server on -B P can put what it needs
next to P (a scalable endpoint's contexts, multinode.sh's ranks)."""
import random
import socket
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
for _ in range(500):
    base = random.randint(20000, 32000 - n)
    held = []
    try:
        for p in range(base, base + n):
            for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
                s = socket.socket(socket.AF_INET, kind)
                held.append(s)
                s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        for s in held:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("free-ports.py: no run of %d free ports" % n)

"""A Ray cluster on loopback for `runbook bench run --ray` on one machine: a head and worker nodes, each node its
own raylet with its own worker processes, every port bound to 127.0.0.1. Runs until stopped (Ctrl-C or SIGTERM).

    python3 benchmarks/ray_cluster.py --workers 1 --cpus 1 --sandbox-slots 1 &
    # it prints the address and each worker node's raylet pid, then:
    runbook bench run eval/dev.toml --ray 127.0.0.1:PORT
    kill -9 RAYLET_PID      # lose a worker node mid-run: its questions are retried on the others

Why not `ray start`: Ray's command line turns 127.0.0.1 into the machine's routable address (and a head started
with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which keeps it on loopback, refuses worker nodes). Ray's own
`ray.cluster_utils.Cluster` starts nodes on an address it is given. A driver needs the same variable set to 0, or
Ray resolves 127.0.0.1 to the routable address too (`--ray 127.0.0.1:PORT` sets it). Worker processes inherit this
process's environment: run it with the runbook the nodes should import (PYTHONPATH) and DOCKER_HOST for method C.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading

LOOPBACK = "127.0.0.1"


def node_args(cpus: int, sandbox_slots: int) -> dict:
    """One node on loopback offering `cpus` CPUs and `sandbox_slots` sandboxes at once (a small object store)."""
    slots = {"resources": {"sandbox": sandbox_slots}} if sandbox_slots else {}
    return {"node_ip_address": LOOPBACK, "num_cpus": cpus, "object_store_memory": 80 * 1024 * 1024, **slots}


def start(workers: int, cpus: int, sandbox_slots: int, temp_dir: str, *, head_sandbox_slots: int | None = None):
    """A head and `workers` worker nodes on loopback; returns the Cluster and its worker nodes."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when ray is imported: keep every node on loopback
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray.cluster_utils import Cluster

    head = node_args(cpus, sandbox_slots if head_sandbox_slots is None else head_sandbox_slots)
    cluster = Cluster(initialize_head=True, head_node_args={**head, "include_dashboard": False, "temp_dir": temp_dir})
    return cluster, [cluster.add_node(**node_args(cpus, sandbox_slots)) for _ in range(workers)]


def raylet_pid(node) -> int:
    """The pid of a node's raylet: killing it loses the node and every worker process on it."""
    return node.all_processes["raylet"][0].process.pid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1, help="worker nodes besides the head (default 1)")
    parser.add_argument("--cpus", type=int, default=1, help="CPUs each node offers (default 1)")
    parser.add_argument("--sandbox-slots", type=int, default=1, help="sandboxes each node may run at once")
    args = parser.parse_args()
    temp_dir = tempfile.mkdtemp(prefix="rbray-", dir="/tmp")  # short: Ray's socket paths live under it
    cluster, nodes = start(args.workers, args.cpus, args.sandbox_slots, temp_dir)
    print(json.dumps({"address": cluster.address, "worker_raylets": [raylet_pid(n) for n in nodes]}), flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    cluster.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()

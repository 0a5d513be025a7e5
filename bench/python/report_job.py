"""The report benchmark's training script: one rank (TorchTrainer, 1 worker) that times train.report() of ten
metrics on its node's real agent, in rounds, interleaved in each round with two baselines from the same rank:
the same report as a ready payload on the bare socket (clusterd._agent_wire.send_report: connect, frame, the
agent's checks, its answer), ctrain's C++ report() (report_rank, a child of the rank: same socket, same
agent), and the same ready payload to socket_floor, a server that answers without doing anything (the
machine's floor for a round trip), and to socket_floor --handoffs (the agent's hand-offs between threads,
and still no work).

  report_job.py OUT ROUNDS N REPORT_RANK_BIN FLOOR_SOCKET HANDOFFS_SOCKET RESULTS
writes OUT/report.json: ns per kind
"""

import json
import os
import sys
import time


def metrics(i):
    return {"loss": 0.25 + i * 1e-6, "accuracy": 0.9, "lr": 1e-3, "epoch": i, "step": i * 100, "grad_norm": 1.5,
            "throughput": 1234.5, "val_loss": 0.3, "val_accuracy": 0.88, "time_this_iter_s": 0.01}


def train_func(config):
    import subprocess
    from clusterd import _agent_wire, train
    out, rounds, n = config["out_dir"], config["rounds"], config["n"]
    clock = time.perf_counter_ns
    lat = {"python": [], "wire": [], "cpp": [], "floor": [], "handoffs": []}
    socket_path = os.environ["CLUSTER_AGENT_SOCKET"]
    payload = _agent_wire.encode_report(os.environ["CLUSTER_JOB_ID"], int(os.environ.get("CLUSTER_ATTEMPT", "0")), 0,
                                        metrics(0), "", int(time.time() * 1000))
    for _ in range(rounds):
        for i in range(n):
            m = metrics(i)
            t0 = clock()
            train.report(m)
            lat["python"].append(clock() - t0)
        for i in range(n):
            t0 = clock()
            _agent_wire.send_report(socket_path, payload)
            lat["wire"].append(clock() - t0)
        for kind in ("floor", "handoffs"):
            for i in range(n):
                t0 = clock()
                _agent_wire.send_report(config[f"{kind}_socket"], payload)
                lat[kind].append(clock() - t0)
        path = os.path.join(out, "cpp.txt")
        subprocess.run([config["report_rank"], str(n), path], check=True)
        with open(path) as f:
            lat["cpp"] += [int(line) for line in f if line.strip()]
    with open(os.path.join(out, "report.json.tmp"), "w") as f:
        json.dump(lat, f)
    os.rename(os.path.join(out, "report.json.tmp"), os.path.join(out, "report.json"))


def main():
    import clusterd
    from clusterd.train import RunConfig, ScalingConfig
    from clusterd.train.torch import TorchTrainer
    out, rounds, n, binary, floor, handoffs, results = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:8]
    clusterd.init()
    TorchTrainer(train_func, train_loop_config={"out_dir": out, "rounds": rounds, "n": n, "report_rank": binary,
                                                    "floor_socket": floor, "handoffs_socket": handoffs},
                 scaling_config=ScalingConfig(num_workers=1),
                 run_config=RunConfig(name="report-latency", storage_path=results, verbose=0)).fit()


if __name__ == "__main__":
    main()

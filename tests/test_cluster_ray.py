"""A real two-node Ray cluster on this machine: a run through ``RAY_ADDRESS`` survives losing a node.

``ray start`` starts a head node and a second (worker) node, each a process group of its own; the
worker node listens on another loopback address (127.0.0.2), so the run's driver, which connects to
the node on its own address, attaches to the head. ``reasonscope run --executor ray`` (a subprocess,
``RAY_ADDRESS`` set) asks a fake OpenAI-compatible server for the answers and scores them with the
tiny NLI model on two Ray actors, spread one per node. As soon as the actor on the worker node is
alive (loading its model or scoring), the test kills the whole worker node (SIGKILL to its process
group). Ray restarts the actor on the head and re-sends its chunk; the run finishes with the local
executor's metrics and the server saw exactly as many requests as the local run sent: none twice.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.skipif(__import__("importlib").util.find_spec("ray") is None,
                                                   reason="ray not installed (pip install 'reasonscope[ray]')")]

RAY = str(Path(sys.executable).parent / "ray")
# Every process of the test cluster (nodes, drivers): node deaths seen within ~2 s, and token authentication
# off alike everywhere (a head started while ~/.ray/auth_token exists turns it on, its workers then do not).
RAY_ENV = {"RAY_health_check_period_ms": "500", "RAY_health_check_failure_threshold": "3",
           "RAY_health_check_initial_delay_ms": "500", "RAY_AUTH_MODE": "disabled"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(args: list[str], log: Path) -> subprocess.Popen:
    """``ray start ... --block`` in a process group of its own (killing the group kills the node)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | RAY_ENV
    return subprocess.Popen([RAY, "start", "--block", "--disable-usage-stats", *args], stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)


def started(proc: subprocess.Popen, log: Path) -> bool:
    """Whether ``ray start --block`` says its node is up (its log's last line before blocking)."""
    assert proc.poll() is None, log.read_text()[-2000:]
    return "will now block forever" in log.read_text()


def stop_node(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def plan(base_url: str, out: Path, tiny_nli: Path) -> dict:
    return {"experiment": {"name": "cluster", "seed": 3, "output_dir": str(out)},
            "models": [{"spec": "openai-compatible/fake", "base_url": base_url, "concurrency": 4}],
            "datasets": [{"name": "syn", "format": "synthetic", "size": 4}],
            "families": {"behavior": {"samples": 2, "paraphrases": 2,
                                      "nli": {"backend": "hf", "model": str(tiny_nli)},
                                      "similarity": {"method": "embedding"}}},
            "stats": {"n_resamples": 200}}


def run_cli(plan_data: dict, folder: Path, env: dict, executor: str) -> subprocess.Popen:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_data))
    return subprocess.Popen([sys.executable, "-m", "reasonscope.cli", "run", str(path), "--executor", executor],
                            stdout=(folder / "run.log").open("w"), stderr=subprocess.STDOUT, env=env)


def wait_for(condition, timeout: float, what: str, poll: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def test_a_run_on_a_two_node_cluster_survives_its_worker_node_being_killed(tmp_path, tiny_nli, monkeypatch):
    from reasonscope.testing import FakeOpenAIServer

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for key, value in RAY_ENV.items():
        monkeypatch.setenv(key, value)  # this process connects to the cluster too (to watch it)
    env = dict(os.environ)
    with FakeOpenAIServer(latency_s=0.01) as srv:  # the local executor's run: the reference
        proc = run_cli(plan(srv.base_url, tmp_path / "local", tiny_nli), tmp_path / "local", env, "local")
        assert proc.wait(900) == 0, (tmp_path / "local" / "run.log").read_text()[-3000:]
        local_requests = srv.count
    local = json.loads((tmp_path / "local" / "cluster" / "summary.json").read_text())["behavior"]

    import ray
    from ray._private import state

    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="rs-ray-", dir="/tmp"))  # short: Ray's socket paths have a length limit
    timings = {}
    t0 = time.monotonic()
    ip = ray.util.get_node_ip_address()  # the address a driver on this machine finds its node by
    head = start_node(["--head", f"--port={port}", f"--node-ip-address={ip}", "--num-cpus=2", f"--temp-dir={temp}",
                       "--include-dashboard=false"], tmp_path / "head.log")
    worker = None
    try:
        address = f"{ip}:{port}"
        wait_for(lambda: started(head, tmp_path / "head.log"), 600, "the head node", poll=1)
        worker = start_node([f"--address={address}", "--num-cpus=2"],
                            tmp_path / "worker.log")
        wait_for(lambda: started(worker, tmp_path / "worker.log"), 600, "the worker node", poll=1)
        ray.init(address=address, log_to_driver=False)
        head_id = next(n["NodeID"] for n in ray.nodes() if "node:__internal_head__" in n["Resources"])
        worker_id = wait_for(lambda: next((n["NodeID"] for n in ray.nodes() if n["Alive"] and n["NodeID"] != head_id),
                                          None), 300, "the worker node to join")
        timings["cluster start"] = time.monotonic() - t0

        def scorer_actors():
            return [a for a in state.actors().values() if a["ActorClassName"].endswith("_ScorerActor")]

        t1 = time.monotonic()
        with FakeOpenAIServer(latency_s=0.01) as srv:
            proc = run_cli(plan(srv.base_url, tmp_path / "ray", tiny_nli), tmp_path / "ray", env | {"RAY_ADDRESS": address},
                           "ray")
            try:
                on_worker = wait_for(lambda: [a for a in scorer_actors() if a["State"] == "ALIVE"
                                              and a["Address"]["NodeID"] == worker_id], 600, "an actor on the worker node")
            except AssertionError as exc:
                seen = [(a["State"], a["Address"]["NodeID"] == worker_id) for a in scorer_actors()]
                raise AssertionError(f"{exc}; scorer actors (state, on the worker): {seen}; run exit {proc.poll()}; "
                                     f"run log: {(tmp_path / 'ray' / 'run.log').read_text()[-2000:]}; worker log: "
                                     f"{(tmp_path / 'worker.log').read_text()[-1000:]}") from None
            os.killpg(worker.pid, signal.SIGKILL)  # the whole worker node: raylet, its workers, the actor
            killed_after = time.monotonic() - t1
            assert proc.wait(900) == 0, (tmp_path / "ray" / "run.log").read_text()[-3000:]
            timings["run"] = time.monotonic() - t1
            ray_requests = srv.count
        dead = [n for n in ray.nodes() if n["NodeID"] == worker_id]
        restarted = [a for a in scorer_actors() if a["ActorID"] == on_worker[0]["ActorID"]]
    finally:
        ray.shutdown()
        if worker is not None:
            stop_node(worker)
        stop_node(head)
    print(f"cluster start {timings['cluster start']:.1f} s, run {timings['run']:.1f} s "
          f"(worker node killed {killed_after:.1f} s in)")
    assert dead and not dead[0]["Alive"]  # the node really died
    assert restarted[0]["NumRestarts"] >= 1 and restarted[0]["Address"]["NodeID"] == head_id  # moved to the head
    remote = json.loads((tmp_path / "ray" / "cluster" / "summary.json").read_text())["behavior"]
    assert remote["backends"]["executor"] == "ray"
    assert remote["backends"]["score_cache"]["nli"]["computed"] > 0  # scored by the actors
    assert ray_requests == local_requests > 0  # every request sent once, as by the local run
    for metric in ("LS", "SS", "CQ"):
        assert remote["metrics"]["openai-compatible/fake"][metric]["value"] == pytest.approx(
            local["metrics"]["openai-compatible/fake"][metric]["value"], abs=1e-5)

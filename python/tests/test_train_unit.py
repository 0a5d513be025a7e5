"""clusterd.train without a cluster: the wire format, checkpoints kept locally, metrics, the worker's config."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import tempfile
import threading

import pytest

from clusterd import _agent_wire, _worker
from clusterd.train import Checkpoint, get_context
from clusterd.train import _session
from clusterd.train._result import iteration_rows


def test_a_report_is_the_protobuf_json_ctrain_sends():
    payload = _agent_wire.encode_report("job-1", 2, 0, {"loss": 0.25, "bad": float("nan"), "up": float("inf")},
                                        "/ck/checkpoint_000001", 1700000000123)
    message = json.loads(payload)
    assert message == {"job_id": "job-1", "attempt": 2, "rank": 0,
                       "values": {"loss": 0.25, "bad": "NaN", "up": "Infinity"},
                       "checkpoint": "/ck/checkpoint_000001", "unix_ms": "1700000000123"}
    assert _agent_wire.frame(b"abc") == b"\x00\x00\x00\x03abc"


def test_replies_are_read_as_the_agent_writes_them():
    _agent_wire.parse_reply(b'{"ok":true}')
    with pytest.raises(_agent_wire.AgentRefused, match="metric name"):
        _agent_wire.parse_reply(b'{"ok":false,"error":"metric name \\"\\" is empty"}')
    with pytest.raises(_agent_wire.AgentRefused, match="malformed agent reply"):
        _agent_wire.parse_reply(b"not json")


class _OneShotAgent:
    """Answers one report with the given reply and keeps what it was sent (the framing, not the agent's checks)."""

    def __init__(self, reply: bytes):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "agent.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(1)
        self.received = b""
        self.thread = threading.Thread(target=self._serve, args=(reply,), daemon=True)
        self.thread.start()

    def _serve(self, reply: bytes) -> None:
        conn, _ = self.server.accept()
        with conn:
            (n,) = struct.unpack(">I", conn.recv(4, socket.MSG_WAITALL))
            self.received = conn.recv(n, socket.MSG_WAITALL)
            conn.sendall(struct.pack(">I", len(reply)) + reply)

    def close(self) -> None:
        self.thread.join(5)
        self.server.close()
        shutil.rmtree(self.dir)


@pytest.fixture
def rank_env(monkeypatch, tmp_path):
    """A rank 0's variables, with its checkpoint folder under tmp_path."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("CLUSTER_JOB_ID", "job-0001")
    monkeypatch.setenv("CLUSTER_ATTEMPT", "1")
    monkeypatch.setenv("CLUSTER_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("CLUSTER_CHECKPOINT_KEEP", "2")
    monkeypatch.setattr(_session, "_session", _session._Session())
    return tmp_path


def test_a_refused_report_raises_with_the_agents_reason(rank_env, monkeypatch):
    agent = _OneShotAgent(b'{"ok":false,"error":"metric name \\"a//b\\" has an empty part"}')
    monkeypatch.setenv("CLUSTER_AGENT_SOCKET", agent.path)
    try:
        with pytest.raises(ValueError, match=r"the node refused the report: metric name \"a//b\" has an empty part"):
            _session.report({"a//b": 1})
        sent = json.loads(agent.received)
        assert sent["job_id"] == "job-0001" and sent["attempt"] == 1 and sent["values"] == {"a//b": 1.0}
    finally:
        agent.close()


def test_an_agent_that_is_gone_costs_a_warning_not_the_run(rank_env, monkeypatch, capsys):
    monkeypatch.setenv("CLUSTER_AGENT_SOCKET", str(rank_env / "nobody.sock"))
    _session.report({"loss": 1.0})
    _session.report({"loss": 0.5})
    err = capsys.readouterr().err
    assert err.count("report not delivered") == 1


def test_a_reported_checkpoint_is_a_copy_that_outlives_its_folder(rank_env, capsys):
    for epoch in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "model.pt"), "w") as f:
                f.write(f"weights of epoch {epoch}")
            _session.report({"epoch": epoch, "loss": 1.0 / (epoch + 1)}, checkpoint=Checkpoint.from_directory(tmp))
    folder = rank_env / "checkpoints"
    # keep 2: the newest two, numbered from 0, nothing half-written left beside them.
    assert sorted(os.listdir(folder)) == ["checkpoint_000001", "checkpoint_000002"]
    assert (folder / "checkpoint_000002" / "model.pt").read_text() == "weights of epoch 2"
    newest = _session.get_checkpoint()
    assert newest.path == str(folder / "checkpoint_000002")
    with newest.as_directory() as path:
        assert open(os.path.join(path, "model.pt")).read() == "weights of epoch 2"
    out = capsys.readouterr().out
    assert "[report] epoch=2 loss=0.333333 checkpoint=checkpoint_000002" in out


def test_a_retry_numbers_on_from_the_checkpoint_it_restored(rank_env, tmp_path):
    restored = tmp_path / "checkpoints" / "checkpoint_000007"
    restored.mkdir(parents=True)
    (restored / "state").write_text("7")
    assert _session.get_checkpoint().path == str(restored)
    source = tmp_path / "new"
    source.mkdir()
    _session.report({"x": 1}, checkpoint=Checkpoint.from_directory(source))
    assert (tmp_path / "checkpoints" / "checkpoint_000008").is_dir()


def test_other_ranks_reports_are_dropped(rank_env, monkeypatch, capsys):
    monkeypatch.setenv("RANK", "1")
    source = rank_env / "src"
    source.mkdir()
    _session.report({"loss": 1}, checkpoint=Checkpoint.from_directory(source))
    assert not (rank_env / "checkpoints").exists()
    assert capsys.readouterr().out == ""


def test_metrics_must_be_numbers_and_nested_names_join_with_a_slash(rank_env):
    import torch
    assert _session.flatten_metrics({"train": {"loss": torch.tensor(0.5)}, "ok": True, "n": 3}) == {
        "train/loss": 0.5, "ok": 1.0, "n": 3.0}
    with pytest.raises(TypeError, match="metric 'name' is a str, not a number"):
        _session.flatten_metrics({"name": "resnet"})
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        Checkpoint.from_directory(rank_env / "missing")


def test_off_a_cluster_checkpoints_go_to_a_local_folder(monkeypatch, tmp_path, capsys):
    for key in ("CLUSTER_AGENT_SOCKET", "CLUSTER_JOB_ID", "CLUSTER_CHECKPOINT_DIR", "RANK"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(_session, "_session", _session._Session())
    assert _session.get_checkpoint() is None
    source = tmp_path / "ck"
    source.mkdir()
    (source / "a").write_text("1")
    _session.report({"loss": 2.0}, checkpoint=Checkpoint.from_directory(source))
    shutil.rmtree(source)
    kept = _session.get_checkpoint()
    assert kept is not None and open(os.path.join(kept.path, "a")).read() == "1"
    assert "not on a cluster: checkpoints are kept in" in capsys.readouterr().err
    shutil.rmtree(os.path.dirname(kept.path))


def test_the_context_reads_the_torchrun_variables(monkeypatch):
    for key, value in {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                       "NODE_RANK": "1", "CLUSTER_JOB_NAME": "sweep-trial-002",
                       "CLUSTERD_EXPERIMENT_NAME": "mnist"}.items():
        monkeypatch.setenv(key, value)
    context = get_context()
    assert (context.get_world_rank(), context.get_world_size(), context.get_local_rank(),
            context.get_local_world_size(), context.get_node_rank()) == (3, 4, 1, 2, 1)
    assert context.get_trial_name() == "sweep-trial-002" and context.get_experiment_name() == "mnist"


def test_trial_parameters_land_at_their_paths_in_the_shipped_config():
    base = {"lr": 0.1, "model": {"width": 8, "depth": 2}}
    config = _worker.apply_params(base, {"lr": 0.01, "width": 64}, {"width": ["model", "width"]})
    assert config == {"lr": 0.01, "model": {"width": 64, "depth": 2}}
    assert base["model"]["width"] == 8  # the shipped one is left as it was
    assert _worker.apply_params(None, {"x": 1}, {}) == {"x": 1}
    assert _worker.call(lambda: "none", {"a": 1}) == "none"
    assert _worker.call(lambda config: config["a"], {"a": 1}) == 1


def test_a_retry_goes_on_from_the_iteration_of_the_checkpoint_it_resumed_from():
    records = [
        {"attempt": 0, "rank": 0, "index": "0", "values": {"loss": 4}, "checkpoint": "/c/checkpoint_000000"},
        {"attempt": 0, "rank": 0, "index": "1", "values": {"loss": 3}, "checkpoint": "/c/checkpoint_000001"},
        {"attempt": 0, "rank": 0, "index": "2", "values": {"loss": 2.5}},
        {"attempt": 1, "rank": 0, "index": "0", "values": {"loss": 2}, "checkpoint": "/c/checkpoint_000002"},
        {"attempt": 1, "rank": 0, "index": "1", "values": {"loss": "NaN"}},
    ]
    attempts = [{"attempt": 0}, {"attempt": 1, "restored_checkpoint": "checkpoint_000001"}]
    rows = iteration_rows(records, attempts)
    assert [(r["training_iteration"], r["loss"]) for r in rows][:3] == [(1, 4.0), (2, 3.0), (3, 2.0)]
    assert rows[3]["training_iteration"] == 4 and rows[3]["loss"] != rows[3]["loss"]  # NaN
    assert rows[2]["checkpoint_dir_name"] == "checkpoint_000002" and rows[2]["attempt"] == 1


def test_a_value_that_is_no_number_is_left_out_with_one_warning(rank_env, capsys):
    _session.report({"loss": 0.5, "phase": "warmup", "note": None})
    _session.report({"loss": 0.25, "phase": "train"})
    captured = capsys.readouterr()
    assert captured.err.count("are not numbers and are not kept") == 1
    assert "'phase', 'note'" in captured.err
    assert "[report] loss=0.25" in captured.out


def test_a_rank_gets_the_checkpoint_it_started_from_until_it_reports_its_own(rank_env, tmp_path):
    folder = tmp_path / "checkpoints"
    (folder / "checkpoint_000003").mkdir(parents=True)
    _session._session.start()  # what the worker does before the function runs
    # Rank 0 of the same node writes a newer one into the folder they share: not this rank's start.
    (folder / "checkpoint_000004").mkdir()
    assert _session.get_checkpoint().path == str(folder / "checkpoint_000003")
    source = tmp_path / "mine"
    source.mkdir()
    _session.report({"x": 1}, checkpoint=Checkpoint.from_directory(source))
    assert _session.get_checkpoint().path == str(folder / "checkpoint_000005")


def test_a_checkpoints_links_out_of_its_folder_are_copied_in_and_links_inside_stay(rank_env, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "weights.bin").write_text("w")
    source = tmp_path / "ck"
    (source / "epoch_3").mkdir(parents=True)
    (source / "epoch_3" / "model.pt").write_text("m")
    os.symlink(str(source / "epoch_3"), source / "latest_absolute")  # inside, but absolute
    os.symlink("epoch_3", source / "latest")                         # inside, relative: kept as a link
    os.symlink(str(outside / "weights.bin"), source / "weights.bin")
    os.symlink(str(outside), source / "shared")
    os.symlink(str(tmp_path / "nothing"), source / "dangling")
    _session.report({"x": 1}, checkpoint=Checkpoint.from_directory(source))
    stored = tmp_path / "checkpoints" / "checkpoint_000000"
    assert os.path.islink(stored / "latest") and os.readlink(stored / "latest") == "epoch_3"
    for copied in ("latest_absolute", "weights.bin", "shared"):
        assert not os.path.islink(stored / copied)
    assert (stored / "latest_absolute" / "model.pt").read_text() == "m"
    assert (stored / "weights.bin").read_text() == "w"
    assert (stored / "shared" / "weights.bin").read_text() == "w"
    assert not os.path.lexists(stored / "dangling")


def test_a_function_that_takes_a_config_gets_an_empty_one_when_none_was_given():
    assert _worker.call(lambda config: config, None) == {}


def test_should_preempt_is_none_without_a_notice_and_the_deadline_once_the_node_writes_one(tmp_path, monkeypatch):
    context = type(get_context())()  # its own cache of the notice file
    monkeypatch.delenv("CLUSTER_PREEMPTION_FILE", raising=False)
    assert context.should_preempt() is None  # outside clusterd
    notice = tmp_path / "job-0001.attempt-0.preemption"
    monkeypatch.setenv("CLUSTER_PREEMPTION_FILE", str(notice))
    assert context.should_preempt() is None  # no notice yet

    def write(text):  # as the node writes it: whole, renamed into place
        tmp = tmp_path / "notice.tmp"
        tmp.write_text(text)
        os.replace(tmp, notice)

    write("1700000000123 job-0002\n")
    assert context.should_preempt() == pytest.approx(1700000000.123)
    write("1700000060000 job-0003\n")  # the same size, another file
    assert context.should_preempt() == pytest.approx(1700000060.0)

"""What each rank runs (``python -m clusterd._worker``): the shipped function, in its process group.

The function and its config come pickled in the job's config
(``__clusterd__.payload``); a sweep's trial parameters are the config's other
keys, set over the shipped config at the paths ``__clusterd__.param_paths``
names (a parameter's own name by default). For a trainer the process group
is made first, as Ray Train makes it: NCCL on GPUs, else Gloo, bound to the
interface the node names in GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import os
import sys
import traceback
from typing import Any, Dict, List


def load_config() -> Dict[str, Any]:
    path = os.environ.get("CLUSTER_CONFIG_FILE")
    if path:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return json.loads(os.environ.get("CLUSTER_CONFIG") or "{}")


def set_path(tree: Dict[str, Any], path: List[str], value: Any) -> None:
    for key in path[:-1]:
        child = tree.get(key)
        if not isinstance(child, dict):
            child = tree[key] = {}
        tree = child
    tree[path[-1]] = value


def apply_params(base: Any, params: Dict[str, Any], paths: Dict[str, List[str]]) -> Any:
    """The shipped config with each trial parameter set at its path."""
    config = copy.deepcopy(base) if base is not None else {}
    if not params:
        return base
    if not isinstance(config, dict):
        raise TypeError(f"a sweep's parameters go into a dict config, and this one is a {type(config).__name__}")
    for name, value in params.items():
        set_path(config, list(paths.get(name, [name])), value)
    return config


def call(fn, config: Any) -> Any:
    """fn(config) ({} for no config), or fn() for a function that takes nothing, as Ray calls train_loop_per_worker."""
    try:
        takes = len(inspect.signature(fn).parameters) > 0
    except (TypeError, ValueError):
        takes = True
    return fn({} if config is None else config) if takes else fn()


def start_process_group() -> None:
    import torch
    import torch.distributed as dist
    if dist.is_initialized():
        return
    use_gpu = os.environ.get("CLUSTERD_USE_GPU") == "1" and torch.cuda.is_available()
    if use_gpu:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    dist.init_process_group("nccl" if use_gpu else "gloo", init_method="env://")


def stop_process_group() -> None:
    import torch.distributed as dist
    if dist.is_initialized():
        dist.destroy_process_group()


def main() -> int:
    import cloudpickle
    config = load_config()
    meta = config.pop("__clusterd__", None)
    if not isinstance(meta, dict) or "payload" not in meta:
        print("clusterd._worker: this job's config carries no shipped function (__clusterd__.payload)",
              file=sys.stderr)
        return 2
    shipped = cloudpickle.loads(base64.b64decode(meta["payload"]))
    loop_config = apply_params(shipped.get("config"), config, meta.get("param_paths") or {})
    # The checkpoint this rank starts from, before rank 0 of its node writes newer ones beside it.
    from clusterd.train import _session
    _session._session.start()
    distributed = meta.get("kind", "trainer") == "trainer"
    if distributed:
        # A shipped function that names ``train.torch.prepare_model`` finds the submodule imported, as Ray's does.
        import clusterd.train.torch  # noqa: F401
        start_process_group()
    try:
        call(shipped["fn"], loop_config)
    finally:
        if distributed:
            stop_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.exit(1)

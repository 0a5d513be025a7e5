"""Ray Train's checkpoint tutorial ("Saving and Loading Checkpoints"), run on clusterd.

The Ray script with its imports changed: every rank trains a DDP linear model,
rank 0 saves a checkpoint from a temporary folder each epoch, and a restarted
gang resumes from train.get_checkpoint(). Beside the imports, train_func loads
the checkpoint into the bare model before prepare_model (Ray's snippet loads
into model.module after it; both work), saves the optimizer too, and takes
--epoch-seconds, which lengthens each epoch so that a machine can be lost
mid-run; the flags below it only size the run (the tutorial's values are the
defaults). At each epoch's end it also stops when clusterd preempts the gang
(get_context().should_preempt()): the epoch is stored, nothing is lost.

    PYTHONPATH=python /usr/bin/python3 examples/python/ray_train_checkpoints.py --max-failures 1
"""

import argparse
import os
import signal
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

import clusterd
from clusterd import train
from clusterd.train import Checkpoint, ScalingConfig
from clusterd.train.torch import TorchTrainer


def stop_requested(terminated):
    """Whether any rank was told of a preemption (or got SIGTERM): a collective, at each epoch's end."""
    told = torch.tensor([1.0 if train.get_context().should_preempt() is not None or terminated else 0.0])
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.all_reduce(told)
    return told.item() > 0


def train_func(config):
    n = 100
    # create a toy dataset
    # data   : X - dim = (n, 4)
    # target : Y - dim = (n, 1)
    X = torch.Tensor(np.random.normal(0, 1, size=(n, 4)))
    Y = torch.Tensor(np.random.uniform(0, 1, size=(n, 1)))
    # toy neural network : 1-layer
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    criterion = nn.MSELoss()
    start_epoch = 0
    # A preemption's SIGTERM leaves the epoch under way its grace to finish.
    terminated = []
    signal.signal(signal.SIGTERM, lambda *_: terminated.append(True))

    # Load from checkpoint: a restarted gang goes on where the last stored one left off
    checkpoint = train.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as checkpoint_dir:
            model.load_state_dict(torch.load(os.path.join(checkpoint_dir, "model.pt")))
            optimizer.load_state_dict(torch.load(os.path.join(checkpoint_dir, "optimizer.pt")))
            start_epoch = torch.load(os.path.join(checkpoint_dir, "extra_state.pt"))["epoch"] + 1
        print(f"resumed from {os.path.basename(checkpoint.path)} at epoch {start_epoch}", flush=True)

    # Wrap the model in DDP
    model = train.torch.prepare_model(model)

    for epoch in range(start_epoch, config["num_epochs"]):
        y = model.forward(X)
        loss = criterion(y, Y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(config.get("epoch_seconds", 0))

        metrics = {"loss": loss.item(), "epoch": epoch}

        with tempfile.TemporaryDirectory() as temp_checkpoint_dir:
            checkpoint = None

            should_checkpoint = epoch % config.get("checkpoint_freq", 1) == 0
            # In standard DDP training, where the model is the same across all ranks,
            # only the global rank 0 worker needs to save and report the checkpoint
            if train.get_context().get_world_rank() == 0 and should_checkpoint:
                torch.save(
                    model.module.state_dict(),  # NOTE: Unwrap the model.
                    os.path.join(temp_checkpoint_dir, "model.pt"),
                )
                torch.save(optimizer.state_dict(), os.path.join(temp_checkpoint_dir, "optimizer.pt"))
                torch.save({"epoch": epoch}, os.path.join(temp_checkpoint_dir, "extra_state.pt"))
                checkpoint = Checkpoint.from_directory(temp_checkpoint_dir)

            train.report(metrics, checkpoint=checkpoint)

        # Preempted (clusterd: a higher-priority job needs the room): this epoch
        # is stored, so stop here and the next attempt starts after it. Every
        # rank stops at the same epoch, whichever was told first.
        if stop_requested(terminated):
            print(f"stopping after epoch {epoch}, stored: told to make room", flush=True)
            return


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=5)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--max-failures", type=int, default=0)
    parser.add_argument("--epoch-seconds", type=float, default=0.0)
    parser.add_argument("--storage-path", default=None, help="where results land here (default ~/clusterd_results)")
    args = parser.parse_args()

    clusterd.init()
    trainer = TorchTrainer(
        train_func,
        train_loop_config={"num_epochs": args.num_epochs, "epoch_seconds": args.epoch_seconds},
        scaling_config=ScalingConfig(num_workers=args.num_workers),
        run_config=train.RunConfig(
            name="dl_trainer_restore",
            storage_path=args.storage_path,
            failure_config=train.FailureConfig(max_failures=args.max_failures),
        ),
    )
    result = trainer.fit()
    print(f"Result metrics: {result.metrics}")
    print(f"Result checkpoint: {result.checkpoint.path}")

    # The last checkpoint is on this machine now: load it for inference.
    model = nn.Linear(4, 1)
    with result.checkpoint.as_directory() as checkpoint_dir:
        model.load_state_dict(torch.load(os.path.join(checkpoint_dir, "model.pt")))
        epoch = torch.load(os.path.join(checkpoint_dir, "extra_state.pt"))["epoch"]
    print(f"Loaded the model of epoch {epoch}: prediction for ones(4) = {model(torch.ones(1, 4)).item():.4f}")


if __name__ == "__main__":
    main()

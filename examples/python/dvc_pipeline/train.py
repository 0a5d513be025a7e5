"""Stage `train`: the tuned ConvNet trained on two ranks with TorchTrainer; the model and DVCLive metrics.

Reads the hyperparameters the `tune` stage chose (best_params.yaml), trains on
more images and more epochs than a trial did, reporting the test accuracy and a
checkpoint each epoch. Writes the final model to model.pt and the metrics in
DVCLive's layout (dvclive/metrics.json, dvclive/plots/metrics/NAME.tsv), as
`dvclive.Live` would have logged them from the ranks' reports.

    PYTHONPATH=../../../python python3 train.py --num-workers 2 --num-epochs 3
"""

import argparse
import json
import os
import shutil
import tempfile

import torch
import torch.nn.functional as F
import yaml
from torch.utils.data import DataLoader

import clusterd
from clusterd import train
from clusterd.train import Checkpoint, RunConfig, ScalingConfig
from clusterd.train.torch import TorchTrainer, prepare_data_loader, prepare_model

from data import fashion_mnist
from model import ConvNet, test_func


def train_loop_per_worker(config):
    model = prepare_model(ConvNet())
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    train_loader = prepare_data_loader(
        DataLoader(fashion_mnist(train=True, num_images=config["num_images"]), batch_size=64, shuffle=True))
    test_loader = DataLoader(fashion_mnist(train=False, num_images=1024), batch_size=64)

    for epoch in range(config["num_epochs"]):
        model.train()
        total_loss, batches = 0.0, 0
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            batches += 1
        acc = test_func(model, test_loader)

        with tempfile.TemporaryDirectory() as temp_checkpoint_dir:
            checkpoint = None
            if train.get_context().get_world_rank() == 0:
                inner = model.module if hasattr(model, "module") else model
                torch.save(inner.state_dict(), os.path.join(temp_checkpoint_dir, "model.pt"))
                checkpoint = Checkpoint.from_directory(temp_checkpoint_dir)
            train.report({"epoch": epoch, "loss": total_loss / max(batches, 1), "mean_accuracy": acc},
                         checkpoint=checkpoint)


# What Result.metrics_dataframe holds besides the metrics themselves.
BOOKKEEPING = {"epoch", "training_iteration", "timestamp", "checkpoint_dir_name", "attempt", "done"}


def write_dvclive(rows, folder="dvclive"):
    """The reports in DVCLive's layout: one TSV a metric (timestamp in ms, step, value) and the latest values."""
    plots = os.path.join(folder, "plots", "metrics")
    os.makedirs(plots, exist_ok=True)
    names = sorted({name for row in rows for name in row if name not in BOOKKEEPING})
    summary = {}
    for name in names:
        lines = [f"timestamp\tstep\t{name}"]
        for row in rows:
            if row.get(name) is not None:
                lines.append(f"{int(row['timestamp']) * 1000}\t{int(row['epoch'])}\t{row[name]}")
                summary[name] = row[name]
        with open(os.path.join(plots, f"{name}.tsv"), "w") as f:
            f.write("\n".join(lines) + "\n")
    if rows:
        summary["step"] = int(rows[-1]["epoch"])
    with open(os.path.join(folder, "metrics.json"), "w") as f:
        json.dump(summary, f, indent=4)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="best_params.yaml")
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--num-epochs", type=int, default=5)
    parser.add_argument("--num-images", type=int, default=16384, help="training images (of 60000)")
    parser.add_argument("--model", default="model.pt")
    args = parser.parse_args()

    with open(args.params) as f:
        params = yaml.safe_load(f)

    clusterd.init()
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={"lr": params["lr"], "momentum": params["momentum"], "num_epochs": args.num_epochs,
                           "num_images": args.num_images},
        scaling_config=ScalingConfig(num_workers=args.num_workers),
        run_config=RunConfig(name="dvc_pipeline_train"),
    )
    result = trainer.fit()
    print(f"Result metrics: {result.metrics}")

    with result.checkpoint.as_directory() as checkpoint_dir:
        shutil.copyfile(os.path.join(checkpoint_dir, "model.pt"), args.model)
    frame = result.metrics_dataframe
    write_dvclive(frame.to_dict("records") if hasattr(frame, "to_dict") else frame)
    print(f"Wrote {args.model} and dvclive/ (mean_accuracy {result.metrics['mean_accuracy']:.3f})")


if __name__ == "__main__":
    main()

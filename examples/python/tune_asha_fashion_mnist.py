"""Ray Tune's getting-started tutorial (a ConvNet tuned with ASHA), run on clusterd, on Fashion-MNIST.

The Ray script with its imports changed. Two changes more, both forced: the tutorial draws lr with
tune.sample_from(lambda: 10 ** (-10 * np.random.rand())), and the head draws every trial's values
itself, so lr is tune.loguniform over the same range; and the images are Fashion-MNIST from Debian's
dataset-fashion-mnist (nothing can be downloaded), read by fashion_mnist_data.py beside this script
(shipped with it, as the script's folder is each trial's working_dir). Each trial is a job of the head's
sweep: `clusterctl sweep SWEEP` and the dashboard's sweep page show it while it runs. The flags only
size the run (the tutorial's values are the defaults).

    PYTHONPATH=python /usr/bin/python3 examples/python/tune_asha_fashion_mnist.py --num-samples 8
"""

import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torchvision import transforms

import clusterd
from clusterd import tune
from clusterd.train import RunConfig
from clusterd.tune.schedulers import ASHAScheduler

from fashion_mnist_data import fashion_mnist

# Change these values if you want the training to run quicker or slower.
EPOCH_SIZE = 512
TEST_SIZE = 256


class ConvNet(nn.Module):
    def __init__(self):
        super(ConvNet, self).__init__()
        # In this example, we don't change the model architecture
        # due to simplicity.
        self.conv1 = nn.Conv2d(1, 3, kernel_size=3)
        self.fc = nn.Linear(192, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 3))
        x = x.view(-1, 192)
        x = self.fc(x)
        return F.log_softmax(x, dim=1)


def train_func(model, optimizer, train_loader):
    device = torch.device("cpu")
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        # We set this just for the example to run quickly.
        if batch_idx * len(data) > EPOCH_SIZE:
            return
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()


def test_func(model, data_loader):
    device = torch.device("cpu")
    model.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (data, target) in enumerate(data_loader):
            # We set this just for the example to run quickly.
            if batch_idx * len(data) > TEST_SIZE:
                break
            data, target = data.to(device), target.to(device)
            outputs = model(data)
            _, predicted = torch.max(outputs.data, 1)
            total += target.size(0)
            correct += (predicted == target).sum().item()

    return correct / total


def get_data_loaders(root):
    mnist_transforms = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.2860,), (0.3530,))])
    train_loader = torch.utils.data.DataLoader(fashion_mnist(root, train=True, transform=mnist_transforms),
                                               batch_size=64, shuffle=True)
    test_loader = torch.utils.data.DataLoader(fashion_mnist(root, train=False, transform=mnist_transforms),
                                              batch_size=64, shuffle=True)
    return train_loader, test_loader


def train_mnist(config):
    train_loader, test_loader = get_data_loaders(os.path.join(tempfile.gettempdir(), "clusterd-fashion-mnist"))
    model = ConvNet()
    optimizer = optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    for i in range(config["epochs"]):
        train_func(model, optimizer, train_loader)
        acc = test_func(model, test_loader)
        # Send the current training result back to Tune
        tune.report({"mean_accuracy": acc})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-samples", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--max-concurrent", type=int, default=0, help="trials at once (0: as many as fit)")
    parser.add_argument("--storage-path", default=None, help="where results go (default ~/clusterd_results)")
    args = parser.parse_args()

    clusterd.init()
    search_space = {
        "lr": tune.loguniform(1e-10, 1.0),
        "momentum": tune.uniform(0.1, 0.9),
        "epochs": args.epochs,
    }
    tuner = tune.Tuner(
        train_mnist,
        tune_config=tune.TuneConfig(
            num_samples=args.num_samples,
            scheduler=ASHAScheduler(metric="mean_accuracy", mode="max", max_t=args.epochs),
            max_concurrent_trials=args.max_concurrent or None,
        ),
        run_config=RunConfig(name="tune_asha_fashion_mnist", storage_path=args.storage_path),
        param_space=search_space,
    )
    results = tuner.fit()

    best = results.get_best_result()
    print(f"Best config: {best.config}, mean_accuracy {best.metrics['mean_accuracy']:.3f} "
          f"after {best.metrics['training_iteration']} epochs")
    stopped = sum(1 for r in results if r.early_stopped)
    print(f"{len(results)} trials, {stopped} stopped early by ASHA, {results.num_errors} errors; "
          f"best_params.yaml and trials.csv in {results.experiment_path}")


if __name__ == "__main__":
    main()

"""Stage `tune`: Ray Tune's "Getting Started" tutorial (a ConvNet's SGD lr and momentum, with ASHA), on clusterd.

The Ray script with its imports changed; the images are Fashion-MNIST from
Debian's files (data.py) instead of MNIST's download, and the flags size the
sweep (the tutorial's 20 samples and 10 iterations are the defaults). Every trial is one
process of the cluster; the head's ASHA stops the poor ones early. The best
trial's config goes to best_params.yaml, which the `train` stage reads.

    PYTHONPATH=../../../python python3 tune.py --num-samples 8 --max-t 4
"""

import argparse

import yaml
import torch
import torch.optim as optim
from torch.utils.data import DataLoader

import clusterd
from clusterd import tune
from clusterd.tune.schedulers import ASHAScheduler

from data import fashion_mnist
from model import ConvNet, test_func, train_func


def train_mnist(config):
    train_loader = DataLoader(fashion_mnist(train=True, num_images=4096), batch_size=64, shuffle=True)
    test_loader = DataLoader(fashion_mnist(train=False, num_images=1024), batch_size=64, shuffle=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = ConvNet()
    model.to(device)

    optimizer = optim.SGD(
        model.parameters(), lr=config["lr"], momentum=config["momentum"])
    for i in range(10):
        train_func(model, optimizer, train_loader)
        acc = test_func(model, test_loader)

        # Send the current training result back to Tune
        tune.report({"mean_accuracy": acc})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-samples", type=int, default=20)
    parser.add_argument("--max-t", type=int, default=10, help="ASHA's max_t: iterations a trial may run")
    parser.add_argument("--output", default="best_params.yaml")
    args = parser.parse_args()

    clusterd.init()
    search_space = {
        # The tutorial's tune.sample_from(lambda spec: 10 ** (-10 * np.random.rand())) is this distribution;
        # the head draws the values, so a search space names its distribution instead of a function.
        "lr": tune.loguniform(1e-10, 1),
        "momentum": tune.uniform(0.1, 0.9),
    }

    tuner = tune.Tuner(
        train_mnist,
        param_space=search_space,
        tune_config=tune.TuneConfig(
            num_samples=args.num_samples,
            scheduler=ASHAScheduler(metric="mean_accuracy", mode="max", max_t=args.max_t, grace_period=1,
                                    reduction_factor=2),
        ),
    )
    results = tuner.fit()

    best = results.get_best_result()
    print(f"Best config: {best.config}, mean_accuracy {best.metrics['mean_accuracy']:.3f}")
    with open(args.output, "w") as f:
        yaml.safe_dump(best.config, f)


if __name__ == "__main__":
    main()

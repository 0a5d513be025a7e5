"""Ray Train's "Get started with PyTorch" tutorial (ResNet-18 on Fashion-MNIST), run on clusterd.

The Ray script with its imports changed. In train_func, two things differ, both
because nothing can be downloaded here: the images come from fashion_mnist_data
(Debian's dataset-fashion-mnist, unzipped on each rank's node; FakeData where the
package is absent) instead of FashionMNIST(download=True), and the config sizes
the run (the tutorial's own values are the defaults: all 60000 images, 10
epochs, batch 128). Each epoch every rank reports its loss and a checkpoint of
the model; rank 0's is stored. Then the trained model is loaded from
result.checkpoint on this machine and classifies test images.

    PYTHONPATH=python /usr/bin/python3 examples/python/resnet18_fashion_mnist.py --num-images 2048 --num-epochs 2
"""

import argparse
import os
import tempfile

import torch
from torch.nn import CrossEntropyLoss
from torch.optim import Adam
from torch.utils.data import DataLoader
from torchvision.models import resnet18
from torchvision.transforms import Compose, Normalize, ToTensor

import clusterd
import clusterd.train.torch
from fashion_mnist_data import CLASSES, fashion_mnist, is_real


def train_func(config):
    # Model, Loss, Optimizer
    model = resnet18(num_classes=10)
    model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
    # [1] Prepare model.
    model = clusterd.train.torch.prepare_model(model)
    # model.to("cuda")  # This is done by `prepare_model`
    criterion = CrossEntropyLoss()
    optimizer = Adam(model.parameters(), lr=0.001)

    # Data
    transform = Compose([ToTensor(), Normalize((0.28604,), (0.32025,))])
    data_dir = os.path.join(tempfile.gettempdir(), "data")
    train_data = fashion_mnist(root=data_dir, train=True, transform=transform, num_images=config["num_images"])
    train_loader = DataLoader(train_data, batch_size=config["batch_size"], shuffle=True)
    # [2] Prepare dataloader.
    train_loader = clusterd.train.torch.prepare_data_loader(train_loader)

    # Training
    for epoch in range(config["num_epochs"]):
        if clusterd.train.get_context().get_world_size() > 1:
            train_loader.sampler.set_epoch(epoch)

        for images, labels in train_loader:
            # This is done by `prepare_data_loader`!
            # images, labels = images.to("cuda"), labels.to("cuda")
            outputs = model(images)
            loss = criterion(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        # [3] Report metrics and checkpoint.
        metrics = {"loss": loss.item(), "epoch": epoch}
        with tempfile.TemporaryDirectory() as temp_checkpoint_dir:
            torch.save(model.module.state_dict(), os.path.join(temp_checkpoint_dir, "model.pt"))
            clusterd.train.report(
                metrics,
                checkpoint=clusterd.train.Checkpoint.from_directory(temp_checkpoint_dir),
            )
        if clusterd.train.get_context().get_world_rank() == 0:
            print(metrics)


def load_model(checkpoint):
    """[6] The trained model, from the checkpoint fit() brought to this machine."""
    with checkpoint.as_directory() as checkpoint_dir:
        model_state_dict = torch.load(os.path.join(checkpoint_dir, "model.pt"))
        model = resnet18(num_classes=10)
        model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
        model.load_state_dict(model_state_dict)
    return model


def classify(model, num_images):
    """The model's accuracy on the first ``num_images`` test images, and its guess at the first one."""
    transform = Compose([ToTensor(), Normalize((0.28604,), (0.32025,))])
    test_data = fashion_mnist(root=os.path.join(tempfile.gettempdir(), "data"), train=False, transform=transform,
                              num_images=num_images)
    model.eval()
    correct = total = 0
    first = None
    with torch.no_grad():
        for images, labels in DataLoader(test_data, batch_size=256):
            predicted = model(images).argmax(dim=1)
            if first is None:
                first = (CLASSES[predicted[0]], CLASSES[labels[0]])
            correct += (predicted == labels).sum().item()
            total += labels.numel()
    return correct / total, total, first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-workers", type=int, default=2, help="ranks (at least 2: the tutorial unwraps DDP)")
    parser.add_argument("--num-epochs", type=int, default=10)
    parser.add_argument("--num-images", type=int, default=0, help="training images used (0: all 60000)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--use-gpu", action="store_true")
    parser.add_argument("--test-images", type=int, default=1000, help="test images classified on this machine")
    parser.add_argument("--storage-path", default=None, help="where results land here (default ~/clusterd_results)")
    args = parser.parse_args()

    clusterd.init()
    # [4] Configure scaling and resource requirements.
    scaling_config = clusterd.train.ScalingConfig(num_workers=args.num_workers, use_gpu=args.use_gpu)

    # [5] Launch distributed training job.
    trainer = clusterd.train.torch.TorchTrainer(
        train_func,
        train_loop_config={"num_epochs": args.num_epochs, "num_images": args.num_images,
                           "batch_size": args.batch_size},
        scaling_config=scaling_config,
        # Checkpoints are stored by the cluster and the last one comes back to this machine, under storage_path.
        run_config=clusterd.train.RunConfig(name="resnet18_fashion_mnist", storage_path=args.storage_path),
    )
    result = trainer.fit()
    print(f"Result metrics: {result.metrics}")
    print(f"Result checkpoint: {result.checkpoint.path}")

    # [6] Load the trained model, and use it.
    model = load_model(result.checkpoint)
    accuracy, total, (guess, truth) = classify(model, args.test_images)
    images = "Fashion-MNIST" if is_real() else "FakeData"
    print(f"Inference on {total} {images} test images: accuracy {accuracy:.3f}; "
          f"the first is a {truth}, predicted {guess}")


if __name__ == "__main__":
    main()

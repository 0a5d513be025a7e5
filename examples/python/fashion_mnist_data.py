"""Fashion-MNIST for the Python examples, made on the machine that runs them, without a download.

torchvision's FashionMNIST(download=False) reads the unzipped IDX files under
ROOT/FashionMNIST/raw/. Debian's dataset-fashion-mnist package has them gzipped
in /usr/share/datasets/fashion-mnist/ ($FASHION_MNIST_GZ_DIR names another
folder). prepare() unzips them there, once per machine: each file is written
under a temporary name and renamed into place, so ranks that start together on
one node never read a half-written file, and a node's later jobs find them
ready. Where the package is absent, fashion_mnist() gives torchvision's
FakeData instead (random images of the same shape, made on the spot), so the
examples still run, though what they learn is then noise.
"""

from __future__ import annotations

import gzip
import os
import shutil
from typing import Callable, Optional

from torch.utils.data import Dataset, Subset
from torchvision.datasets import FakeData, FashionMNIST

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
CLASSES = FashionMNIST.classes
SIZES = {True: 60000, False: 10000}


def source_dir() -> str:
    return os.environ.get("FASHION_MNIST_GZ_DIR") or DEBIAN_DIR


def prepare(root: str) -> bool:
    """Unzips the Debian files into root/FashionMNIST/raw/; False when they are not on this machine."""
    source = source_dir()
    if not all(os.path.isfile(os.path.join(source, name + ".gz")) for name in FILES):
        return False
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in FILES:
        final = os.path.join(raw, name)
        if os.path.isfile(final):
            continue
        temporary = f"{final}.tmp-{os.getpid()}"
        with gzip.open(os.path.join(source, name + ".gz"), "rb") as src, open(temporary, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(temporary, final)
    return True


def fashion_mnist(root: str, train: bool = True, transform: Optional[Callable] = None,
                  num_images: int = 0) -> Dataset:
    """Fashion-MNIST's training or test images (the first ``num_images`` of them, 0: all).

    The real images when Debian's files are on this machine, else FakeData of the same size and shape.
    """
    if prepare(root):
        dataset: Dataset = FashionMNIST(root=root, train=train, download=False, transform=transform)
    else:
        size = num_images or SIZES[train]
        # A different offset for the test images, so that they are not the training images again.
        dataset = FakeData(size=size, image_size=(1, 28, 28), num_classes=len(CLASSES), transform=transform,
                           random_offset=0 if train else SIZES[True])
    if num_images and num_images < len(dataset):
        dataset = Subset(dataset, range(num_images))
    return dataset


def is_real() -> bool:
    """Whether fashion_mnist() gives the real images on this machine."""
    return all(os.path.isfile(os.path.join(source_dir(), name + ".gz")) for name in FILES)

"""Fashion-MNIST as tensors, read straight from Debian's dataset-fashion-mnist on the machine that runs.

The pipeline's folder is its jobs' working_dir, so it carries its own loader.
Only the first ``num_images`` of a file are read (a few MB of the gzipped
IDX files), so each trial loads its data in a fraction of a second. Where the
package is absent ($FASHION_MNIST_GZ_DIR names another folder), random images
of the same shape stand in, as torchvision's FakeData would: the pipeline
still runs, though what it learns is then noise.
"""

from __future__ import annotations

import gzip
import os
import struct

import torch
from torch.utils.data import TensorDataset

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"
# Ray's Fashion-MNIST tutorial normalises with these.
MEAN, STD = 0.28604, 0.32025


def _files(train: bool):
    prefix = "train" if train else "t10k"
    folder = os.environ.get("FASHION_MNIST_GZ_DIR") or DEBIAN_DIR
    return (os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"),
            os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"))


def is_real(train: bool = True) -> bool:
    return all(os.path.isfile(path) for path in _files(train))


def _read_idx(path: str, count: int) -> torch.Tensor:
    """The first ``count`` items of an IDX file of unsigned bytes, shaped as the file says."""
    with gzip.open(path, "rb") as f:
        zero, kind, dims = struct.unpack(">HBB", f.read(4))
        if zero != 0 or kind != 0x08:
            raise ValueError(f"{path}: not an IDX file of unsigned bytes")
        shape = list(struct.unpack(f">{dims}I", f.read(4 * dims)))
        shape[0] = min(shape[0], count)
        size = 1
        for n in shape:
            size *= n
        data = f.read(size)
    if len(data) != size:
        raise ValueError(f"{path}: ends after {len(data)} of {size} bytes")
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).reshape(shape)


def fashion_mnist(train: bool = True, num_images: int = 60000) -> TensorDataset:
    """(image, label) pairs: images 1x28x28, normalised; labels 0..9."""
    images_path, labels_path = _files(train)
    if is_real(train):
        images = _read_idx(images_path, num_images).unsqueeze(1).float().div(255)
        labels = _read_idx(labels_path, num_images).long()
    else:
        generator = torch.Generator().manual_seed(0 if train else 1)
        images = torch.rand(num_images, 1, 28, 28, generator=generator)
        labels = torch.randint(0, 10, (num_images,), generator=generator)
    return TensorDataset(images.sub(MEAN).div(STD), labels)

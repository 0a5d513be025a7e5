"""PyTorch's DistributedDataParallel on the ResNet-18 of examples/resnet18.h,
timed exactly as examples/resnet_synthetic.cc times ctrain: fixed random batch
per rank, barrier before each step, mean step time of the slowest rank over
the timed steps. Ranks are started by run_bench.sh with RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT set (env:// rendezvous); started without them it
is one process of plain eager PyTorch, no process group and no DDP wrapper.
On --device cuda each step is timed to the end of its GPU work and the ranks
talk through NCCL, as resnet_synthetic does on a CUDA build.

  ddp_bench.py --batch-size 16 --steps 10 --warmup 2 --image-size 64 --threads 1
               [--device cpu|cuda] [--dtype float32|bfloat16] [--no-comm]
"""
import os
import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for width in (64, 128, 256, 512):
            blocks += [BasicBlock(cin, width, 1 if width == 64 else 2), BasicBlock(width, width, 1)]
            cin = width
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 3, 2, 1)
        x = F.adaptive_avg_pool2d(self.layers(x), 1).flatten(1)
        return self.fc(x)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--no-comm", action="store_true")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    distributed = "WORLD_SIZE" in os.environ
    device = torch.device("cpu")
    if a.device == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    torch.manual_seed(1234 + rank)
    dtype = getattr(torch, a.dtype)
    model = ResNet18(a.num_classes).to(device, dtype)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device=device, dtype=dtype)
    y = torch.randint(a.num_classes, (a.batch_size,), device=device)
    timed = 0.0
    for s in range(a.warmup + a.steps):
        if distributed:
            dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        if a.no_comm and distributed:
            with model.no_sync():
                F.cross_entropy(model(x).float(), y).backward()
        else:
            F.cross_entropy(model(x).float(), y).backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if s >= a.warmup:
            timed += time.perf_counter() - t0
    t = torch.tensor([timed], dtype=torch.float64, device=device)
    if distributed:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    step_ms = 1000.0 * t.item() / a.steps
    if rank == 0:
        print(f"RESULT step_ms={step_ms:.3f} samples_per_s={a.batch_size * world / (step_ms / 1000.0):.3f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""PyTorch's own DistributedDataParallel on the model, weights and data of
ddp_check.cc (same formulas), 20 SGD steps. Started by torch.distributed.run;
each rank writes its final parameters to <out>.rank<r>, one per line."""
import math
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

K_IN, K_HIDDEN, K_OUT = 8, 16, 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(K_IN, K_HIDDEN)
        self.l2 = nn.Linear(K_HIDDEN, K_HIDDEN)
        self.l3 = nn.Linear(K_HIDDEN, K_OUT)

    def forward(self, x):
        return self.l3(torch.tanh(self.l2(torch.tanh(self.l1(x)))))


def batch(first, count):
    x = torch.tensor([[math.cos(0.13 * (first + n) + 0.71 * j) for j in range(K_IN)]
                      for n in range(count)], dtype=torch.float64)
    y = torch.tensor([[math.sin(0.05 * (first + n) + 0.9 * c) for c in range(K_OUT)]
                      for n in range(count)], dtype=torch.float64)
    return x, y


def main():
    out, batch_size, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    net = Net().double()
    with torch.no_grad():
        for t, p in enumerate(net.parameters()):
            flat = p.view(-1)
            for i in range(flat.numel()):
                flat[i] = 0.3 * math.sin(0.37 * i + 1.1 * t + 0.2)
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for s in range(steps):
        x, y = batch(s * batch_size * world + rank * batch_size, batch_size)
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    with open(f"{out}.rank{rank}", "w") as f:
        for p in model.parameters():
            for v in p.detach().reshape(-1).tolist():
                f.write("%.17g\n" % v)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

// A Python trainer that checkpoints each epoch and stops on a preemption
// notice, for the preemption tests on one machine (preemption_test.cc) and
// across simulated machines (machines_sharing_test.cc).
#pragma once

namespace clusterd::testing {

// `python3 trainer.py EPOCHS [LOG]`: EPOCHS epochs of 10 steps of 0.1 s,
// with the clusterd package's train API. Resumes from the checkpoint it is
// given (its epoch and step, state.json). After each epoch it reports
// {"epoch_done": E} with a checkpoint of where the next epoch starts. Told
// of a preemption (context.should_preempt()) or sent SIGTERM, it reports
// {"epoch": E, "saved_at_step": S} with a checkpoint of where it is, at
// once, and exits 0. Each line it logs ("attempt A starts at epoch E step
// S", "epoch E done", "attempt A saved on notice at epoch E step S") goes
// to stdout and, when LOG is given, is appended to that file.
inline constexpr const char* kCheckpointingTrainer = R"PY(
import json, os, signal, sys, tempfile, time
from clusterd import train
from clusterd.train import Checkpoint

epochs = int(sys.argv[1])
log_path = sys.argv[2] if len(sys.argv) > 2 else None
terminated = []
signal.signal(signal.SIGTERM, lambda *_: terminated.append(True))
context = train.get_context()
epoch, step = 0, 0
checkpoint = train.get_checkpoint()
if checkpoint:
    with checkpoint.as_directory() as folder:
        with open(os.path.join(folder, "state.json")) as f:
            state = json.load(f)
    epoch, step = state["epoch"], state["step"]

def save(values):
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "state.json"), "w") as f:
            json.dump({"epoch": epoch, "step": step}, f)
        train.report(values, checkpoint=Checkpoint.from_directory(folder))

def log(line):
    print(line, flush=True)
    if log_path:
        with open(log_path, "a") as f:
            f.write(line + "\n")

log(f"attempt {context.get_attempt()} starts at epoch {epoch} step {step}")
while epoch < epochs:
    while step < 10:
        if context.should_preempt() is not None or terminated:
            save({"epoch": epoch, "saved_at_step": step})
            log(f"attempt {context.get_attempt()} saved on notice at epoch {epoch} step {step}")
            sys.exit(0)
        time.sleep(0.1)
        step += 1
    log(f"epoch {epoch} done")
    epoch, step = epoch + 1, 0
    save({"epoch_done": epoch - 1})
)PY";

}  // namespace clusterd::testing

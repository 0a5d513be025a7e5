#include <torch/torch.h>

#include "ctrain/context.h"
#include "ctrain/preemption.h"

namespace ctrain {

bool stop_requested(Context& ctx) {
  // One rank's node may write the notice a moment before another's: the
  // gang stops where any of its ranks was told, all at the same epoch.
  torch::Tensor told = torch::full({1}, preemption() || sigterm_received() ? 1.0 : 0.0, torch::kFloat64);
  ctx.allreduce_sum(told);
  return told.item<double>() > 0;
}

}  // namespace ctrain

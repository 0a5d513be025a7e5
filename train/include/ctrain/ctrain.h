// ctrain: everything a training program needs from clusterd (DESIGN.md,
// "train/ in one picture"):
//
//   auto& ctx = ctrain::init();                    // env -> process group
//   auto model = ctrain::prepare_model(Net());      // broadcast + bucketed allreduce
//   auto loader = ctrain::sharded_loader(dataset, batch);
//   int64_t start = ctrain::resume(model, optimizer);
//   for (int64_t epoch = start; epoch < epochs; ++epoch) {
//     loader->set_epoch(epoch);
//     for (auto& batch : *loader) { ...; loss.backward(); optimizer.step(); }
//     ctrain::report({{"epoch", epoch}, {"loss", loss}},
//                    ctrain::save_checkpoint(model, optimizer, epoch));
//   }
#pragma once

#include "ctrain/checkpoint.h"
#include "ctrain/config.h"
#include "ctrain/context.h"
#include "ctrain/ddp.h"
#include "ctrain/env.h"
#include "ctrain/optim.h"
#include "ctrain/preemption.h"
#include "ctrain/report.h"
#include "ctrain/sampler.h"

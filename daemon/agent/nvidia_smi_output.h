// What nvidia-smi's output says of each GPU: its use (utilization, memory)
// and whether it is fit for work. Pure functions over the text, so that
// every failure kind is tested on output as the real nvidia-smi prints it.
//
// The probe asks, with --format=csv,noheader,nounits:
//   --query-gpu=index,pci.bus_id,utilization.gpu,memory.used,memory.total,
//               ecc.errors.uncorrected.volatile.total,retired_pages.pending
// (an older driver that knows fewer fields: the first five, then the
// first four), and, where the driver has row remapping (A100 and later),
//   --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure
// A GPU is bad when it has uncorrectable ECC errors since the driver loaded
// (Xid 48, 94, 95), a retired page or a remapped row waiting for a GPU
// reset (Xid 63), a remapping that failed (Xid 64), or when it has fallen
// off the bus (Xid 79): nvidia-smi says "Unable to determine the device
// handle for GPU <bus id>: ..." or lists it no more.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd {

// The --query-gpu field lists the probe tries, most first.
const std::vector<std::string>& GpuQueryFieldSets();
const char* RemappedRowsQuery();

struct NvidiaSmiRun {
  std::string output;    // stdout and stderr together
  int exit_code = 0;     // -1: unknown (it was killed, or reaped elsewhere)
};

struct GpuProbeReading {
  // Per GPU listed or named by an error, by index.
  std::map<int, GpuStatus> gpus;
  // Bus id (as nvidia-smi writes it, upper case) -> index, for the GPUs listed.
  std::map<std::string, int> bus_ids;
  // Set when nvidia-smi failed as a whole (no driver, no devices): its words.
  std::string failure;
};

// Reads one --query-gpu run whose fields are `fields` (one of
// GpuQueryFieldSets()). `known_bus_ids` maps bus ids to indexes from earlier
// runs, so that a GPU that fell off the bus is named by its index.
GpuProbeReading ParseGpuQuery(const NvidiaSmiRun& run, const std::vector<std::string>& fields,
                              const std::map<std::string, int>& known_bus_ids);
// Adds the faults of a --query-remapped-rows run to `reading` (ignores a run
// that failed: a driver without row remapping).
void AddRemappedRows(const NvidiaSmiRun& run, GpuProbeReading* reading);
// Whether nvidia-smi refused the query's field names (an older driver).
bool RefusedFields(const NvidiaSmiRun& run);
// GPUs in `expected` that the reading lists no more get the fault "fallen
// off the bus"; the same for every expected GPU when nvidia-smi failed
// as a whole.
void MarkMissing(const std::vector<int>& expected, GpuProbeReading* reading);

}  // namespace clusterd

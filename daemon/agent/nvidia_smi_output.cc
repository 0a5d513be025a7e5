#include "daemon/agent/nvidia_smi_output.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

namespace clusterd {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// A fault's words reach every heartbeat and the node table: kept short.
constexpr size_t kMaxFaultChars = 200;

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    line = Trim(line);
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(Trim(cell));
  return cells;
}

// A number, or false for what nvidia-smi writes when it has none ("[N/A]",
// "[Not Supported]", "[Unknown Error]").
bool Number(const std::string& cell, double* value) {
  if (cell.empty() || cell[0] == '[' || Lower(cell) == "n/a") return false;
  char* end = nullptr;
  *value = std::strtod(cell.c_str(), &end);
  return end != cell.c_str() && Trim(end).empty();
}

bool Index(const std::string& cell, int* index) {
  double value = 0;
  if (!Number(cell, &value) || value < 0 || value != static_cast<int>(value)) return false;
  *index = static_cast<int>(value);
  return true;
}

// A flag as nvidia-smi writes it: "Yes"/"No", and in some fields and
// drivers a count or "True".
bool Yes(const std::string& cell) {
  const std::string lower = Lower(cell);
  double value = 0;
  return lower == "yes" || lower == "true" || (Number(cell, &value) && value > 0);
}

// "00000000:3B:00.0" and "0000:3b:00.0" are the same device: the domain as
// a number, the rest in upper case.
std::string NormalBusId(const std::string& raw) {
  std::string id = Trim(raw);
  size_t colon = id.find(':');
  if (colon == std::string::npos) return "";
  std::string domain = id.substr(0, colon);
  std::string rest = id.substr(colon + 1);
  if (domain.empty() || rest.empty() || domain.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return "";
  }
  for (char& c : rest) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format("{:x}:{}", std::strtoul(domain.c_str(), nullptr, 16), rest);
}

void AddFault(GpuStatus* gpu, const std::string& fault) {
  std::string text = gpu->fault().empty() ? fault : gpu->fault() + "; " + fault;
  if (text.size() > kMaxFaultChars) text = text.substr(0, kMaxFaultChars - 3) + "...";
  gpu->set_fault(text);
}

int FieldAt(const std::vector<std::string>& fields, const std::string& name) {
  auto it = std::find(fields.begin(), fields.end(), name);
  return it == fields.end() ? -1 : static_cast<int>(it - fields.begin());
}

// "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"
// (or "for gpu 0000:3B:00.0: GPU is lost.  Reboot the system ..."): the
// bus id and the words after it; false for any other line.
bool HandleError(const std::string& line, std::string* bus_id, std::string* words) {
  const std::string lead = "unable to determine the device handle for gpu";
  std::string lower = Lower(line);
  size_t at = lower.find(lead);
  if (at == std::string::npos) return false;
  std::string rest = Trim(line.substr(at + lead.size()));
  // The bus id runs to the colon that follows its function number ("00.0").
  size_t dot = rest.find('.');
  size_t end = dot == std::string::npos ? std::string::npos : rest.find(':', dot);
  *bus_id = NormalBusId(rest.substr(0, end));
  *words = end == std::string::npos ? "" : Trim(rest.substr(end + 1));
  return true;
}

}  // namespace

const std::vector<std::string>& GpuQueryFieldSets() {
  static const std::vector<std::string> sets = {
      "index,pci.bus_id,utilization.gpu,memory.used,memory.total,ecc.errors.uncorrected.volatile.total,"
      "retired_pages.pending",
      "index,pci.bus_id,utilization.gpu,memory.used,memory.total",
      "index,utilization.gpu,memory.used,memory.total",
  };
  return sets;
}

const char* RemappedRowsQuery() { return "gpu_bus_id,remapped_rows.pending,remapped_rows.failure"; }

bool RefusedFields(const NvidiaSmiRun& run) {
  std::string lower = Lower(run.output);
  return lower.find("is not a valid field") != std::string::npos ||
         lower.find("invalid combination of input arguments") != std::string::npos;
}

GpuProbeReading ParseGpuQuery(const NvidiaSmiRun& run, const std::vector<std::string>& fields,
                              const std::map<std::string, int>& known_bus_ids) {
  GpuProbeReading reading;
  const int at_bus = FieldAt(fields, "pci.bus_id");
  const int at_util = FieldAt(fields, "utilization.gpu");
  const int at_used = FieldAt(fields, "memory.used");
  const int at_total = FieldAt(fields, "memory.total");
  const int at_ecc = FieldAt(fields, "ecc.errors.uncorrected.volatile.total");
  const int at_pending = FieldAt(fields, "retired_pages.pending");
  std::vector<std::string> other_lines;
  std::vector<std::pair<std::string, std::string>> handle_errors;  // bus id, words
  for (const std::string& line : Lines(run.output)) {
    std::string bus_id, words;
    if (HandleError(line, &bus_id, &words)) {
      handle_errors.emplace_back(bus_id, words);
      continue;
    }
    std::vector<std::string> cells = Cells(line);
    int index = -1;
    if (cells.size() != fields.size() || !Index(cells[0], &index)) {
      other_lines.push_back(line);
      continue;
    }
    GpuStatus& gpu = reading.gpus[index];
    gpu.set_index(index);
    if (at_bus >= 0) {
      std::string id = NormalBusId(cells[at_bus]);
      if (!id.empty()) reading.bus_ids[id] = index;
    }
    double util = 0, used = 0, total = 0;
    if (Number(cells[at_util], &util) && Number(cells[at_used], &used) && Number(cells[at_total], &total)) {
      gpu.set_usage_known(true);
      gpu.set_utilization(std::clamp(util / 100.0, 0.0, 1.0));
      gpu.set_memory_used_bytes(used * kMiB);
      gpu.set_memory_total_bytes(total * kMiB);
    }
    for (const std::string& cell : cells) {
      if (Lower(cell).find("gpu is lost") != std::string::npos) {
        AddFault(&gpu, "fallen off the bus (nvidia-smi: GPU is lost)");
        break;
      }
    }
    double ecc = 0;
    if (at_ecc >= 0 && Number(cells[at_ecc], &ecc) && ecc > 0) {
      AddFault(&gpu, fmt::format("{} uncorrectable ECC error{} since the driver loaded", static_cast<long>(ecc),
                                 ecc == 1 ? "" : "s"));
    }
    if (at_pending >= 0 && Yes(cells[at_pending])) {
      AddFault(&gpu, "a retired page is pending: the GPU needs a reset");
    }
  }
  for (const auto& [bus_id, words] : handle_errors) {
    int index = -1;
    if (auto now = reading.bus_ids.find(bus_id); now != reading.bus_ids.end()) index = now->second;
    if (auto before = known_bus_ids.find(bus_id); index < 0 && before != known_bus_ids.end()) index = before->second;
    const std::string what = words.empty() ? "no device handle" : words;
    if (index < 0) {
      // Never listed: MarkMissing names it by index if it was expected.
      std::string note = fmt::format("GPU {}: {}", bus_id.empty() ? "?" : bus_id, what);
      reading.failure = reading.failure.empty() ? note : reading.failure + "; " + note;
      if (reading.failure.size() > kMaxFaultChars) reading.failure.resize(kMaxFaultChars);
      continue;
    }
    GpuStatus& gpu = reading.gpus[index];
    gpu.set_index(index);
    AddFault(&gpu, fmt::format("fallen off the bus (nvidia-smi: {})", what));
  }
  // No GPU line at all: nvidia-smi failed as a whole ("NVIDIA-SMI has failed
  // because it couldn't communicate with the NVIDIA driver", "No devices
  // were found"): its first line says why.
  if (reading.gpus.empty() && handle_errors.empty() && reading.failure.empty()) {
    reading.failure = other_lines.empty() ? fmt::format("nvidia-smi printed nothing (exit code {})", run.exit_code)
                                          : other_lines.front();
    if (reading.failure.size() > kMaxFaultChars) reading.failure.resize(kMaxFaultChars);
  }
  return reading;
}

void AddRemappedRows(const NvidiaSmiRun& run, GpuProbeReading* reading) {
  if (run.exit_code > 0) return;
  for (const std::string& line : Lines(run.output)) {
    std::vector<std::string> cells = Cells(line);
    if (cells.size() != 3) continue;
    auto known = reading->bus_ids.find(NormalBusId(cells[0]));
    if (known == reading->bus_ids.end()) continue;
    GpuStatus& gpu = reading->gpus[known->second];
    if (Yes(cells[1])) AddFault(&gpu, "a row remapping is pending: the GPU needs a reset");
    if (Yes(cells[2])) AddFault(&gpu, "a row remapping failed");
  }
}

void MarkMissing(const std::vector<int>& expected, GpuProbeReading* reading) {
  for (int index : expected) {
    auto listed = reading->gpus.find(index);
    if (listed != reading->gpus.end()) continue;
    GpuStatus& gpu = reading->gpus[index];
    gpu.set_index(index);
    AddFault(&gpu, reading->failure.empty()
                       ? std::string("fallen off the bus: nvidia-smi lists it no more")
                       : fmt::format("fallen off the bus: nvidia-smi lists it no more ({})", reading->failure));
  }
}

}  // namespace clusterd
